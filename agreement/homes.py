"""The analyst's and the admin's home pages ("/" sends each role to its own).

They live here, at the top of the dependency chain, because they read every app: batches and
money (annotation), judgments and judge runs (judging), reports (agreement). Views only: every
number comes from a selector.
"""
from django.db.models import Count, Q
from django.shortcuts import render

from annotation.core.permissions import admin_required, analyst_required
from annotation.engine.selectors import batches_overview
from annotation.models import Batch
from judging.judges.models import JudgeRun
from judging.judges.selectors import run_progress
from judging.models import Judgment
from judging.selectors import HUMAN

from .models import Report

LATEST = 8  # rows of each "latest" list
Q_PAIRWISE = Q(kind=Judgment.Kind.PAIRWISE, comparison__isnull=False)
Q_SCORE = Q(kind=Judgment.Kind.SCORE, response__isnull=False, score__isnull=False)


@analyst_required
def analyst_home(request):
    return render(request, "agreement/home_analyst.html", {
        "sources": _judgment_sources(), "reports": _latest_reports(), "runs": _latest_runs()})


@admin_required
def admin_home(request):
    live = Batch.objects.exclude(status=Batch.Status.DRAFT).order_by("-created_at")
    drafts = (Batch.objects.filter(status=Batch.Status.DRAFT).order_by("-created_at")
              .annotate(n_tasks=Count("tasks")))
    return render(request, "agreement/home_admin.html", {
        "batches": batches_overview(live), "drafts": drafts, "runs": _latest_runs(),
        "reports": _latest_reports()})


def _judgment_sources() -> list[tuple[str, int, int]]:
    """(source, pairwise judgments, grades) per judgment source, humans first, in one query."""
    rows = (Judgment.objects.exclude(kind=Judgment.Kind.ADJUDICATION)  # rulings, not judgments
            .order_by().values("source")
            .annotate(pairwise=Count("id", filter=Q_PAIRWISE), grades=Count("id", filter=Q_SCORE)))
    rows = [(r["source"], r["pairwise"], r["grades"]) for r in rows]
    return sorted(rows, key=lambda r: (r[0] != HUMAN, r[0]))


def _latest_reports():
    return Report.objects.only("uuid", "title", "status", "error", "params", "created_at",
                               "created_by")[:LATEST]


def _latest_runs():
    runs = JudgeRun.objects.select_related("judge").order_by("-created_at")[:LATEST]
    return [(run, run_progress(run)) for run in runs]
