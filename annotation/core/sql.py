"""Hand-written statements for the annotators' hot path; rows load into ordinary model instances.

Profiling the task page and the submit under load showed the ORM spending more CPU building a
query than the database spends running it (the assignment-with-task-batch-worker lookup alone
was a third of a request). The few queries every task page and submit make are written once
here; their column lists still come from the models' ``_meta`` and values pass through the
same database converters the ORM applies (JSON, booleans and UUIDs on SQLite, ...), so the
instances are exactly what the ORM would have returned.
"""
from contextlib import contextmanager
from functools import cache, cached_property

from django.db import connections


class ModelColumns:
    """A model's concrete columns under a table alias: the SELECT list and the row loader."""

    def __init__(self, model, alias: str, using: str = "default"):
        self.model, self.alias, self.using = model, alias, using
        self.fields = model._meta.concrete_fields
        self.attnames = [f.attname for f in self.fields]
        self._pk_index = self.attnames.index(model._meta.pk.attname)

    def sql(self) -> str:
        quote = connections[self.using].ops.quote_name
        return ", ".join(f"{self.alias}.{quote(f.column)}" for f in self.fields)

    def table(self) -> str:
        """``table alias`` for a FROM or JOIN clause."""
        return f"{connections[self.using].ops.quote_name(self.model._meta.db_table)} {self.alias}"

    @cached_property
    def _converters(self):
        connection = connections[self.using]
        out = []
        for i, field in enumerate(self.fields):
            col = field.get_col(self.alias)
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


def fetch_one(sql: str, params, using: str = "default"):
    with statement_cursor(using) as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


@contextmanager
def statement_cursor(using: str = "default"):
    """A cursor for these fixed statements. On PostgreSQL it prepares each statement on first
    use per connection: planning them cost more than running them (pg_stat_statements under
    load: 0.37 ms planning vs 0.11 ms executing the assignment lookup, 0.33 vs 0.03 ms the
    user-with-roles read). Django's own cursor where that does not apply: other databases,
    queries being recorded (DEBUG, tests counting queries), execute wrappers installed, or
    prepared statements switched off (DATABASE_PREPARED_STATEMENTS=0, e.g. behind PgBouncer
    in transaction mode)."""
    connection = connections[using]
    with connection.cursor() as cursor:
        raw = connection.connection
        if (connection.vendor != "postgresql" or connection.queries_logged
                or connection.execute_wrappers or raw.prepare_threshold is None):
            yield cursor
            return
        with connection.wrap_database_errors, _preparing_cursor_class()(raw) as prepared:
            try:
                yield prepared
            except Exception as exc:
                if _may_be_stale(exc):  # see config.postgresql: the connection is retired
                    connection.prepared_statement_failed = True
                raise


def _may_be_stale(exc: Exception) -> bool:
    """Any database error but a constraint or a bad value: those say nothing about the
    prepared statement itself."""
    import psycopg

    return isinstance(exc, psycopg.Error) and not isinstance(
        exc, (psycopg.IntegrityError, psycopg.DataError))


@cache
def _preparing_cursor_class():
    import psycopg

    class PreparingCursor(psycopg.Cursor):
        """Server-side parameters; every statement prepared (psycopg keeps the names)."""

        def execute(self, query, params=None, **kwargs):
            return super().execute(query, params, prepare=True, **kwargs)

    return PreparingCursor


def insertable_fields(model) -> list:
    """The fields an INSERT writes: every concrete one but the auto primary key."""
    return [f for f in model._meta.concrete_fields if not f.primary_key]


def column_list(fields, using: str = "default") -> str:
    quote = connections[using].ops.quote_name
    return ", ".join(quote(f.column) for f in fields)


def insert_params(instance, fields, using: str = "default") -> list:
    """``fields``' values of an unsaved ``instance`` as an INSERT stores them (defaults and
    ``pre_save`` applied, e.g. ``auto_now_add``)."""
    connection = connections[using]
    return [f.get_db_prep_save(f.pre_save(instance, True), connection) for f in fields]


def save_if(instance, fields: list[str], where: dict, using: str = "default") -> bool:
    """``UPDATE`` the instance's ``fields`` from its attributes, only while the row still
    matches ``where`` (field name → value); True when it did. A compare-and-set in one statement
    (the common case of a state change, without a locking read first)."""
    model = instance._meta.model
    sql = _save_if_sql(model, tuple(fields), tuple(where), using)
    connection = connections[using]
    params = []
    for name in fields:
        field = model._meta.get_field(name)
        params.append(field.get_db_prep_save(getattr(instance, field.attname), connection))
    params.append(instance.pk)
    params += [db_value(model, name, value, using) for name, value in where.items()]
    with statement_cursor(using) as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount == 1


@cache
def _save_if_sql(model, fields: tuple, where: tuple, using: str) -> str:
    quote = connections[using].ops.quote_name
    column = lambda name: quote(model._meta.get_field(name).column)  # noqa: E731
    assignments = ", ".join(f"{column(name)} = %s" for name in fields)
    conditions = "".join(f" AND {column(name)} = %s" for name in where)
    return (f"UPDATE {quote(model._meta.db_table)} SET {assignments}"
            f" WHERE {quote(model._meta.pk.column)} = %s{conditions}")
