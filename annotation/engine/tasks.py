"""Celery tasks of the engine: each takes ids, calls one service, is safe to run twice."""
from celery import shared_task

from annotation.engine.services.completion import batches_finish_completed
from annotation.engine.services.leases import leases_expire


@shared_task(name="annotation.tasks.expire_leases")
def expire_leases() -> int:
    return leases_expire()


@shared_task(name="annotation.tasks.finish_completed_batches")
def finish_completed_batches() -> int:
    return batches_finish_completed()
