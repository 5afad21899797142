"""The demo adds judges of all six kinds and runs them end to end against the stand-in."""
import random

import pytest

from judging.demo import load_demo
from judging.judges.demo import extend_demo
from judging.judges.models import Judge, JudgeRun
from judging.leaderboards import leaderboard_build
from judging.models import Judgment

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def test_demo_judges_of_every_kind_run_over_the_demo(server, monkeypatch):
    monkeypatch.setenv("DEMO_JUDGE_BASE_URL", server.base_url)
    load_demo(seed=3)
    summary = extend_demo(random.Random(1))
    assert summary["judges"] == 6 and summary["ablation_comparisons"] == 18
    assert set(Judge.objects.values_list("kind", flat=True)) == set(Judge.Kind.values)
    for judge in Judge.objects.all():
        run = JudgeRun.objects.get(judge=judge)
        assert run.status == "done" and run.units_failed == 0, (judge.kind, run.units.filter(
            status="failed").values_list("error", flat=True)[:3])
        assert Judgment.objects.filter(source=judge.name).exists(), judge.kind
    assert server.call_count > 0
    assert leaderboard_build("Stand-in pairwise judge", bootstrap_rounds=10).rows
    calls, runs = server.call_count, JudgeRun.objects.count()
    extend_demo(random.Random(1))  # again: judges reused, nothing run twice
    assert server.call_count == calls and JudgeRun.objects.count() == runs
