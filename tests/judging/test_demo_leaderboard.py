"""The demo's human leaderboard comes from the simulated crowd's engine-recorded judgments."""
import pytest
from django.urls import reverse

from annotation.models import Assignment
from judging.demo import MODELS, load_demo
from judging.models import Judgment
from judging.selectors import pairwise_judgments

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def test_demo_shows_a_human_leaderboard(analyst_client):
    result = load_demo(seed=7)
    board = result["leaderboard"]
    assert {r["model"] for r in board} == set(MODELS)
    assert sum(r["matches"] for r in board) == 2 * len(pairwise_judgments(judge=Judgment.HUMAN))
    assert Judgment.objects.filter(assignment__isnull=True).count() == 0
    assert set(Judgment.objects.values_list("assignment_id", flat=True)) <= set(
        Assignment.objects.filter(counted=True).values_list("pk", flat=True))
    best = max(MODELS, key=lambda m: MODELS[m][1])
    worst = min(MODELS, key=lambda m: MODELS[m][1])
    assert board[0]["model"] == best and board[-1]["model"] == worst
    page = analyst_client.get(reverse("judging:leaderboard")).content.decode()
    assert "Human-verified reference" in page and "(reference)" in page
