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


def django_on_fresh_database(name: str, **env: str) -> None:
    """Point Django at a fresh database named after ``name`` (production settings, DEBUG off,
    tasks in-process, ``env`` on top), set it up and migrate it."""
    os.environ["DATABASE_URL"] = fresh_database(name)
    os.environ.update(SECRET_KEY="bench-only", DJANGO_SETTINGS_MODULE="config.settings",
                      DEBUG="0", **env)
    os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def cast_votes_now(n: int, copied_from: str = "SELECT * FROM judging_judgment ORDER BY id") -> None:
    """``n`` judgments cast just now (copies of the first ``n`` rows ``copied_from`` selects,
    a millisecond apart, the last one now): what arrives while a board is live, after the time
    its counts were folded to."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO judging_judgment (uuid, comparison_id, source, annotator, kind, choice, "
            "feedback, turn, meta, template_version, prompt_hash, import_file, rejected, "
            "created_at, study_id) SELECT gen_random_uuid(), comparison_id, source, annotator, "
            "kind, choice, '', turn, '{}', '', '', '', false, now() - (%s - row_number() OVER "
            f"(ORDER BY id)) * interval '1 millisecond', study_id FROM ({copied_from} LIMIT %s) j",
            [n, n])
