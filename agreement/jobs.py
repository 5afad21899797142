"""The agreement app's expensive jobs as the admission gate (``annotation.core.jobs``) sees them:
report builds and metric runs, counted from their own rows while pending or running."""
from __future__ import annotations

from functools import partial

from annotation.core import jobs

from .models import BackgroundJob, MetricRun, Report

REPORT, METRIC_RUN = "report", "metric_run"
ACTIVE = (BackgroundJob.Status.PENDING, BackgroundJob.Status.RUNNING)


def report_fingerprint(params: dict) -> str:
    """Two reports are the same job when their checked parameters are (the title is a label)."""
    return jobs.fingerprint(REPORT, params)


def metric_run_fingerprint(metrics: list[str], options: dict, study_id: int) -> str:
    """The same metrics and options in another study are another job."""
    return jobs.fingerprint(METRIC_RUN, metrics, options, study_id)


def _active_reports():
    for report in Report.objects.filter(status__in=ACTIVE).only("pk", "created_by", "params"):
        yield jobs.ActiveJob(REPORT, report.created_by, report,
                             partial(report_fingerprint, report.params))


def _active_metric_runs():
    for run in MetricRun.objects.filter(status__in=ACTIVE).only(
            "pk", "created_by", "metrics", "options", "study_id"):
        yield jobs.ActiveJob(METRIC_RUN, run.created_by, run,
                             partial(metric_run_fingerprint, run.metrics, run.options,
                                     run.study_id))


def register() -> None:
    jobs.register(REPORT, _active_reports)
    jobs.register(METRIC_RUN, _active_metric_runs)
