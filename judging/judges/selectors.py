"""Reads for judge runs: progress, recent calls, and per-judge leaderboards. No writes here."""
from __future__ import annotations

from decimal import Decimal

from django.db.models import Count

from studies.models import study_pk

from ..models import Judgment
from .models import Judge, JudgeCall, JudgeRun

_OPEN_RUNS = (JudgeRun.Status.PENDING, JudgeRun.Status.RUNNING)


def study_judge_spend(study_id: int) -> Decimal:
    """What a study's judge runs took of its budget: a stopped or finished run what it cost,
    an open one at least its estimate (capped by its own budget), which it may still spend.
    Registered with the study budget (``annotation.engine.study_budget``)."""
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


def judges_with_verdicts(study=None) -> list[str]:
    """Judges with pairwise verdicts in ``study`` (None: the default study)."""
    names = set(Judge.objects.values_list("name", flat=True))
    used = set(Judgment.objects.filter(source__in=names, comparison__isnull=False,
                                       study_id=study_pk(study))
               .values_list("source", flat=True).distinct())
    return sorted(used)


def graders_with_grades(study=None) -> list[str]:
    """Grading judges (rubric, direct) with stored grades in ``study`` (None: the default)."""
    names = set(Judge.objects.values_list("name", flat=True))
    used = set(Judgment.objects.filter(source__in=names, kind=Judgment.Kind.SCORE,
                                       response__isnull=False, score__isnull=False,
                                       study_id=study_pk(study))
               .values_list("source", flat=True).distinct())
    return sorted(used)


def judge_named(name: str, version: str | None = None) -> Judge | None:
    """The judge called ``name``: that ``version``, else its newest one (None: no such judge)."""
    judges = Judge.objects.filter(name=name)
    if version:
        judges = judges.filter(version=version)
    return judges.order_by("-created_at").first()
