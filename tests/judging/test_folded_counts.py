"""Counts folded forward as votes arrive (``judging.folded_counts``: the page's categories,
sampling and category win rates) equal a GROUP BY of every vote at each step: votes still
settling, votes folded in, and after a deletion or a rejection (the state rebuilt)."""
from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
from django.db import connection
from django.db.models import Count

from judging import folded_counts, leaderboards, selectors
from judging.models import Judgment
from judging.selectors import RATING_IDS, pairwise_judgments_qs
from tests.judging.test_board_from_counts import _reject, data  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

COLUMNS = [(*RATING_IDS, "comparison__instance__family__name"),
           ("comparison__sampling", "comparison_id"), ("comparison__instance__family__name",)]


def _group_by(columns, **counting):
    return {tuple(r[:-1]): r[-1] for r in pairwise_judgments_qs(**counting).order_by()
            .values_list(*columns).annotate(n=Count("pk"))}


def _counts(columns, **counting):
    return folded_counts.counts(pairwise_judgments_qs(**counting), columns,
                                **selectors.folding("human", **counting))


def _cast_now(data, k=3):  # noqa: F811
    now = datetime.now(UTC)
    for i in range(k):
        Judgment.objects.create(comparison=data["comparisons"][i], choice="AB"[i % 2],
                                annotator=f"now{i}", created_at=now - timedelta(seconds=i))


@pytest.mark.parametrize("columns", COLUMNS)
def test_folded_counts_equal_a_group_by_as_votes_arrive(data, columns, monkeypatch):  # noqa: F811
    on_postgres = connection.vendor == "postgresql"
    assert _counts(columns) == _group_by(columns)
    _cast_now(data)
    with mock.patch.object(folded_counts, "_grouped", wraps=folded_counts._grouped) as grouped:
        assert _counts(columns) == _group_by(columns)  # the new votes read, not folded yet
        monkeypatch.setattr(folded_counts, "SETTLE_SECONDS", 0)  # they are settled now
        assert _counts(columns) == _group_by(columns)  # … and folded
        _cast_now(data, 1)
        assert _counts(columns) == _group_by(columns)
    assert grouped.call_count == (0 if on_postgres else 3)  # folded, never grouped again
    Judgment.objects.filter(source="human").order_by("pk").first().delete()
    assert _counts(columns) == _group_by(columns)  # the count moved: rebuilt


def test_a_rejection_rebuilds_the_counts(data):  # noqa: F811
    columns = COLUMNS[0]
    _counts(columns)
    _reject(data)  # through the review service: the source's token rotates
    assert _counts(columns) == _group_by(columns)
    assert _counts(columns, exclude_blocked=True) == _group_by(columns, exclude_blocked=True)


def test_the_page_parts_equal_their_every_vote_queries(data, monkeypatch):  # noqa: F811
    """The categories, the sampling table and the category win rates, folded after votes
    arrived, equal the same functions counting with a GROUP BY of every vote."""
    def parts():
        return (selectors.category_names(), selectors.comparison_sampling_counts(),
                leaderboards.category_win_rates())

    parts()
    _cast_now(data)
    monkeypatch.setattr(folded_counts, "SETTLE_SECONDS", -60)
    folded = parts()
    folding = selectors.folding

    def every_vote(judge, study=None, **kwargs):
        return {**folding(judge, study, **kwargs), "foldable": False}

    monkeypatch.setattr(selectors, "folding", every_vote)
    monkeypatch.setattr(leaderboards, "folding", every_vote)
    assert folded == parts()
    assert folded[0] == ["Chart reading", "Maps"] and set(folded[2]) == {"Chart reading", "Maps"}


def test_sources_are_read_per_source_and_per_study(data):  # noqa: F811
    """``leaderboard_sources`` asks each stored source whether it judged in the study (the
    list of sources is an index walk on PostgreSQL), which is the DISTINCT it replaced."""
    from judging.models import Comparison

    other = Comparison.objects.filter(instance__study=data["other"]).first()
    Judgment.objects.create(comparison=other, choice="A", source="judge-elsewhere",
                            annotator="judge-elsewhere@1", created_at=datetime.now(UTC))
    assert selectors.judgment_sources() == ["human", "judge-elsewhere", "judge-x"]
    assert selectors.judge_names() == ["human", "judge-x"]
    assert selectors.judge_names(data["other"]) == ["human", "judge-elsewhere"]
    assert selectors.leaderboard_sources(data["other"]) == ["human", "judge-elsewhere"]
    assert selectors.score_judge_names() == []
