"""A study's read-only leaderboard, ``/s/<slug>/board/``: anyone may read a public study's,
members a private one's (others get a 404). Pairwise ratings and mean scores with their 95 %
CIs, provisional models marked, the signed-in submitter's own models' rows and ranks first,
and the win rate against the reference per category; from
``judging.rating_cache`` like the analysts' boards (each entry keyed by the study too)."""
from django.core.exceptions import BadRequest
from django.http import Http404
from django.shortcuts import render

from studies.access import VIEW_BOARD, study_page
from studies.selectors import studies_visible_to

from .. import board_refresh, rating_cache, thin_data
from ..selectors import HUMAN, UnknownSplit, submitted_model_names
from ..submissions.selectors import my_model_names, my_rows
from .leaderboard import ROUNDS, _params


@study_page(VIEW_BOARD)
@board_refresh.tells_freshness
def study_board(request, study):
    # Imported here: they load SciPy, which a web worker must not pay for at boot
    # (tests/test_gunicorn_config.py); the board's other parts never need it.
    from ..powered_boards import UnknownJudge, judge_powered_board
    from ..style_board import UnknownStyle, cached_style_board, check_style

    params = _params(request)
    params["study"] = study
    try:  # before any work: an unknown ``?style=`` is a 400
        style = check_style(request.GET.get("style"))
    except UnknownStyle as exc:
        raise BadRequest(str(exc)) from exc
    try:
        shown = rating_cache.leaderboard_page(**params)
    except UnknownSplit as exc:
        raise Http404(str(exc)) from exc
    judge, votes = params["judge"], {k: params[k] for k in ("exclude_blocked", "include_trial")}
    mine = my_model_names(request.user, study)
    categories = rating_cache.category_rates(judge, study=study, **votes)
    powered, powered_error = None, None
    if request.GET.get("ppi"):  # judge-powered estimates beside the human board
        try:
            powered = judge_powered_board(study, request.GET["ppi"])
        except UnknownJudge as exc:
            powered_error = str(exc)
    styled = style and cached_style_board(study, judge, style, **votes)
    return render(request, "judging/study_board.html", {
        "style": style, "styled": styled,
        "powered": powered, "powered_error": powered_error,
        "ppi_judges": [j for j in rating_cache.leaderboard_sources(study) or [] if j != HUMAN],
        "study": study, "study_switcher": studies_visible_to(request.user),
        "board": shown["board"], "scores": shown["scores"], "params": params,
        "judges": rating_cache.leaderboard_sources(study) or [HUMAN],
        "splits": ["all"] + [f"category:{c}" for c in shown["categories"]],
        "categories": _category_rows(categories), "rounds": ROUNDS,
        "submitted": submitted_model_names(study), "clip_note": thin_data.CLIP_NOTE,
        # A submitter finds their own models' rows and ranks first (and marked in the table).
        "mine": mine, "my_rows": my_rows(shown["board"].rows, mine),
        "provisional_note": thin_data.provisional_note(shown["board"].min_matches),
        "freshness": board_refresh.current()})


def _category_rows(rates: dict) -> list[tuple[str, list[tuple[str, float | None, int]]]]:
    """{category: {model: (rate, n)}} as rows a template can loop over, best first."""
    return [(category, sorted(((m, r, n) for m, (r, n) in models.items()),
                              key=lambda x: (x[1] is None, -(x[1] or 0), x[0])))
            for category, models in rates.items()]
