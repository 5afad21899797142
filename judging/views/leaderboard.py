"""Leaderboard page, its PNG plots and its CSV/JSON downloads (analysts only).

One source at a time (``?judge=``): its pairwise board (Bradley-Terry) and, when it grades, its
score board (mean grade per model), each on its own scale. Trial batches' votes count only with
``?include_trial=1`` (the analyst's "Include trial batches"). ``?aggregation=`` (majority or a
reliability model) and ``?both_bad=`` (tie or exclude) say how the pairwise board counts its
votes (``judging.vote_aggregation``). Every part, the PNG bytes too, comes
from ``judging.rating_cache``: the page, its plots and downloads share one computation.
"""

from django.core.exceptions import BadRequest
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.http import content_disposition_header

from annotation.core.http import request_text
from annotation.core.permissions import analyst_required
from annotation.models import InstructionFamily

from .. import board_refresh, rating_cache, thin_data
from ..leaderboards import leaderboard_csv, score_leaderboard_csv
from ..models import Judgment
from ..selectors import BASE_SPLITS, HUMAN, UnknownSplit, submitted_model_names
from ..vote_aggregation import (
    BOTH_BAD,
    UnknownChoice,
    aggregations,
    check_aggregation,
    check_both_bad,
)
from . import plots

ROUNDS = rating_cache.PAGE_ROUNDS
JUDGE_LENGTH = Judgment._meta.get_field("source").max_length
SPLIT_LENGTH = len("category:") + InstructionFamily._meta.get_field("name").max_length


def _params(request, *, counting: bool = True) -> dict:
    """A NUL or an over-long judge or split is a 400 (it would reach a query, a file name
    and a plot title), and so is an unknown ``aggregation`` or ``both_bad`` (how a pairwise
    board counts its votes: ``judging.vote_aggregation``; not asked of score boards)."""
    params = {"judge": request_text(request.GET, "judge", max_length=JUDGE_LENGTH) or HUMAN,
              "split": request_text(request.GET, "split", max_length=SPLIT_LENGTH) or "all",
              "exclude_blocked": request.GET.get("exclude_blocked") == "1",
              "include_trial": request.GET.get("include_trial") == "1"}
    if counting:
        try:
            params["aggregation"] = check_aggregation(request.GET.get("aggregation"))
            params["both_bad"] = check_both_bad(request.GET.get("both_bad"))
        except UnknownChoice as exc:
            raise BadRequest(str(exc)) from exc
    return params


def _board(request, build=rating_cache.leaderboard, counting: bool = True):
    try:
        return build(**_params(request, counting=counting), bootstrap_rounds=ROUNDS)
    except UnknownSplit as exc:
        raise Http404(str(exc)) from exc


@analyst_required
@board_refresh.tells_freshness
def leaderboard_page(request):
    params = _params(request)
    try:
        shown = rating_cache.leaderboard_page(**params)
    except UnknownSplit as exc:
        raise Http404(str(exc)) from exc
    context = {"board": shown["board"], "scores": shown["scores"], "params": params,
               "aggregations": aggregations(), "both_bad_choices": BOTH_BAD,
               "judges": rating_cache.leaderboard_sources() or [HUMAN],
               "splits": BASE_SPLITS + [f"category:{c}" for c in shown["categories"]],
               "query": request.GET.urlencode(), "sampling": shown["sampling"],
               "submitted": submitted_model_names(), "clip_note": thin_data.CLIP_NOTE,
               "provisional_note": thin_data.provisional_note(shown["board"].min_matches),
               "freshness": board_refresh.current()}
    return render(request, "judging/leaderboard.html", context)


def _download(board, fmt: str, name: str, to_csv) -> HttpResponse:
    name = f"{name}-{board.judge}-{board.split}".replace(":", "-").replace("/", "-")
    if fmt == "json":  # full precision: rounding is for people (the page, the CSV)
        response = JsonResponse(board.as_dict(), json_dumps_params={"indent": 1})
    else:
        response = HttpResponse(to_csv(board), content_type="text/csv; charset=utf-8")
    # judge and split come from the query string: quoted or percent-encoded, never raw
    response["Content-Disposition"] = content_disposition_header(True, f"{name}.{fmt}")
    return response


@analyst_required
@board_refresh.tells_freshness
def leaderboard_download(request, fmt):
    if fmt not in ("csv", "json"):
        raise Http404("Download as .csv or .json")
    return _download(_board(request), fmt, "leaderboard", leaderboard_csv)


@analyst_required
@board_refresh.tells_freshness
def score_leaderboard_download(request, fmt):
    if fmt not in ("csv", "json"):
        raise Http404("Download as .csv or .json")
    return _download(_board(request, build=rating_cache.score_leaderboard, counting=False),
                     fmt, "scores", score_leaderboard_csv)


@analyst_required
@board_refresh.tells_freshness
def ratings_plot(request):
    """Drawn once per board: keyed on the board's stamp, so a new judgment redraws it."""
    params = _params(request)
    png = rating_cache.get_or_compute(
        "ratings.png", lambda: plots.ratings_png(_board(request)), source=params["judge"],
        params={"split": params["split"], "rounds": ROUNDS, **_counting(params)},
        exclude_blocked=params["exclude_blocked"], include_trial=params["include_trial"])
    return HttpResponse(png, content_type="image/png")


def _counting(params: dict) -> dict:
    return {"aggregation": params["aggregation"], "both_bad": params["both_bad"]}


@analyst_required
@board_refresh.tells_freshness
def category_plot(request):
    params = _params(request)
    judge = params["judge"]
    votes = {"exclude_blocked": params["exclude_blocked"],
             "include_trial": params["include_trial"]}
    png = rating_cache.get_or_compute(
        "categories.png",
        lambda: plots.category_png(rating_cache.category_rates(judge, **votes,
                                                               **_counting(params)), judge),
        source=judge, params=_counting(params), **votes)
    return HttpResponse(png, content_type="image/png")
