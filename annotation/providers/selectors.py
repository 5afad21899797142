"""Reads for the marketplace side: cost so far, what is committed, status counts, whether a
worker's block reached their marketplace. No writes."""

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery

from annotation.engine.selectors import BatchCosts, batch_costs  # noqa: F401  (asked here too)
from annotation.models import Assignment, Batch, Task, Worker
from annotation.providers.base import get_provider
from annotation.providers.models import Bonus, ProviderAction, ProviderHit, ProviderSubmission


def batch_status_counts(batch: Batch) -> dict[str, dict[str, int]]:
    """HITs by status, marketplace submissions by status and flag, our assignments by status."""
    def counts(qs, field):
        return {row[field]: row["n"] for row in qs.values(field).annotate(n=Count("id"))}

    subs = ProviderSubmission.objects.filter(hit__batch=batch)
    return {
        "hits": counts(ProviderHit.objects.filter(batch=batch), "status"),
        "remote": counts(subs, "remote_status"),
        "flagged": counts(subs.filter(~Q(flag="")), "flag"),
        "assignments": counts(Assignment.objects.filter(batch=batch), "status"),
        "bonuses": counts(Bonus.objects.filter(batch=batch), "status"),
    }


def published_hit(task: Task, provider: str, external_id: str) -> bool:
    """Whether this deployment published ``task`` on ``provider`` as ``external_id`` (an MTurk
    HIT): the only arrivals a marketplace task page accepts."""
    return bool(external_id) and ProviderHit.objects.filter(
        task=task, batch_id=task.batch_id, provider=provider, external_id=external_id,
    ).exists()


_BLOCK_ACTIONS = ("block", "unblock")


def with_marketplace_block(workers: QuerySet) -> QuerySet:
    """Annotate each worker with the last block/unblock call made on their marketplace (the
    action log is the record: ``mb_action``, ``mb_ok``, ``mb_detail``), in the same query."""
    last = (ProviderAction.objects.filter(provider=OuterRef("provider"),
                                          target=OuterRef("external_id"),
                                          action__in=_BLOCK_ACTIONS)
            .order_by("-created_at", "-pk"))
    return workers.annotate(mb_action=Subquery(last.values("action")[:1]),
                            mb_ok=Subquery(last.values("ok")[:1]),
                            mb_detail=Subquery(last.values("detail")[:1]))


def marketplace_block_state(worker: Worker) -> tuple[str, bool]:
    """(what to say about the worker's block on their marketplace, whether it needs a retry).

    Reads the ``mb_*`` annotations of ``with_marketplace_block`` (or looks them up)."""
    if worker.provider == Worker.Provider.LOCAL:
        return "— (local account)", False
    provider = get_provider(worker.provider)
    if not provider.can_block:
        return f"n/a ({Worker.Provider(provider.name).label} has no worker block)", False
    if not hasattr(worker, "mb_action"):
        worker = with_marketplace_block(Worker.objects.filter(pk=worker.pk)).get()
    action, ok, detail = worker.mb_action, worker.mb_ok, worker.mb_detail or ""
    if action is None:
        if worker.blocked:
            return "not blocked there yet (the block was not sent)", True
        return "not blocked", False
    if action == "block":
        return ("blocked", False) if ok else (f"block FAILED: {detail}", worker.blocked)
    return ("unblocked", False) if ok else (f"unblock FAILED: {detail}", False)
