"""The hand-written statements' plumbing and rules, and those that know no engine model.

Only statements a benchmark shows paying their keep are here (``bench/hot_path_sql.py``, ORM
against these on PostgreSQL, prepared as production runs them; figures in the commit that
last changed this list): the few every task page, submit, claim and signed-in request make.
Building the ORM's query cost more CPU than PostgreSQL spent running it, and preparing the
statement once per connection saves its planning (3-10x its execution for the assignment and
user reads). Everything else the app writes or reads goes through the ORM.

Rules for what is here:

- table and column names come from the models' ``_meta``, quoted by the connection;
- every value is a parameter, except one: the ``leased`` status in the held-lease lookup,
  a literal made from ``Assignment.Status`` (``annotation.engine.statements._LEASED``),
  because a prepared statement's generic plan can use the partial unique index over leased
  rows only when it sees the constant (with the status as a parameter PostgreSQL never
  settled on a generic plan: it re-planned on every execution, which preparing avoids);
- rows load through the same converters the ORM applies, into ordinary model instances, so
  callers get exactly what the ORM would have returned (``tests/annotation/test_rows.py``).

Preparation: on PostgreSQL these statements run on a server-binding cursor that asks psycopg
to prepare each one on first use per connection, through Django's cursor wrapper (so DEBUG's
query log, ``assertNumQueries`` and execute wrappers see them and change nothing). One
setting decides whether psycopg prepares: ``DATABASE_PREPARED_STATEMENTS`` (default on; see
config/settings.py), which tests use too. Other databases run the same statements on Django's
cursor.

The statements that read and write the engine's models (the task page, the claim) are in
``annotation.engine.statements``: core knows no domain model.
"""
from contextlib import contextmanager, nullcontext
from functools import cache, cached_property

from django.contrib.auth import get_user_model
from django.db import (
    DatabaseError,
    DataError,
    IntegrityError,
    connection,
    connections,
    transaction,
)


def savepoint_if_nested(using: str = "default"):
    """A savepoint inside a caller's transaction, nothing in autocommit: a statement that may
    be refused (a unique key taken) must not abort the caller's transaction, and on its own it
    is already atomic (no BEGIN/COMMIT round trips for it)."""
    return transaction.atomic(using=using) if connections[using].in_atomic_block else nullcontext()


class ModelColumns:
    """A model's concrete columns under a table alias: the SELECT list and the row loader.
    Without an alias, bare column names (an UPDATE's RETURNING list)."""

    def __init__(self, model, alias: str = "", using: str = "default"):
        self.model, self.alias, self.using = model, alias, using
        self.fields = model._meta.concrete_fields
        self.attnames = [f.attname for f in self.fields]
        self._pk_index = self.attnames.index(model._meta.pk.attname)

    def col(self, field_name: str) -> str:
        """One column, quoted, under the alias: ``t."batch_id"`` for ``col("batch")``."""
        meta = self.model._meta
        field = meta.pk if field_name == "pk" else meta.get_field(field_name)
        column = connections[self.using].ops.quote_name(field.column)
        return f"{self.alias}.{column}" if self.alias else column

    def sql(self) -> str:
        return ", ".join(self.col(f.name) for f in self.fields)

    def name(self) -> str:
        return connections[self.using].ops.quote_name(self.model._meta.db_table)

    def table(self) -> str:
        """``table alias`` for a FROM or JOIN clause."""
        return f"{self.name()} {self.alias}"

    @cached_property
    def _converters(self):
        connection = connections[self.using]
        out = []
        for i, field in enumerate(self.fields):
            col = field.get_col(self.alias or self.model._meta.db_table)
            fns = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
            if fns:
                out.append((i, col, fns))
        return out

    def load(self, row, start: int = 0):
        """The instance held by ``row[start:start + len(fields)]`` (None when its pk is NULL,
        as after a LEFT JOIN that found nothing) and the index just after it."""
        end = start + len(self.fields)
        values = list(row[start:end])
        connection = connections[self.using]
        for i, col, fns in self._converters:
            for fn in fns:
                values[i] = fn(values[i], col, connection)
        if values[self._pk_index] is None:
            return None, end
        return self.model.from_db(self.using, self.attnames, values), end


def db_value(model, field_name: str, value, using: str = "default"):
    """``value`` as the database stores ``model.field_name`` (e.g. a UUID as hex on SQLite)."""
    field = model._meta.get_field(field_name)
    return field.get_db_prep_value(value, connections[using], prepared=False)


@contextmanager
def statement_cursor(using: str = "default"):
    """The cursor every statement here runs on: Django's cursor wrapper (query log, execute
    wrappers, error translation) around, on PostgreSQL, a psycopg cursor that binds parameters
    server-side and prepares the statement on first use per connection; psycopg skips the
    preparing when the connection's ``prepare_threshold`` is None (DATABASE_PREPARED_STATEMENTS=0).
    A statement that fails for another reason than its data (e.g. a migration changed a
    column under it) marks the connection, which is then retired (config/postgresql)."""
    connection = connections[using]
    with connection.cursor() as cursor:  # health check, connect, thread check
        if connection.vendor != "postgresql":
            yield cursor
            return
        with connection.wrap_database_errors:
            raw = _preparing_cursor_class()(connection.connection)
        with connection._prepare_cursor(raw) as prepared:
            try:
                yield prepared
            except DatabaseError as exc:
                if not isinstance(exc, (IntegrityError, DataError)):
                    connection.prepared_statement_failed = True
                raise


@cache
def _preparing_cursor_class():
    import psycopg

    class PreparingCursor(psycopg.Cursor):
        """Server-side parameters; every statement prepared (psycopg keeps the names)."""

        def execute(self, query, params=None, **kwargs):
            return super().execute(query, params, prepare=True, **kwargs)

    return PreparingCursor


def fetch_one(sql: str, params):
    with statement_cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def save_if(instance, fields: list[str], where: dict) -> bool:
    """``UPDATE`` the instance's ``fields`` from its attributes, only while the row still
    matches ``where`` (field name → value); True when it did. A compare-and-set in one statement
    (a submit: the lease this request read becomes the submission)."""
    model = instance._meta.model
    sql = _save_if_sql(model, tuple(fields), tuple(where))
    params = []
    for name in fields:
        field = model._meta.get_field(name)
        params.append(field.get_db_prep_save(getattr(instance, field.attname), connection))
    params.append(instance.pk)
    params += [db_value(model, name, value) for name, value in where.items()]
    with statement_cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount == 1


@cache
def _save_if_sql(model, fields: tuple, where: tuple) -> str:
    m = ModelColumns(model)
    assignments = ", ".join(f"{m.col(name)} = %s" for name in fields)
    conditions = "".join(f" AND {m.col(name)} = %s" for name in where)
    return f"UPDATE {m.name()} SET {assignments} WHERE {m.col('pk')} = %s{conditions}"


# ------------------------------------------------------------------------- every request

def user_with_roles(user_id, role_names: tuple[str, ...]):
    """The user by primary key and, per role name, whether they are in that group; None
    when there is no such user."""
    columns, sql = _user_with_roles_query(len(role_names))
    row = fetch_one(sql, [*role_names, user_id])
    if row is None:
        return None
    user, i = columns.load(row)
    return user, [bool(flag) for flag in row[i:]]


@cache
def _user_with_roles_query(roles: int):
    user_model = get_user_model()
    u = ModelColumns(user_model, "u")
    link = ModelColumns(user_model.groups.through, "l")
    group = ModelColumns(user_model.groups.field.related_model, "g")
    link_user = user_model.groups.field.m2m_field_name()
    link_group = user_model.groups.field.m2m_reverse_field_name()
    member = (f"EXISTS (SELECT 1 FROM {link.table()}"
              f" JOIN {group.table()} ON {group.col('pk')} = {link.col(link_group)}"
              f" WHERE {link.col(link_user)} = {u.col('pk')} AND {group.col('name')} = %s)")
    flags = "".join(f", {member}" for _ in range(roles))
    return u, f"SELECT {u.sql()}{flags} FROM {u.table()} WHERE {u.col('pk')} = %s"


def advisory_xact_lock(key: int, using: str = "default") -> None:
    """Hold a PostgreSQL advisory lock until the caller's transaction ends (the ORM has none);
    elsewhere nothing: SQLite runs write transactions one at a time (``IMMEDIATE``)."""
    conn = connections[using]
    if conn.vendor == "postgresql":
        with conn.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


def try_session_lock(namespace: int, key: int, using: str = "default") -> bool:
    """Take a PostgreSQL advisory lock held by this connection until ``session_unlock`` (or
    until the connection closes: a killed process leaves none behind); False when another
    session holds it. Elsewhere always True (no other process to see it)."""
    conn = connections[using]
    if conn.vendor != "postgresql":
        return True
    with conn.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [namespace, key])
        return bool(cursor.fetchone()[0])


def session_unlock(namespace: int, key: int, using: str = "default") -> None:
    conn = connections[using]
    if conn.vendor == "postgresql":
        with conn.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [namespace, key])


def session_locks_held(namespace: int, using: str = "default") -> list[int]:
    """The keys of ``namespace``'s advisory locks held by any session on this database."""
    conn = connections[using]
    if conn.vendor != "postgresql":
        return []
    with conn.cursor() as cursor:
        cursor.execute(
            "SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND objsubid = 2 AND classid = %s::bigint::oid"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            [namespace])
        return [row[0] for row in cursor.fetchall()]
