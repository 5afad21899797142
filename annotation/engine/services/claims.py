"""Claiming work: "give me my next task" and "this marketplace assignment is mine".

A claim takes a slot with a conditional ``UPDATE task SET slots_taken = slots_taken + 1
WHERE slots_taken < max_assignments`` and creates the assignment in the same transaction. The
next-task claim is one hand-written statement (``annotation.engine.statements.claim_next_task``: its
candidate row is locked ``FOR UPDATE SKIP LOCKED`` on PostgreSQL so concurrent workers spread
over tasks instead of queueing on one row; SQLite serializes writers instead); the marketplace
claim of one given task is the ORM's compare-and-set.

A worker holds at most one lease per batch, and the database holds that rule (a partial unique
index over leased rows, ``one_lease_per_worker_and_batch``), so it covers every path that writes
a lease and every race: of one worker's concurrent claims (two tabs, a double click, a script)
one inserts the lease and the others' inserts are refused, rolling their slot back; they answer
with the lease that won. A lease past its deadline that the sweep has not expired yet still
holds that place, so the worker's next claim expires it in its own transaction first.
"""
from contextlib import nullcontext
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from annotation.engine.hit_types import get_hit_type
from annotation.engine.services.errors import AssignmentConflict, NotEligible, NotQualified
from annotation.engine.services.leases import lease_expire, leases_expire
from annotation.engine.statements import claim_next_task, held_lease
from annotation.models import Assignment, Batch, QualificationGrant, Task, Worker

_RETRIES = 5


def ensure_eligible(batch: Batch, worker: Worker) -> None:
    if batch.status != Batch.Status.ACTIVE:
        raise NotEligible("This batch is not accepting work right now.")
    if worker.blocked:
        raise NotEligible("Your account is blocked from new work.")
    if batch.provider != worker.provider:  # a marketplace pays for its slots: none leak out
        raise NotEligible(f"This batch runs on {batch.get_provider_display()}; its tasks are "
                          "taken there.")
    if batch.required_qualification_id and not QualificationGrant.objects.filter(
        qualification_id=batch.required_qualification_id, worker=worker, revoked=False
    ).exists():
        raise NotQualified(f"This batch requires the “{batch.required_qualification}” qualification.")
    study_needs = batch.study.required_qualification
    if study_needs is not None and not QualificationGrant.objects.filter(
            qualification=study_needs, worker=worker, revoked=False).exists():
        raise NotQualified(f"This study requires the “{study_needs}” qualification.")


def task_claim_next(*, batch: Batch, worker: Worker, now: datetime | None = None):
    """Lease the next task of ``batch`` for ``worker``; ``None`` when nothing is left for them.
    The assignment comes with its task, batch and worker loaded (a task page needs all three).

    A worker who already holds a live lease in the batch gets that one back (reloading the page
    never burns a second slot), and so does each of their concurrent claims that lost the race
    for it. Their lease past its deadline, if the sweep has not expired it yet, is expired by
    this claim in the same transaction that leases the next task.
    """
    now = now or timezone.now()
    ensure_eligible(batch, worker)
    held = held_lease(batch, worker)
    swept = False
    for _ in range(_RETRIES):
        if held is not None and held.expires_at > now:
            return held
        try:
            claimed = _claim_free_task(batch, worker, now, stale=held)
        except IntegrityError:
            # The unique index refused a second lease: this worker's concurrent claim (another
            # tab) committed theirs first. Ours rolled back, slot and all; theirs is the lease.
            held = held_lease(batch, worker)
            continue
        held = None  # a stale lease, if any, was expired with that claim
        if claimed is not None:
            return claimed
        if swept:
            return None
        # Nothing free: stale leases may be holding slots. Free them (lazily) and look again.
        swept = True
        if not leases_expire(now=now, batch=batch):
            return None
    return None


def _claim_free_task(batch: Batch, worker: Worker, now: datetime,
                     stale: Assignment | None) -> Assignment | None:
    """Lease the next free task; a stale lease of the worker's (rare: the sweep runs every
    minute) is expired first, in one transaction with the claim. Without one, the claim is
    atomic on its own (on PostgreSQL one statement, so no transaction of ours around it)."""
    with transaction.atomic() if stale is not None else nullcontext():
        if stale is not None:
            lease_expire(stale, now=now)
        return claim_next_task(_new_assignment(None, batch, worker, now))


def task_claim_specific(
    *, task: Task, worker: Worker, provider_assignment_id: str = "", provider_hit_id: str = "",
    submit_to: str = "", now: datetime | None = None,
):
    """Lease one given task (a marketplace HIT) for ``worker``; idempotent per (task, worker).

    Raises ``AssignmentConflict`` when the provider's assignment id belongs to someone else, the
    worker already holds this task under another id — forged or replayed URLs write nothing —
    or the worker holds a live lease on another task of the batch (one lease per worker and
    batch: they submit or return that one first; on MTurk they return the new HIT).
    """
    now = now or timezone.now()
    batch = task.batch
    if provider_assignment_id:
        other = Assignment.objects.filter(provider_assignment_id=provider_assignment_id).first()
        if other is not None and (other.worker_id != worker.pk or other.task_id != task.pk):
            raise AssignmentConflict("This assignment id belongs to another worker or task.")
    existing = Assignment.objects.filter(task=task, worker=worker).first()
    if existing is not None:
        return _arrived_again(existing, provider_assignment_id)
    ensure_eligible(batch, worker)
    leases_expire(now=now, batch=batch)  # frees stale slots, this worker's stale lease among them
    stale = None
    for _ in range(_RETRIES):
        try:
            with transaction.atomic():
                if stale is not None:
                    lease_expire(stale, now=now)
                if not take_slot(task.pk):
                    return None
                return _create_assignment(
                    task, batch, worker, now, provider_assignment_id=provider_assignment_id,
                    provider_hit_id=provider_hit_id, provider_submit_to=submit_to,
                )
        except IntegrityError:
            pass  # rolled back, slot and all; which unique index refused it decides what next
        existing = Assignment.objects.filter(task=task, worker=worker).first()
        if existing is not None:  # this same arrival, concurrently (a double-clicked accept)
            return _arrived_again(existing, provider_assignment_id)
        if provider_assignment_id and Assignment.objects.filter(
                provider_assignment_id=provider_assignment_id).exists():
            raise AssignmentConflict("This assignment id is already in use.")
        held = held_lease(batch, worker)
        if held is not None and held.expires_at > now:
            raise AssignmentConflict("You are already working on another task of this batch: "
                                     "submit or return it before accepting a new one.")
        stale = held  # past its deadline, but a concurrent sweep held it when ours ran
    return None


def _arrived_again(existing: Assignment, provider_assignment_id: str) -> Assignment:
    if provider_assignment_id and existing.provider_assignment_id not in (
        "", provider_assignment_id,
    ):
        raise AssignmentConflict("You already worked on this task under another assignment.")
    return existing


def take_slot(task_id: int) -> bool:
    """Take one of the task's N slots if one is free (a conditional UPDATE; never over N)."""
    return bool(Task.objects.filter(pk=task_id, slots_taken__lt=F("max_assignments"))
                .update(slots_taken=F("slots_taken") + 1))


def _create_assignment(task: Task, batch: Batch, worker: Worker, now: datetime, **provider):
    assignment = _new_assignment(task, batch, worker, now, **provider)
    assignment.save(force_insert=True)
    return assignment


def _new_assignment(task, batch: Batch, worker: Worker, now: datetime, **provider):
    return Assignment(
        task=task,
        batch=batch,
        worker=worker,
        status=Assignment.Status.LEASED,
        claimed_at=now,
        expires_at=now + timedelta(seconds=batch.lease_seconds),
        hit_type_version=get_hit_type(batch.hit_type).version,
        **provider,
    )
