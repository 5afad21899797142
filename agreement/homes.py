"""The analyst's and the admin's home pages ("/" sends each role to its own).

They live here, at the top of the dependency chain, because they read every app: batches and
money (annotation), judgments and judge runs (judging), reports (agreement). Views only: every
number comes from a selector.
"""
import rules
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.shortcuts import render

from annotation.core.permissions import admin_required, analyst_required
from annotation.engine.selectors import batches_overview
from annotation.engine.study_budget import study_money
from annotation.models import Batch
from judging.judges.models import JudgeRun
from judging.judges.selectors import run_progress
from judging.models import Judgment
from judging.selectors import HUMAN
from studies.access import ANALYZE, MANAGE, SUBMIT, VIEW, study_page
from studies.selectors import studies_visible_to, study_default

from .models import Report

LATEST = 8  # rows of each "latest" list
Q_PAIRWISE = Q(kind=Judgment.Kind.PAIRWISE, comparison__isnull=False)
Q_SCORE = Q(kind=Judgment.Kind.SCORE, response__isnull=False, score__isnull=False)


@analyst_required
def analyst_home(request):
    """The default study's analysis (the global analyst role is that study's)."""
    study = study_default()
    return render(request, "agreement/home_analyst.html", {
        "sources": _judgment_sources(study), "reports": _latest_reports(study),
        "runs": _latest_runs(study)})


@study_page(VIEW)
def study_home(request, study):
    """A study's home: what it is, its boards' sources, batches, judge runs and reports, and
    links to its pages under /s/<slug>/ (members; each link for the roles it needs)."""
    batches = Batch.objects.filter(study=study).exclude(status=Batch.Status.DRAFT)
    return render(request, "agreement/study_home.html", {
        "study": study, "can_analyze": rules.test_rule(ANALYZE, request.user, study),
        "can_manage": rules.test_rule(MANAGE, request.user, study),
        "can_submit": rules.test_rule(SUBMIT, request.user, study),
        "sources": _judgment_sources(study), "reports": _latest_reports(study),
        "runs": _latest_runs(study), "money": study_money(study),
        "batches": batches_overview(batches.order_by("-created_at")[:LATEST])})


@login_required
def study_list(request):
    """Every study the user may open (staff: all): the header's "Studies" link."""
    return render(request, "agreement/study_list.html",
                  {"studies": studies_visible_to(request.user)})


@admin_required
def admin_home(request):
    live = Batch.objects.exclude(status=Batch.Status.DRAFT).order_by("-created_at")
    drafts = (Batch.objects.filter(status=Batch.Status.DRAFT).order_by("-created_at")
              .annotate(n_tasks=Count("tasks")))
    return render(request, "agreement/home_admin.html", {
        "batches": batches_overview(live), "drafts": drafts, "runs": _latest_runs(),
        "reports": _latest_reports()})


def _judgment_sources(study) -> list[tuple[str, int, int]]:
    """(source, pairwise judgments, grades) per judgment source of ``study`` (through the
    instance judged), humans first, in one query."""
    rows = (Judgment.objects.exclude(kind=Judgment.Kind.ADJUDICATION)  # rulings, not judgments
            .filter(study=study)
            .order_by().values("source")
            .annotate(pairwise=Count("id", filter=Q_PAIRWISE), grades=Count("id", filter=Q_SCORE)))
    rows = [(r["source"], r["pairwise"], r["grades"]) for r in rows]
    return sorted(rows, key=lambda r: (r[0] != HUMAN, r[0]))


def _latest_reports(study=None):
    """The latest reports (of ``study``; None: every study, for the deployment's admin)."""
    reports = Report.objects if study is None else Report.objects.filter(study=study)
    return reports.only("uuid", "title", "status", "error", "params", "created_at",
                               "created_by")[:LATEST]


def _latest_runs(study=None):
    runs = JudgeRun.objects if study is None else JudgeRun.objects.filter(study=study)
    runs = runs.select_related("judge").order_by("-created_at")[:LATEST]
    return [(run, run_progress(run)) for run in runs]
