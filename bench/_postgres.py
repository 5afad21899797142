"""A fresh, empty PostgreSQL database for a benchmark, on the server `scripts/services.sh`
started (TEST_DATABASE_URL)."""
import os
import sys


def fresh_database(name: str) -> str:
    """Drop and re-create a database named after ``name`` and TEST_DATABASE_URL's database
    (``<test db>_<name>``, so runs made for different test databases never drop each other's);
    returns its URL."""
    base = os.environ.get("TEST_DATABASE_URL")
    if not base or not base.startswith("postgres"):
        sys.exit("Set TEST_DATABASE_URL to a PostgreSQL server (scripts/services.sh start).")
    import psycopg

    server, _, test_db = base.rpartition("/")
    name = f"{test_db}_{name}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{server}/{name}"
