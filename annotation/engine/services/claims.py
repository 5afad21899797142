"""Claiming work: "give me my next task" and "this marketplace assignment is mine".

A claim takes a slot with a conditional ``UPDATE task SET slots_taken = slots_taken + 1
WHERE slots_taken < max_assignments`` and creates the assignment in the same transaction; the
candidate row is picked with ``SELECT … FOR UPDATE SKIP LOCKED`` on PostgreSQL so concurrent
workers spread over tasks instead of queueing on one row. SQLite serializes writers instead.

A worker holds at most one lease per batch, and the database holds that rule (a partial unique
index over leased rows, ``one_lease_per_worker_and_batch``), so it covers every path that writes
a lease and every race: of one worker's concurrent claims (two tabs, a double click, a script)
one inserts the lease and the others' inserts are refused, rolling their slot back; they answer
with the lease that won. A lease past its deadline that the sweep has not expired yet still
holds that place, so the worker's next claim expires it in its own transaction first.
"""
from contextlib import nullcontext
from datetime import datetime, timedelta
from functools import cache

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from annotation.core.sql import (
    ModelColumns,
    column_list,
    insert_params,
    insertable_fields,
    statement_cursor,
)
from annotation.engine.hit_types import get_hit_type
from annotation.engine.services.errors import AssignmentConflict, NotEligible
from annotation.engine.services.leases import lease_expire, leases_expire
from annotation.models import Assignment, Batch, QualificationGrant, Task, Worker

_RETRIES = 5


def ensure_eligible(batch: Batch, worker: Worker) -> None:
    if batch.status != Batch.Status.ACTIVE:
        raise NotEligible("This batch is not accepting work right now.")
    if worker.blocked:
        raise NotEligible("Your account is blocked from new work.")
    if batch.required_qualification_id and not QualificationGrant.objects.filter(
        qualification_id=batch.required_qualification_id, worker=worker, revoked=False
    ).exists():
        raise NotEligible(f"This batch requires the “{batch.required_qualification}” qualification.")


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
    held = _held_lease(batch, worker)
    swept = False
    claim_free_task = (_claim_in_one_statement if connection.vendor == "postgresql"
                       else _claim_in_steps)
    for _ in range(_RETRIES):
        if held is not None and held.expires_at > now:
            return held
        try:
            claimed = claim_free_task(batch, worker, now, stale=held)
        except IntegrityError:
            # The unique index refused a second lease: this worker's concurrent claim (another
            # tab) committed theirs first. Ours rolled back, slot and all; theirs is the lease.
            held = _held_lease(batch, worker)
            continue
        held = None  # a stale lease, if any, was expired with that claim
        if claimed is _RETRY:
            continue
        if claimed is not None:
            return claimed
        if swept:
            return None
        # Nothing free: stale leases may be holding slots. Free them (lazily) and look again.
        swept = True
        if not leases_expire(now=now, batch=batch):
            return None
    return None


_RETRY = object()


def _claim_in_steps(batch: Batch, worker: Worker, now: datetime, stale: Assignment | None):
    """Expire the worker's stale lease if any, pick, take a slot, create — in one transaction
    (SQLite serializes these writers)."""
    with transaction.atomic():
        if stale is not None:
            lease_expire(stale, now=now)
        task = _next_candidate(batch, worker)
        if task is None:
            return None
        if not take_slot(task.pk):
            return _RETRY
        task.slots_taken += 1  # as the UPDATE left the row (no other writer meanwhile)
        return _create_assignment(task, batch, worker, now)


def _claim_in_one_statement(batch: Batch, worker: Worker, now: datetime,
                            stale: Assignment | None):
    """PostgreSQL: the same three steps as one statement (a locking SELECT … SKIP LOCKED, the
    conditional slot UPDATE and the INSERT chained as data-modifying CTEs), so a claim is one
    round trip and atomic on its own; a savepoint only when a transaction is already open.
    The claimed task comes back in the same statement. A stale lease of the worker's (rare:
    the sweep runs every minute) is expired first, in a transaction with the claim.

    A concurrent claim by the same worker that inserted first makes the INSERT wait for that
    transaction and then fail on the unique index; the whole statement (the slot too) rolls
    back."""
    assignment = _new_assignment(None, batch, worker, now)
    fields, task_columns, sql = _claim_statement()
    values = insert_params(assignment, [f for f in fields if f.name != "task"])
    own_transaction = stale is not None or connection.in_atomic_block
    with transaction.atomic() if own_transaction else nullcontext():
        if stale is not None:
            lease_expire(stale, now=now)
        with statement_cursor() as cursor:
            cursor.execute(sql, [batch.pk, worker.pk, *values])
            row = cursor.fetchone()
    if row is None:
        return None
    assignment.pk = row[0]
    assignment.task, _ = task_columns.load(row, 1)
    assignment._state.adding, assignment._state.db = False, connection.alias
    return assignment


@cache
def _claim_statement():
    t, slot = ModelColumns(Task, "t"), ModelColumns(Task, "slot")
    _, candidate = _candidate_query(True)
    quote = connection.ops.quote_name
    fields = insertable_fields(Assignment)
    values = ", ".join("slot.id" if f.name == "task" else "%s" for f in fields)
    return fields, slot, (
        f"WITH candidate AS ({candidate}),"
        f" slot AS (UPDATE {t.table()} SET slots_taken = t.slots_taken + 1"
        " FROM candidate c WHERE t.id = c.id AND t.slots_taken < t.max_assignments"
        f" RETURNING {t.sql()}),"
        f" created AS (INSERT INTO {quote(Assignment._meta.db_table)} ({column_list(fields)})"
        f" SELECT {values} FROM slot RETURNING {quote(Assignment._meta.pk.column)})"
        f" SELECT created.{quote(Assignment._meta.pk.column)}, {slot.sql()} FROM created, slot"
    )


def _next_candidate(batch: Batch, worker: Worker):
    """The first task with a free slot this worker has never held, locked for this claim
    (rows other claims hold are skipped, so concurrent workers spread over tasks)."""
    columns, sql = _candidate_query(connection.features.has_select_for_update_skip_locked)
    with statement_cursor() as cursor:
        cursor.execute(sql, [batch.pk, worker.pk])
        row = cursor.fetchone()
    return columns.load(row)[0] if row else None


@cache
def _candidate_query(skip_locked: bool):
    t, a = ModelColumns(Task, "t"), ModelColumns(Assignment, "a")
    return t, (
        f"SELECT {t.sql()} FROM {t.table()} WHERE t.batch_id = %s"
        " AND t.slots_taken < t.max_assignments"
        f" AND NOT EXISTS (SELECT 1 FROM {a.table()} WHERE a.task_id = t.id AND a.worker_id = %s)"
        " ORDER BY t.position LIMIT 1" + (" FOR UPDATE OF t SKIP LOCKED" if skip_locked else "")
    )


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
        held = _held_lease(batch, worker)
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


def _held_lease(batch: Batch, worker: Worker):
    """The worker's lease in ``batch`` (at most one: the unique index), live or past its deadline
    but not yet expired; with its task loaded. One indexed lookup."""
    (a, t), sql = _held_lease_query()
    with statement_cursor() as cursor:
        cursor.execute(sql, [batch.pk, worker.pk])
        row = cursor.fetchone()
    if row is None:
        return None
    assignment, i = a.load(row)
    assignment.task, _ = t.load(row, i)
    assignment.batch, assignment.worker = batch, worker
    return assignment


@cache
def _held_lease_query():
    a, t = ModelColumns(Assignment, "a"), ModelColumns(Task, "t")
    return (a, t), (
        f"SELECT {a.sql()}, {t.sql()} FROM {a.table()} JOIN {t.table()} ON t.id = a.task_id"
        # The status is written into the statement, not passed: a prepared statement's generic
        # plan can use the partial unique index only when it sees the constant.
        f" WHERE a.batch_id = %s AND a.worker_id = %s AND a.status = '{Assignment.Status.LEASED}'"
    )


def take_slot(task_id: int) -> bool:
    """Take one of the task's N slots if one is free (a conditional UPDATE; never over N)."""
    with statement_cursor() as cursor:
        cursor.execute(_take_slot_sql(), [task_id])
        return cursor.rowcount == 1


@cache
def _take_slot_sql() -> str:
    table = connection.ops.quote_name(Task._meta.db_table)
    return (f"UPDATE {table} SET slots_taken = slots_taken + 1"
            " WHERE id = %s AND slots_taken < max_assignments")


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
