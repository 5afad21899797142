"""Ratings read from the database the fast way equal the ratings of the named rows.

``pairwise_judgments_encoded`` (model ids and outcomes straight from the cursor) must give the same
models, order and outcomes as ``ratings.encode(pairwise_judgments())``, and
``pairwise_counts`` (counted by the database) the same matrices, so Bradley-Terry and its
seeded bootstrap are equal to the bit. The data has ties, a pair only ever shown one way round,
a model that never won, verdicts sharing a timestamp, a judge's superseded generation and a
withdrawn model.
"""
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from django.contrib.auth import get_user_model

from judging import ratings
from judging.models import Comparison, Judgment
from judging.selectors import pairwise_counts, pairwise_judgments, pairwise_judgments_encoded
from judging.submissions.models import Submission
from tests.judging import builders

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _judgments():
    """Verdicts of humans and of one judge (an old generation superseded on one item)."""
    ms = builders.models("zeta", "alpha", "never-wins", "gone", reference="ref")
    plan = [  # (model on screen A, model on screen B, human choices, second offset)
        ("zeta", "alpha", ["A", "B", "tie", "A", "A"], 0),
        ("alpha", "zeta", ["B", "tie", "tie"], 0),  # same timestamp as the first: pk decides
        ("ref", "never-wins", ["A", "A", "A"], 10),  # one-sided: never-wins never wins
        ("never-wins", "alpha", ["B", "B", "B", "B"], 20),
        ("alpha", "ref", ["A", "B", "B", "A", "tie", "B"], 5),  # only ever shown this way
        ("gone", "zeta", ["A", "B"], 30),  # a withdrawn model's verdicts are left out
    ]
    comparisons = []
    for a, b, choices, offset in plan:
        inst = builders.instance()
        comp = Comparison.objects.create(instance=inst, response_a=builders.respond(inst, ms[a]),
                                         response_b=builders.respond(inst, ms[b]))
        comparisons.append(comp)
        for k, choice in enumerate(choices):
            Judgment.objects.create(comparison=comp, annotator=f"w{k}", choice=choice,
                                    created_at=T0 + timedelta(seconds=offset))
    for k, (comp, choice) in enumerate(zip(comparisons, "ABtAB", strict=False)):
        Judgment.objects.create(comparison=comp, source="judge-x", annotator="judge-x@1",
                                template_version="v1", choice="tie" if choice == "t" else choice,
                                created_at=T0 + timedelta(seconds=k))
    Judgment.objects.create(comparison=comparisons[0], source="judge-x", annotator="judge-x@2",
                            template_version="v1", choice="B", created_at=T0 + timedelta(hours=1))
    Submission.objects.create(model=ms["gone"], status="withdrawn", name="gone", version=1,
                              submitter=get_user_model().objects.create_user("submitter"))


@pytest.mark.parametrize("judge", ["human", "judge-x"])
def test_encoded_read_equals_encoding_the_named_rows(judge):
    _judgments()
    rows = pairwise_judgments(judge=judge)
    fast, slow = pairwise_judgments_encoded(judge=judge), ratings.encode(rows)
    assert fast.models == slow.models
    for column in ("a", "b", "outcome"):
        assert np.array_equal(getattr(fast, column), getattr(slow, column)), column
    assert ratings.online_elo(fast) == ratings.online_elo(rows)  # exactly, same order


@pytest.mark.parametrize("judge", ["human", "judge-x"])
def test_counted_read_gives_the_same_bradley_terry_and_bootstrap(judge):
    _judgments()
    rows = pairwise_judgments(judge=judge)
    models, wins, ties = pairwise_counts(judge=judge)
    expected = ratings.pair_counts(rows)
    assert models == expected[0]
    assert np.array_equal(wins, expected[1]) and np.array_equal(ties, expected[2])
    assert wins.dtype == expected[1].dtype and ties.dtype == expected[2].dtype
    if judge == "human":  # never-wins never won a vote: the ridge sets its rating
        assert wins[models.index("never-wins")].sum() == ties[models.index("never-wins")].sum() == 0
    got = ratings.bootstrap_bradley_terry_from_counts(models, wins, ties, rounds=50, seed=7)
    want = ratings.bootstrap_bradley_terry(rows, rounds=50, seed=7)
    assert got[0] == want[0]
    assert np.array_equal(got[1], want[1]) and np.array_equal(got[2], want[2])


def test_the_withdrawn_model_and_the_superseded_verdict_are_left_out():
    _judgments()
    assert "gone" not in pairwise_judgments_encoded().models
    assert "gone" not in pairwise_counts()[0]
    judge = pairwise_judgments_encoded(judge="judge-x")
    assert len(judge) == 5  # 6 verdicts, one superseded by the later generation
    assert pairwise_counts(judge="judge-x")[1].sum() + \
        pairwise_counts(judge="judge-x")[2].sum() // 2 == 5


def test_nothing_to_read_is_none():
    _judgments()
    assert pairwise_judgments_encoded(judge="nobody") is None
    assert pairwise_counts(judge="nobody") is None


def test_pair_counts_with_times_equals_the_repeated_rows():
    rows = [("a", "b", "A"), ("b", "a", "tie"), ("c", "a", "B"), ("b", "c", "A")]
    times = [3, 2, 0, 5]
    repeated = [r for r, t in zip(rows, times, strict=True) for _ in range(t)]
    got, want = ratings.pair_counts(rows, times=times), ratings.pair_counts(repeated)
    assert got[0] == want[0]
    assert np.array_equal(got[1], want[1]) and np.array_equal(got[2], want[2])
    with pytest.raises(ValueError):
        ratings.pair_counts(rows, times=[1, 2, 3])
    with pytest.raises(ValueError):
        ratings.pair_counts(rows, times=[1, -1, 1, 1])
