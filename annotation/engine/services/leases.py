"""Lease expiry: frees the slot of every lease past its deadline.

Runs periodically (Celery beat) and lazily before each claim; a worker's own lease past its
deadline is expired by their next claim, in the claim's transaction (a worker holds one lease
per batch, so it would otherwise block that claim). Each expired lease gives back exactly one
slot because the status flip is conditional (``WHERE status='leased'``).
"""
from collections import Counter
from datetime import datetime

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from annotation.models import Assignment, Task


def leases_expire(*, now: datetime | None = None, batch=None) -> int:
    now = now or timezone.now()
    with transaction.atomic():
        stale = Assignment.objects.filter(status=Assignment.Status.LEASED, expires_at__lte=now)
        if batch is not None:
            stale = stale.filter(batch=batch)
        if connection.features.has_select_for_update_skip_locked:
            stale = stale.select_for_update(skip_locked=True)
        rows = list(stale.values_list("id", "task_id"))
        if not rows:
            return 0
        expired = Assignment.objects.filter(
            id__in=[r[0] for r in rows], status=Assignment.Status.LEASED
        ).update(status=Assignment.Status.EXPIRED)
        assert expired == len(rows), "rows are locked, so each flips exactly once"
        for task_id, count in Counter(r[1] for r in rows).items():
            Task.objects.filter(pk=task_id).update(slots_taken=F("slots_taken") - count)
    return len(rows)


def lease_expire(assignment: Assignment, *, now: datetime) -> bool:
    """Expire one lease if it is still leased and past its deadline, giving its slot back; False
    when it was not (submitted, returned or expired meanwhile by a sweep). Joins the caller's
    transaction (a claim's: the lease is gone exactly when the claim commits)."""
    with transaction.atomic(savepoint=False):
        flipped = Assignment.objects.filter(
            pk=assignment.pk, status=Assignment.Status.LEASED, expires_at__lte=now
        ).update(status=Assignment.Status.EXPIRED)
        if flipped:
            Task.objects.filter(pk=assignment.task_id).update(slots_taken=F("slots_taken") - 1)
    return bool(flipped)
