"""Board caches are per study: a vote in study B leaves study A's cached board alone (served
without a computation), a vote in A makes A's next view recompute, and a score in B leaves A's
score board alone too. Real requests to the public boards, a real cache."""
from unittest import mock

import pytest
from django.test import Client

from judging import leaderboards, rating_cache, ratings
from judging.models import EvalModel, Judgment
from judging.services.judgments.record import judgment_record
from studies.models import Study
from tests.studies import builders

pytestmark = pytest.mark.django_db


def _two_studies():
    made = {}
    for slug in ("study-a", "study-b"):
        study = builders.study(slug, public=True)
        ms = builders.models(study, "llava", "blip", reference="ref")
        made[slug] = builders.voted(study, [(ms["llava"], ms["ref"], "AAB"),
                                            (ms["blip"], ms["ref"], "BBA"),
                                            (ms["llava"], ms["blip"], "AB")])
    return made


def _bradley_terry_runs():
    """Counts board computations (each pairwise board's one ``ratings.leaderboard`` call)."""
    return mock.patch.object(ratings, "leaderboard", wraps=ratings.leaderboard)


def _vote(comparison, choice="A", **fields):
    return judgment_record(source=Judgment.HUMAN, annotator="late", comparison=comparison,
                           choice=choice, **fields)


def _board(slug):
    response = Client().get(f"/s/{slug}/board/")
    assert response.status_code == 200
    return response


def test_a_vote_in_another_study_leaves_the_board_cached_and_one_here_recomputes():
    comparisons = _two_studies()
    with _bradley_terry_runs() as bt_calls:
        _views_and_votes(comparisons, bt_calls)


def _views_and_votes(comparisons, bt_calls):
    first = _board("study-a")
    computed = bt_calls.call_count
    assert computed >= 1
    _vote(comparisons["study-b"][0])
    _vote(comparisons["study-b"][1], "B")
    again = _board("study-a")
    assert bt_calls.call_count == computed  # served from the cache
    assert again.content == first.content
    _board("study-b")
    assert bt_calls.call_count == 2 * computed  # B's own board saw its votes
    _vote(comparisons["study-a"][2])
    _board("study-a")
    assert bt_calls.call_count == 3 * computed  # a vote in A recomputes A
    _board("study-a")
    assert bt_calls.call_count == 3 * computed


def test_after_other_studies_votes_the_cached_board_reads_one_stamp_again():
    comparisons = _two_studies()
    _board("study-a")
    _vote(comparisons["study-b"][0])
    _board("study-a")  # checks B's new vote once and remembers the newer stamp
    with mock.patch("judging.rating_cache._count_after") as checked:
        _board("study-a")
    assert checked.call_count == 0


def test_a_score_in_another_study_leaves_the_score_board_cached():
    _two_studies()
    a, b = (Study.objects.get(slug=slug) for slug in ("study-a", "study-b"))
    builders.grades(a, EvalModel.objects.get(study=a, name="llava"), [4, 5])
    with mock.patch.object(leaderboards, "score_leaderboard_build",
                           wraps=leaderboards.score_leaderboard_build) as built:
        _board("study-a")
        assert built.call_count == 1
        builders.grades(b, EvalModel.objects.get(study=b, name="blip"), [2, 3])
        _board("study-a")
        assert built.call_count == 1
        builders.grades(a, EvalModel.objects.get(study=a, name="blip"), [1])
        assert b"blip" in _board("study-a").content
        assert built.call_count == 2


def test_a_bulk_arrival_elsewhere_recomputes_rather_than_sorting_it_out(monkeypatch):
    comparisons = _two_studies()
    monkeypatch.setattr(rating_cache, "NEWER_CHECKED", 1)
    with _bradley_terry_runs() as bt_calls:
        _board("study-a")
        computed = bt_calls.call_count
        _vote(comparisons["study-b"][0])
        _board("study-a")
        assert bt_calls.call_count == computed  # one new vote: checked, still cached
        _vote(comparisons["study-b"][0])
        _vote(comparisons["study-b"][1])
        _board("study-a")
        assert bt_calls.call_count == 2 * computed
