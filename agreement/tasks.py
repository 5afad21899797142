"""Celery tasks of the agreement app, on the 'metrics' queue: take an id, call one service.

Both services are idempotent (a finished run/report is left alone, cached scores are not
recomputed), so a redelivered task is harmless. Services queue through ``enqueue_*`` after
commit; the queue is named once, in ``CELERY_TASK_ROUTES`` (settings). Without a
broker the task runs in a thread, never in the web request that asked for it
(``annotation.core.background``); a job that fails, or whose process stops under it, records
why on its row.
"""
from functools import partial

from celery import shared_task

from annotation.core.background import run_outside_request

from .models import MetricRun, Report
from .services.metric_scores import metric_run_work
from .services.reports import report_build
from .services.worker_reliability import block_unreliable_workers


@shared_task(acks_late=True)
def compute_metrics(run_id: int) -> int:
    return metric_run_work(run_id).done


@shared_task(acks_late=True)
def build_report(report_id: int) -> str:
    return report_build(report_id).status


@shared_task(acks_late=True)
def block_unreliable(batch_id: int) -> int:
    """The batch's reliability block rule; a rerun leaves blocked workers alone."""
    from annotation.models import Batch

    return sum(u.blocked for u in block_unreliable_workers(Batch.objects.get(pk=batch_id)))


def enqueue_compute_metrics(run_id: int):
    return run_outside_request(compute_metrics, (run_id,),
                               on_interrupted=partial(MetricRun.fail_unfinished, run_id))


def enqueue_build_report(report_id: int):
    return run_outside_request(build_report, (report_id,),
                               on_interrupted=partial(Report.fail_unfinished, report_id))
