"""The engine's hand-written statements: the task page's assignment read, the worker's place in
a batch, the held lease and the next-task claim. They follow the rules of
``annotation.core.sql`` (names from ``_meta``, every value a parameter but ``_LEASED``, rows
loaded through the ORM's converters, prepared on PostgreSQL) and run on its cursor; they live
here because they know the engine's models (``tests/annotation/test_rows.py``)."""
from functools import cache

from django.db import connection, transaction

from annotation.core.sql import ModelColumns, db_value, fetch_one, savepoint_if_nested
from annotation.models import Assignment, Batch, Task, Worker


def _literal(value: str) -> str:
    """A string constant as SQL; only for identifier-like enum values (no quoting needed)."""
    if not value.isidentifier():
        raise ValueError(f"not a plain enum value: {value!r}")
    return f"'{value}'"


_LEASED = _literal(Assignment.Status.LEASED)


_LEASED = _literal(Assignment.Status.LEASED)


# ---------------------------------------------------------------- the task page and submit

def assignment_with_context(assignment_uuid) -> Assignment | None:
    """The assignment by its public id, with its task, batch and worker loaded."""
    columns, sql = _assignment_query()
    row = fetch_one(sql, [db_value(Assignment, "uuid", assignment_uuid)])
    if row is None:
        return None
    assignment, i = columns[0].load(row)
    assignment.task, i = columns[1].load(row, i)
    assignment.batch, i = columns[2].load(row, i)
    assignment.worker, _ = columns[3].load(row, i)
    return assignment


@cache
def _assignment_query():
    columns = a, t, b, w = (ModelColumns(Assignment, "a"), ModelColumns(Task, "t"),
                            ModelColumns(Batch, "b"), ModelColumns(Worker, "w"))
    select = ", ".join(c.sql() for c in columns)
    return columns, (
        f"SELECT {select} FROM {a.table()}"
        f" JOIN {t.table()} ON {t.col('id')} = {a.col('task')}"
        f" JOIN {b.table()} ON {b.col('id')} = {a.col('batch')}"
        f" JOIN {w.table()} ON {w.col('id')} = {a.col('worker')}"
        f" WHERE {a.col('uuid')} = %s"
    )


def submitted_and_total(batch_id: int, worker_id: int) -> tuple[int, int]:
    """(tasks of the batch the worker has submitted, the worker's own tasks there: those
    submitted, the one held, and those still open to them — a free slot and none of their
    assignments, as the claim picks), in one statement. The home page's "left for you" is
    the last two."""
    submitted, own = fetch_one(_position_sql(), [batch_id, worker_id] * 4)
    return submitted, own


@cache
def _position_sql() -> str:
    a, t = ModelColumns(Assignment, "a"), ModelColumns(Task, "t")
    mine = ModelColumns(Assignment, "m")
    submitted = (f"SELECT COUNT(*) FROM {a.table()} WHERE {a.col('batch')} = %s"
                 f" AND {a.col('worker')} = %s AND {a.col('submitted_at')} IS NOT NULL")
    held = (f"SELECT COUNT(*) FROM {a.table()} WHERE {a.col('batch')} = %s"
            f" AND {a.col('worker')} = %s AND {a.col('status')} = "
            f"'{Assignment.Status.LEASED.value}'")
    open_ = (f"SELECT COUNT(*) FROM {t.table()} WHERE {t.col('batch')} = %s"
             f" AND {t.col('slots_taken')} < {t.col('max_assignments')}"
             f" AND NOT EXISTS (SELECT 1 FROM {mine.table()} WHERE {mine.col('task')} ="
             f" {t.col('pk')} AND {mine.col('worker')} = %s)")
    return f"SELECT ({submitted}), ({submitted}) + ({held}) + ({open_})"


# ---------------------------------------------------------------------------------- claims

def held_lease(batch: Batch, worker: Worker) -> Assignment | None:
    """The worker's leased assignment in ``batch`` (at most one: the partial unique index),
    live or past its deadline, with its task loaded."""
    (a, t), sql = _held_lease_query()
    row = fetch_one(sql, [batch.pk, worker.pk])
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
        f"SELECT {a.sql()}, {t.sql()} FROM {a.table()}"
        f" JOIN {t.table()} ON {t.col('id')} = {a.col('task')}"
        f" WHERE {a.col('batch')} = %s AND {a.col('worker')} = %s"
        f" AND {a.col('status')} = {_LEASED}"  # a literal: see the module's docstring
    )


def claim_next_task(assignment: Assignment) -> Assignment | None:
    """Take a slot on the first task of ``assignment.batch`` with one free that
    ``assignment.worker`` never held, and insert ``assignment`` (unsaved, its task unset) for
    it; the saved assignment with its task loaded, or None when no task qualifies.

    One statement builds the slot-taking ``UPDATE … RETURNING`` for both databases: its
    candidate row is locked ``FOR UPDATE SKIP LOCKED`` where the database can (PostgreSQL), so
    concurrent claims spread over tasks instead of queueing on one row; SQLite serializes
    writers instead. PostgreSQL runs it with the INSERT as one statement (data-modifying CTEs),
    so a claim is one round trip, atomic on its own; SQLite has no data-modifying CTEs and
    inserts next, in the same transaction. Either way a refused INSERT (the one-lease index,
    ``IntegrityError``) rolls the slot back with it.
    """
    batch_id, worker_id = assignment.batch_id, assignment.worker_id
    if connection.vendor == "postgresql":
        fields, slot, sql = _claim_statement()
        values = [f.get_db_prep_save(f.pre_save(assignment, True), connection)
                  for f in fields if f.name != "task"]
        with savepoint_if_nested():
            row = fetch_one(sql, [batch_id, worker_id, *values])
        if row is None:
            return None
        assignment.pk = row[0]
        assignment.task, _ = slot.load(row, 1)
        assignment._state.adding, assignment._state.db = False, connection.alias
        return assignment
    returned, sql = _take_next_slot()
    with transaction.atomic():
        row = fetch_one(sql, [batch_id, worker_id])
        if row is None:
            return None
        assignment.task, _ = returned.load(row)
        assignment.save(force_insert=True)
    return assignment


@cache
def _take_next_slot():
    """``UPDATE task … WHERE id = (the candidate) … RETURNING`` the task: the slot-taking
    half of a claim, shared by both databases' statements."""
    t, a, returned = ModelColumns(Task, "t"), ModelColumns(Assignment, "a"), ModelColumns(Task)
    lock = (" FOR UPDATE SKIP LOCKED"
            if connection.features.has_select_for_update_skip_locked else "")
    candidate = (
        f"SELECT {t.col('id')} FROM {t.table()} WHERE {t.col('batch')} = %s"
        f" AND {t.col('slots_taken')} < {t.col('max_assignments')}"
        f" AND NOT EXISTS (SELECT 1 FROM {a.table()}"
        f" WHERE {a.col('task')} = {t.col('id')} AND {a.col('worker')} = %s)"
        f" ORDER BY {t.col('position')} LIMIT 1{lock}"
    )
    slots, limit = returned.col("slots_taken"), returned.col("max_assignments")
    return returned, (
        f"UPDATE {returned.name()} SET {slots} = {slots} + 1"
        f" WHERE {returned.col('id')} = ({candidate}) AND {slots} < {limit}"
        f" RETURNING {returned.sql()}"
    )


@cache
def _claim_statement():
    """PostgreSQL: the slot-taking UPDATE and the assignment's INSERT as one statement."""
    _, take_slot = _take_next_slot()
    slot, new = ModelColumns(Task, "slot"), ModelColumns(Assignment)
    quote = connection.ops.quote_name
    fields = [f for f in Assignment._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(quote(f.column) for f in fields)
    values = ", ".join(slot.col("id") if f.name == "task" else "%s" for f in fields)
    return fields, slot, (
        f"WITH slot AS ({take_slot}),"
        f" created AS (INSERT INTO {new.name()} ({columns}) SELECT {values} FROM slot"
        f" RETURNING {new.col('pk')})"
        f" SELECT created.{new.col('pk')}, {slot.sql()} FROM created, slot"
    )
