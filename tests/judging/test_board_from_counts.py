"""A pairwise board (every vote a match) from the database's counts and online Elo kept as
state equals, to the bit, the board rated from every row read in order (what
``leaderboard_build`` computed before ``judging.elo_state``), on data with ties, "both bad"
votes, verdicts sharing a timestamp, a withdrawn model, a blocked worker, a trial batch, a
judge's superseded generation, two categories, turn verdicts and a second study. Elo state
continues over appended votes only: any other change recomputes it from every row.
"""
import warnings
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import TestCase

from annotation.providers.services.review import assignment_reject
from judging import board_versions, elo_state, folded_counts, rating_cache, ratings
from judging.leaderboards import leaderboard_build, pairwise_board_inputs
from judging.models import Comparison, Judgment
from judging.selectors import pairwise_judgments_encoded, pairwise_judgments_qs
from judging.submissions.models import Submission
from judging.submissions.services import submission_withdraw
from tests.factories import make_workers
from tests.judging import builders
from tests.studies import builders as study_builders

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ROUNDS = 40


def _vote(comparison, choice, seconds, **fields):
    fields.setdefault("annotator", f"w{seconds}")
    return Judgment.objects.create(comparison=comparison, choice=choice,
                                   created_at=T0 + timedelta(seconds=seconds), **fields)


def _comparison(a, b, category="Chart reading"):
    inst = builders.instance(category=category)
    return Comparison.objects.create(instance=inst, response_a=builders.respond(inst, a),
                                     response_b=builders.respond(inst, b))


@pytest.fixture
def data():
    ms = builders.models("llava", "blip", "qwen", "gone", reference="ref")
    blocked = make_workers(1)[0]
    blocked.blocked = True
    blocked.save()
    plan = [("llava", "blip", "ABtAbAB", "Chart reading"), ("blip", "llava", "Bttb", "Maps"),
            ("qwen", "ref", "AAbBA", "Maps"), ("ref", "llava", "BBABt", "Chart reading"),
            ("qwen", "blip", "tAAB", "Chart reading"), ("gone", "qwen", "AB", "Maps")]
    comparisons = []
    for n, (a, b, votes, category) in enumerate(plan):
        comparison = _comparison(ms[a], ms[b], category)
        comparisons.append(comparison)
        for k, v in enumerate(votes):
            choice = {"t": "tie", "b": "bad"}.get(v, v)
            _vote(comparison, choice, 10 * k + n % 2)  # timestamps shared across items
            if k % 3 == 0:
                _vote(comparison, "A", 10 * k + 5, worker=blocked)
            _vote(comparison, choice, 10 * k + 7, turn="1", source="human")
    for k, c in enumerate(comparisons[:4]):  # a judge, its first verdict superseded
        _vote(c, "AB"[k % 2], k, source="judge-x", annotator="judge-x@1", template_version="v1")
    _vote(comparisons[0], "B", 3600, source="judge-x", annotator="judge-x@2",
          template_version="v1")
    builders.crowd_batch([(comparisons[0], "AAB"), (comparisons[2], "BBA")], make_workers(3),
                         trial=True)
    Submission.objects.create(model=ms["gone"], status="withdrawn", name="gone", version=1,
                              submitter=get_user_model().objects.create_user("submitter"))
    other = study_builders.study("other")
    oms = study_builders.models(other, "llava", "blip", reference="ref")
    study_builders.voted(other, [(oms["llava"], oms["blip"], "ABBA"),
                                 (oms["ref"], oms["blip"], ["A", "tie", "B"])])
    return {"comparisons": comparisons, "blocked": blocked, "models": ms, "other": other}


def _from_every_row(**counting):
    """The board's numbers rated from every row in (created_at, pk) order."""
    judgments = pairwise_judgments_encoded(**counting)
    reference = "ref" if "ref" in judgments.models else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ratings.RatingsWarning)
        table = ratings.leaderboard(judgments, reference=reference, bootstrap_rounds=ROUNDS)
    rows = {r.model: (r.bt_rating, r.ci_low, r.ci_high, r.elo, r.matches,
                      r.win_rate_vs_reference, r.n_vs_reference) for r in table}
    return len(judgments), rows, sorted({str(w.message) for w in caught})


def _assert_board_equals_every_row(**counting):
    board = leaderboard_build(bootstrap_rounds=ROUNDS, **counting)
    n, expected, expected_warnings = _from_every_row(**counting)
    got = {r["model"]: (r["rating"], r["ci_low"], r["ci_high"], r["elo"], r["matches"],
                        r["win_rate_vs_reference"], r["n_vs_reference"]) for r in board.rows}
    assert board.judgments == n
    assert got == expected  # floats compared exactly
    assert board.warnings == expected_warnings
    return board


COUNTINGS = [{}, {"both_bad": "exclude"}, {"exclude_blocked": True}, {"include_trial": True},
             {"split": "category:Maps"}, {"split": "turn:1"}, {"judge": "judge-x"},
             {"include_trial": True, "exclude_blocked": True, "both_bad": "exclude"}]


@pytest.mark.parametrize("counting", COUNTINGS)
def test_board_from_counts_equals_the_board_from_every_row(data, counting):
    board = _assert_board_equals_every_row(**counting)
    assert board.rows and "gone" not in {r["model"] for r in board.rows}


def test_another_studys_board_from_counts_equals_its_board_from_every_row(data):
    board = _assert_board_equals_every_row(study=data["other"])
    assert board.judgments == 7 and {r["model"] for r in board.rows} == {"llava", "blip", "ref"}


def test_every_counting_rates_other_votes(data):
    """The filters matter here: each counting rates another number of votes than the default."""
    default, *others = (leaderboard_build(bootstrap_rounds=0, **c).judgments for c in COUNTINGS)
    assert default not in others


def _inputs(**counting):
    return pairwise_board_inputs(**counting)


def _just_now(seconds: float = 0) -> float:
    """``_vote``'s offset of a vote cast now (plus ``seconds``): after the state's time."""
    return (datetime.now(UTC) - T0).total_seconds() + seconds


def _continues() -> bool:
    return connection.vendor == "postgresql"  # the state is kept on PostgreSQL only


def test_appended_votes_continue_the_elo_state(data):
    first = _inputs()
    assert not first.continued
    comparisons = data["comparisons"]
    start = _just_now()
    for k in range(5):
        _vote(comparisons[k % 4], "AB"[k % 2], start + k)
    _vote(comparisons[1], "tie", start + 4)  # same timestamp as the last: pk orders them
    second = _inputs()
    assert second.continued is _continues()
    assert second.elo != first.elo
    assert _inputs().continued is _continues()  # nothing new: the state as it is
    board = _assert_board_equals_every_row()
    _assert_board_equals_every_row(both_bad="exclude")  # its own state, built now
    from django.core.cache import cache

    cache.clear()
    assert leaderboard_build(bootstrap_rounds=ROUNDS).as_dict() == board.as_dict()


def _reject(data):
    """Reject, through the review service, an assignment whose votes the state has folded."""
    batch = builders.crowd_batch([(data["comparisons"][1], "AB")], make_workers(2))
    Judgment.objects.filter(assignment__batch=batch).update(created_at=T0)  # folded at once
    rating_cache.source_changed("human")  # (the back-dating itself is not what is tested)
    _inputs()
    assignment = batch.tasks.get().assignments.order_by("pk").first()
    with TestCase.captureOnCommitCallbacks(execute=True):  # the cache hears at the commit
        assert assignment_reject(assignment, reason="Clicked without looking")


def _delete(data):
    Judgment.objects.filter(source="human", turn="").order_by("pk").first().delete()


def _edit(data):
    vote = Judgment.objects.filter(source="human", turn="", choice="A").order_by("pk").first()
    vote.choice = "B"
    vote.save()


def _back_date(data):
    _vote(data["comparisons"][0], "B", 2)  # newer pk, earlier than the state's last vote


def _swap(data):
    """Two votes of one cell trade places with votes of another: counts stay, order changes."""
    votes = Judgment.objects.filter(source="human", turn="", assignment__isnull=True,
                                    comparison__in=data["comparisons"])
    a = votes.filter(choice="A").order_by("pk").first()
    b = votes.filter(choice="B").order_by("-pk").first()
    Judgment.objects.filter(pk=a.pk).update(created_at=b.created_at)
    Judgment.objects.filter(pk=b.pk).update(created_at=a.created_at)


def _withdraw(data):
    submission = Submission.objects.create(
        model=data["models"]["qwen"], status="approved", name="qwen", version=1,
        submitter=get_user_model().objects.create_user("s2"))
    submission_withdraw(submission, reason="Broken outputs")


def _unblock(data):
    data["blocked"].blocked = False
    data["blocked"].save()


@pytest.mark.parametrize("change", [_reject, _delete, _back_date, _withdraw, _unblock])
def test_any_change_but_an_append_recomputes_elo_from_every_row(data, change):
    """Each write path that changes which votes count: the state no longer holds (the source's
    count up to it moved, or its token or versions changed) and is rebuilt."""
    counting = {"exclude_blocked": True} if change is _unblock else {}
    _inputs(**counting)
    _vote(data["comparisons"][3], "A", _just_now())  # appended as well: still not continued
    change(data)
    assert not _inputs(**counting).continued
    _assert_board_equals_every_row(**counting)


@pytest.mark.parametrize("change", [_edit, _swap])
def test_a_change_no_write_path_announces_shows_at_the_next_rebuild(data, change, monkeypatch):
    """A vote edited or re-dated in place by hand (no screen or service does either) leaves the
    source's count alone: the state is folded on until it is rebuilt (``VERIFY_SECONDS``)."""
    _inputs()
    change(data)
    assert _inputs().continued is _continues()
    monkeypatch.setattr(folded_counts, "VERIFY_SECONDS", 0)
    assert not _inputs().continued
    _assert_board_equals_every_row()


def test_votes_still_settling_are_read_each_time_then_folded(data, monkeypatch):
    """Votes of the last ``SETTLE_SECONDS`` are not folded (one still being written could be
    missed), yet every board counts them; once older, they are folded into the state."""
    _inputs()
    now = datetime.now(UTC)
    for k in range(3):
        Judgment.objects.create(comparison=data["comparisons"][k], choice="AB"[k % 2],
                                annotator=f"late{k}", created_at=now - timedelta(seconds=k))
    assert _inputs().continued is _continues()
    _assert_board_equals_every_row()
    if _continues():
        state = _state()
        assert state.upto < now - timedelta(seconds=2)
        assert sum(n for n, _, _ in state.cells.values()) == _every_row_count() - 3
    monkeypatch.setattr(folded_counts, "SETTLE_SECONDS", -60)  # the clock moved on
    assert _inputs().continued is _continues()
    _assert_board_equals_every_row()
    if _continues():
        assert sum(n for n, _, _ in _state().cells.values()) == _every_row_count()


def test_a_judges_new_generation_is_counted_instead_of_its_old_one(data):
    """A judge's verdicts can be superseded by a later generation: its board is rebuilt from
    the counts at every build instead of folded."""
    counting = {"judge": "judge-x"}
    _inputs(**counting)
    _vote(data["comparisons"][1], "B", 7200, source="judge-x", annotator="judge-x@3",
          template_version="v1")
    assert not _inputs(**counting).continued  # the old generation's cell changed
    _assert_board_equals_every_row(**counting)


def _state():
    from django.core.cache import cache

    qs = pairwise_judgments_qs()
    key = elo_state._key(qs.order_by(), board_versions.versions(
        "human", exclude_blocked=False, include_trial=False))
    return cache.get(key)


def _every_row_count():
    return pairwise_judgments_qs().count()
