"""Analyst pages of the disagreement review: the disputed items (filters, pages), one item with
every vote and ruling, and its two actions (rule on it, send it out for more votes). Views
parse, authorize, call one service or selector, render; the reads are ``judging.review``."""
import re
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.core.exceptions import BadRequest, ValidationError
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation.core.http import request_text
from annotation.core.permissions import analyst_required
from annotation.engine.services.more_votes import MAX_EXTRA
from judging import review
from judging.models import Comparison, Judgment
from judging.services.adjudication import NOTE_LIMIT, item_adjudicate, item_request_votes
from studies.access import ANALYZE, study_or_default
from studies.links import study_reverse

PER_PAGE = 50
# Each page serves the default study at /review/ (analysts) and any study under
# /s/<slug>/review/ (its analysts); an item of another study is a 404.
study_analyst = study_or_default(ANALYZE, analyst_required)
JUDGE_LENGTH = Judgment._meta.get_field("source").max_length
PAIR = re.compile(r"\d{1,18}-\d{1,18}")


def _choice(params, name: str, allowed: tuple, default: str) -> str:
    value = request_text(params, name, max_length=20) or default
    if value not in allowed:
        raise BadRequest(f"{name}: one of {', '.join(allowed)}")
    return value


def _filters(request) -> dict:
    """The listing's filters from the query; a value it cannot mean is a 400."""
    pair = request_text(request.GET, "pair", max_length=40)
    if pair and not PAIR.fullmatch(pair):
        raise BadRequest("pair: two model ids, like 3-7")
    return {"kind": _choice(request.GET, "kind", review.KINDS, review.ANY),
            "state": _choice(request.GET, "state", review.STATES, review.OPEN),
            "judge": request_text(request.GET, "judge", max_length=JUDGE_LENGTH), "pair": pair}


@study_analyst
def review_list(request, study):
    filters = _filters(request)
    listing = review.review_listing(**filters, study=study)
    page = Paginator(listing.rows, PER_PAGE).get_page(request.GET.get("page"))
    review.load_comparisons(page.object_list)
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "agreement/review/list.html", {
        "page": page, "filters": filters, "listing": listing, "query": query.urlencode(),
        "kinds": review.KINDS, "states": review.STATES})


def _item_url(request, comparison_uuid, turn: str) -> str:
    item = study_reverse(request, "review:item", comparison_uuid)
    return f"{item}?{urlencode({'turn': turn})}"


class AdjudicationForm(forms.Form):
    turn = forms.ChoiceField(choices=[(t, t) for t in review.TURNS], required=False)
    choice = forms.ChoiceField(choices=[("A", "Response A"), ("B", "Response B"),
                                        ("tie", "Tie"), ("bad", "Both bad")])
    note = forms.CharField(required=False, max_length=NOTE_LIMIT, widget=forms.Textarea)


class MoreVotesForm(forms.Form):
    turn = forms.ChoiceField(choices=[(t, t) for t in review.TURNS], required=False)
    extra = forms.IntegerField(min_value=1, max_value=MAX_EXTRA, initial=2)


@study_analyst
def review_item(request, study, comparison_uuid):
    comparison = get_object_or_404(
        Comparison.objects.select_related("instance", "response_a__model", "response_b__model"),
        uuid=comparison_uuid, instance__study=study)
    turn = request_text(request.GET, "turn", max_length=10)
    if turn not in review.TURNS:
        raise BadRequest(f"turn: one of {', '.join(repr(t) for t in review.TURNS)}")
    item = review.review_item(comparison, turn)
    return render(request, "agreement/review/item.html", {
        **item, "form": AdjudicationForm(initial={"turn": turn}),
        "votes_form": MoreVotesForm(initial={"turn": turn}), "max_extra": MAX_EXTRA})


def _item_post(request, study, comparison_uuid, form_class, refused: str, act):
    """An item page's POST: the form checked, then ``act(comparison, cleaned_data)`` (which
    returns the success message); a bad form or a refusal is an error message starting with
    ``refused``. Back to the item at the turn the form came from either way."""
    comparison = get_object_or_404(Comparison, uuid=comparison_uuid,
                                   instance__study=study)
    form = form_class(request.POST)
    turn = form.data.get("turn", "") if form.data.get("turn", "") in review.TURNS else ""
    if not form.is_valid():
        messages.error(request, f"{refused}: {form.errors.as_text()}")
        return redirect(_item_url(request, comparison.uuid, turn))
    try:
        done = act(comparison, form.cleaned_data)
    except ValidationError as exc:
        messages.error(request, f"{refused}: {' '.join(exc.messages)}")
    else:
        messages.success(request, done)
    return redirect(_item_url(request, comparison.uuid, turn))


@study_analyst
@require_POST
def review_adjudicate(request, study, comparison_uuid):
    def adjudicate(comparison, d):
        item_adjudicate(comparison=comparison, turn=d["turn"], choice=d["choice"],
                        analyst=request.user.get_username(), note=d["note"])
        return f"Adjudicated: {d['choice']}."

    return _item_post(request, study, comparison_uuid, AdjudicationForm, "Not adjudicated",
                      adjudicate)


@study_analyst
@require_POST
def review_more_votes(request, study, comparison_uuid):
    def request_votes(comparison, d):
        task = item_request_votes(comparison=comparison, extra=d["extra"])
        return (f"Task {task.position} of “{task.batch.title}” now takes "
                f"{task.max_assignments} votes; the batch is {task.batch.status}.")

    return _item_post(request, study, comparison_uuid, MoreVotesForm, "No votes requested",
                      request_votes)
