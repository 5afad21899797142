"""Django's PostgreSQL backend with a health check that costs no round trip when all is well.

With ``CONN_HEALTH_CHECKS`` Django pings a kept connection (``SELECT 1``) before each request
reuses it, so a database restart costs no request an error (tests/integration/
test_crash_database). That ping is one more round trip per request on the annotators' hot path.
An idle connection has nothing to read: when the server closes it (restart, terminated
backend) the socket turns readable (its goodbye message, then EOF). So the socket is polled
first, and only a readable one is pinged the usual way.
"""
import select

from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self):
        conn = self.connection
        if conn is None or conn.closed:
            return False
        try:
            readable, _, _ = select.select([conn.fileno()], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable or super().is_usable()
