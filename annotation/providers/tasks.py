"""Celery tasks of the providers: each takes ids, calls one service, is safe to run twice."""
from celery import shared_task

from annotation.core.clients.errors import MarketplaceError
from annotation.core.marketplaces import on_worker_blocked
from annotation.models import Batch, Worker
from annotation.providers import services


@shared_task(name="annotation.providers.tasks.sync_all")
def sync_all() -> int:
    """Beat entry (``provider-sync`` in CELERY_BEAT_SCHEDULE): sync every launched batch."""
    return sum(r.seen for r in services.sync_all().values())


@shared_task(name="annotation.providers.tasks.sync_batch")
def sync_batch(batch_id: int) -> int:
    batch = Batch.objects.filter(pk=batch_id).first()
    return services.batch_sync(batch, actor="celery").seen if batch else 0


@shared_task(name="annotation.providers.tasks.review_batch")
def review_batch(batch_id: int) -> int:
    """Queued by a Prolific hook saying a submission awaits review: the batch's review policy
    runs now instead of at the next sync."""
    batch = Batch.objects.filter(pk=batch_id).first()
    if batch is None:
        return 0
    report = services.batch_review(batch, actor="hook")
    return report.approved + report.rejected


@shared_task(name="annotation.providers.tasks.push_qualifications")
def push_qualifications() -> int:
    return services.qualification_push(actor="celery")


@on_worker_blocked
def _queue_marketplace_block(worker_id: int) -> None:
    """The engine blocked a marketplace worker (``worker_block``, after its commit): the
    marketplace's side runs out of the request."""
    from annotation.core.background import run_outside_request

    run_outside_request(block_on_marketplace, (worker_id,))


@shared_task(name="annotation.providers.tasks.block_on_marketplace")
def block_on_marketplace(worker_id: int) -> bool:
    """Queued by the engine's ``worker_block`` (e.g. the gold auto-block) after its commit. A
    refusal is already in the action log, where the worker admin shows it and can retry."""
    worker = Worker.objects.filter(pk=worker_id).first()
    if worker is None:
        return False
    try:
        return services.worker_marketplace_block(worker, actor="auto-block")
    except MarketplaceError:
        return False
