"""Reads for judge runs: progress, recent calls, and per-judge leaderboards. No writes here."""
from __future__ import annotations

from decimal import Decimal

from django.db.models import Count

from judging import ratings
from studies.models import study_pk

from ..leaderboards import ScoreLeaderboard, score_leaderboard_build
from ..models import Judgment
from ..selectors import pairwise_judgments, reference_model_name
from .models import Judge, JudgeCall, JudgeRun

_OPEN_RUNS = (JudgeRun.Status.PENDING, JudgeRun.Status.RUNNING)


def study_judge_spend(study_id: int) -> Decimal:
    """What a study's judge runs took of its budget: a stopped or finished run what it cost,
    an open one at least its estimate (capped by its own budget), which it may still spend.
    Registered with the study budget (``annotation.providers.study_budget``)."""
    total = Decimal(0)
    for status, cost, reserved, estimated, budget in JudgeRun.objects.filter(
            study_id=study_id).values_list("status", "cost", "reserved", "estimated_cost",
                                           "budget"):
        if status in _OPEN_RUNS:
            promised = estimated if budget is None else min(estimated, budget)
            cost = max(cost + reserved, promised)
        total += cost
    return total


def run_progress(run: JudgeRun) -> dict:
    total = run.units_total or 0
    finished = run.units_done + run.units_failed
    return {
        "run": str(run.uuid), "judge": run.judge.ident, "kind": run.judge.kind,
        "status": run.status, "units_total": total, "units_done": run.units_done,
        "units_failed": run.units_failed,
        "percent": round(100.0 * finished / total, 1) if total else 100.0,
        "calls_made": run.calls_made, "calls_cached": run.calls_cached,
        "calls_failed": run.calls_failed, "tokens_in": run.tokens_in,
        "tokens_out": run.tokens_out, "cost": str(run.cost),
        "estimated_cost": str(run.estimated_cost),
        "budget": None if run.budget is None else str(run.budget),
        "started_at": run.started_at, "finished_at": run.finished_at,
    }


def parse_path_counts(run: JudgeRun) -> dict[str, int]:
    rows = (JudgeCall.objects.filter(run=run, purpose=JudgeCall.Purpose.JUDGE)
            .values("parse_path").annotate(n=Count("id")))
    return {r["parse_path"] or "pending": r["n"] for r in rows}


def judge_leaderboard(judge_name: str, *, bootstrap_rounds: int = 200, seed: int = 0):
    """The ratings module's leaderboard over one judge's verdicts (VisIT-Bench Table 4), read
    by the same selector as the human board (gold comparisons and non-votes left out)."""
    rows = pairwise_judgments(judge=judge_name)
    if not rows:
        return []
    reference = reference_model_name()
    names = {r[0] for r in rows} | {r[1] for r in rows}
    return ratings.leaderboard(rows, reference=reference if reference in names else None,
                               bootstrap_rounds=bootstrap_rounds, seed=seed)


def judges_with_verdicts(study=None) -> list[str]:
    """Judges with pairwise verdicts in ``study`` (None: the default study)."""
    names = set(Judge.objects.values_list("name", flat=True))
    used = set(Judgment.objects.filter(source__in=names, comparison__isnull=False,
                                       comparison__instance__study_id=study_pk(study))
               .values_list("source", flat=True).distinct())
    return sorted(used)


def graders_with_grades(study=None) -> list[str]:
    """Grading judges (rubric, direct) with stored grades in ``study`` (None: the default)."""
    names = set(Judge.objects.values_list("name", flat=True))
    used = set(Judgment.objects.filter(source__in=names, kind=Judgment.Kind.SCORE,
                                       response__isnull=False, score__isnull=False,
                                       response__instance__study_id=study_pk(study))
               .values_list("source", flat=True).distinct())
    return sorted(used)


def grader_leaderboards(*, bootstrap_rounds: int = 200,
                        seed: int = 0) -> list[tuple[str, ScoreLeaderboard]]:
    """Each grading judge's score board (mean grade per model), one per judge: their scales
    differ (rubric 1–5, direct 0–10)."""
    return [(name, score_leaderboard_build(name, bootstrap_rounds=bootstrap_rounds, seed=seed))
            for name in graders_with_grades()]
