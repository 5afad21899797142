"""Worker identity (local accounts and marketplace arrivals map onto one Worker row) and
blocking, which reaches a marketplace worker's marketplace too."""
from django.db import IntegrityError, transaction

from annotation.core.marketplaces import worker_blocked
from annotation.models import Worker


def worker_for_user(user) -> Worker:
    """The local worker of a logged-in account, created on first use."""
    try:
        return user.worker
    except Worker.DoesNotExist:
        pass
    try:
        with transaction.atomic():
            return Worker.objects.create(
                provider=Worker.Provider.LOCAL, external_id=f"user-{user.pk}", user=user
            )
    except IntegrityError:
        return Worker.objects.get(user=user)


def worker_for_external(provider: str, external_id: str) -> Worker:
    """The worker a marketplace names (e.g. MTurk's workerId), created on first arrival."""
    external_id = external_id.strip()
    if not external_id or len(external_id) > 128:
        raise ValueError("A worker id is required (at most 128 characters)")
    worker, _ = Worker.objects.get_or_create(provider=provider, external_id=external_id)
    return worker


def worker_block(worker: Worker, reason: str, *, marketplace: bool = True) -> None:
    """Block the worker here; a marketplace worker is blocked on their marketplace too.

    That call runs after the caller's transaction commits, in the background: the gold
    auto-block happens inside a submit's transaction, and marketplace calls never run inside
    one. Its outcome goes to the marketplace action log, where a failure stays visible and the
    worker admin can retry it. ``marketplace=False`` is for the caller that makes the call
    itself (``providers.services.provider_worker_block``).
    """
    Worker.objects.filter(pk=worker.pk).update(blocked=True, blocked_reason=reason[:200])
    worker.blocked, worker.blocked_reason = True, reason[:200]
    if marketplace and worker.provider != Worker.Provider.LOCAL:
        worker_id = worker.pk
        transaction.on_commit(lambda: worker_blocked(worker_id))  # the marketplaces' hook


def worker_unblock(worker: Worker) -> None:
    Worker.objects.filter(pk=worker.pk).update(blocked=False, blocked_reason="")
    worker.blocked, worker.blocked_reason = False, ""
