"""Django's PostgreSQL backend with a health check that costs no round trip when all is well,
and that retires a connection whose prepared statements went bad.

With ``CONN_HEALTH_CHECKS`` Django pings a kept connection (``SELECT 1``) before each request
reuses it, so a database restart costs no request an error (tests/integration/
test_crash_database). That ping is one more round trip per request on the annotators' hot path.
An idle connection has nothing to read: when the server closes it (restart, terminated
backend) the socket turns readable (its goodbye message, then EOF). So the socket is polled
first, and pinged the usual way only when it is readable, not idle, or after an error.

The hot path's prepared statements (annotation.core.sql) stay valid until the schema under them
changes (a migration run from another machine: "cached plan must not change result type") or
a pooler drops them. A failure of one marks the connection, and Django's end-of-request check
then closes it instead of keeping it: the next request starts with no stale statements.
Those statements bind their parameters server-side, so a recorded query (DEBUG,
assertNumQueries) shows them as Django shows server-binding cursors: the values composed in.
"""
import select

from django.db.backends.postgresql import base, operations
from psycopg import ClientCursor, errors
from psycopg.pq import TransactionStatus


class DatabaseOperations(operations.DatabaseOperations):
    def last_executed_query(self, cursor, sql, params):
        if isinstance(cursor, ClientCursor):
            return super().last_executed_query(cursor, sql, params)
        try:
            return self.compose_sql(sql, params)
        except errors.DataError:
            return None


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
    prepared_statement_failed = False

    def init_connection_state(self):
        super().init_connection_state()
        self.prepared_statement_failed = False

    def is_usable(self):
        conn = self.connection
        if conn is None or conn.closed or self.prepared_statement_failed:
            return False
        if self.errors_occurred or conn.info.transaction_status != TransactionStatus.IDLE:
            return super().is_usable()
        poller = select.poll()
        poller.register(conn.fileno(), select.POLLIN)
        return not poller.poll(0) or super().is_usable()
