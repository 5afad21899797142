"""Celery tasks of the agreement app, on the 'metrics' queue: take an id, call one service.

Both services are idempotent (a finished run/report is left alone, cached scores are not
recomputed), so a redelivered task is harmless. Callers queue through ``enqueue_*`` after
commit, which names the queue (Celery deprecates the per-task ``queue`` attribute).
"""
from celery import shared_task

from .services.metric_scores import metric_run_work
from .services.reports import report_build

QUEUE = "metrics"


@shared_task(acks_late=True)
def compute_metrics(run_id: int) -> int:
    return metric_run_work(run_id).done


@shared_task(acks_late=True)
def build_report(report_id: int) -> str:
    return report_build(report_id).status


def enqueue_compute_metrics(run_id: int) -> None:
    compute_metrics.apply_async((run_id,), queue=QUEUE)


def enqueue_build_report(report_id: int) -> None:
    build_report.apply_async((report_id,), queue=QUEUE)
