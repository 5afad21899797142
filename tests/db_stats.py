"""Planner statistics for rows a test just wrote in bulk.

A test database's tables were last analyzed (if ever) when they were empty, so PostgreSQL
plans a query over thousands of freshly inserted verdicts as if each table held one row. The
superseded-verdict check no longer depends on it (its index:
``tests/judging/test_verdict_generations_plan.py``), but the joins around it still take
seconds instead of milliseconds under such statistics. In production autovacuum keeps them;
here ANALYZE runs in the test's own transaction (it sees the uncommitted rows, and its
statistics roll back with them)."""
from django.db import connection

TABLES = ("judging_judgment", "judging_comparison", "judging_response", "annotation_instance")


def analyze(tables=TABLES) -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {', '.join(tables)}")
