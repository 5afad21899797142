"""Workers on their marketplace: qualification pushes, blocks and unblocks, messages."""

from django.utils import timezone

from annotation.core.clients.errors import MarketplaceError, NotSupported
from annotation.engine.services.workers import worker_block, worker_unblock
from annotation.models import Assignment, Batch, QualificationGrant, Worker
from annotation.providers.base import (
    get_provider,
)
from annotation.providers.models import (
    QualificationPush,
)
from annotation.providers.services.common import (
    action_log,
    qualification_type_id,
    require_outside_transaction,
)


def qualification_push(*, actor: str = "") -> int:
    """Mirror local qualification grants/revocations of marketplace workers onto the marketplace.

    The on-site qualification test grants locally; this pushes the grant (MTurk:
    AssociateQualificationWithWorker). Returns the number of pushes made.
    """
    require_outside_transaction()
    done = 0
    grants = (QualificationGrant.objects.select_related("worker", "qualification")
              .exclude(worker__provider=Worker.Provider.LOCAL))
    for grant in grants:
        provider = get_provider(grant.worker.provider)
        pushed = QualificationPush.objects.filter(grant=grant, provider=provider.name).first()
        if pushed is not None and pushed.revoked == grant.revoked:
            continue
        if pushed is None and grant.revoked:
            continue  # never granted there, nothing to take back
        try:
            type_id = qualification_type_id(provider, grant.qualification)
            if grant.revoked:
                provider.revoke_qualification(type_id, grant.worker.external_id,
                                              "Qualification revoked")
            else:
                provider.grant_qualification(type_id, grant.worker.external_id)
        except NotSupported:
            continue
        except MarketplaceError as exc:
            action_log(None, provider.name, "qualification", str(grant), False, exc, actor)
            continue
        QualificationPush.objects.update_or_create(
            grant=grant, provider=provider.name,
            defaults={"revoked": grant.revoked, "pushed_at": timezone.now()})
        action_log(None, provider.name, "qualification", str(grant), True,
             "revoked" if grant.revoked else "granted", actor)
        done += 1
    return done


def provider_worker_block(worker: Worker, *, reason: str, actor: str = "") -> None:
    """Block here, then on the worker's marketplace where it can block (MTurk:
    CreateWorkerBlock; Prolific's API has no block). Our flag is set first and holds when the
    marketplace refuses: ``MarketplaceError`` is raised after the failure is logged, and
    ``worker_marketplace_block`` retries it."""
    require_outside_transaction()
    worker_block(worker, reason, marketplace=False)
    _remote_worker_call(worker, "block", lambda p: p.block(worker.external_id, reason), actor)


def worker_marketplace_block(worker: Worker, *, actor: str = "") -> bool:
    """(Re)send the marketplace block of a worker blocked here; False when there is nothing to
    send (unblocked meanwhile, a local worker, or a marketplace without blocks).

    Used by the background job the engine's ``worker_block`` queues (the gold auto-block) and
    by the admin's retry. No money is attached to a block, so a repeat needs no claim: at
    worst the marketplace refuses it, and the refusal is logged like any other.
    """
    require_outside_transaction()
    worker.refresh_from_db(fields=["blocked", "blocked_reason"])
    if not worker.blocked:
        return False
    reason = worker.blocked_reason or "Blocked"
    return _remote_worker_call(worker, "block", lambda p: p.block(worker.external_id, reason),
                               actor)


def provider_worker_unblock(worker: Worker, *, actor: str = "") -> None:
    require_outside_transaction()
    worker_unblock(worker)
    _remote_worker_call(worker, "unblock", lambda p: p.unblock(worker.external_id), actor)


def _remote_worker_call(worker: Worker, action: str, call, actor: str) -> bool:
    if worker.provider == Worker.Provider.LOCAL:
        return False
    provider = get_provider(worker.provider)
    try:
        call(provider)
    except NotSupported:
        return False
    except MarketplaceError as exc:
        action_log(None, provider.name, action, worker.external_id, False, exc, actor)
        raise
    action_log(None, provider.name, action, worker.external_id, True, "", actor)
    return True


def workers_notify(batch: Batch, *, subject: str, message: str, actor: str = "") -> list[str]:
    """Message every marketplace worker who worked on the batch; returns ids not reached."""
    require_outside_transaction()
    provider = get_provider(batch.provider)
    ids = sorted(set(Assignment.objects.filter(batch=batch, worker__provider=provider.name)
                     .values_list("worker__external_id", flat=True)))
    if not ids:
        return []
    failed = provider.notify(ids, subject, message)
    action_log(batch, provider.name, "notify", f"{len(ids)} workers", not failed,
         f"not reached: {failed}" if failed else subject, actor)
    return failed
