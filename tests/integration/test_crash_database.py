"""Crash test: the database goes down and comes back while annotators submit: a database
restart or failover may cost workers a retry, never a lost or doubled submission.

The test starts its OWN throw-away PostgreSQL cluster (never the shared test server), points a
real gunicorn (config/gunicorn.py, 3 sync workers, persistent connections) at it, runs simulated
annotators, and in the middle of the run stops PostgreSQL (``pg_ctl stop -m fast``: open
transactions are rolled back, connections cut), keeps it down until clients have seen the
outage, and starts it again. Asserted:

- during the outage requests get a clean 503 with ``Retry-After`` (annotation.core.outage), never a
  bare 500 or a dropped connection: gunicorn and its workers stay up;
- a submit refused during the outage and retried afterwards is stored once;
- the service recovers by itself (same master and worker processes) and the batch is completed
  with every invariant holding: acknowledged submissions stored once with the answer sent,
  nothing half-written, no over-assignment, slot counters consistent;
- after an idle ``pg_ctl restart`` (every worker holding a now-dead pooled connection) requests
  succeed at once when ``CONN_HEALTH_CHECKS`` is on; with it off each worker fails once.
"""
import asyncio
import os
import time

import psycopg
import pytest
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.test import RequestFactory

from annotation.core.outage import DatabaseUnavailableMiddleware
from tests.support.http_load import (
    ACKNOWLEDGED,
    Annotator,
    Ledger,
    ThrowAwayPostgres,
    assert_invariants,
    pg_bin,
    run_async,
    seeded_server,
    until,
)

WORKERS = 3
ANNOTATORS = 8
TASKS, N = 24, 3
OUTAGE_AT = 16  # acknowledged submissions before PostgreSQL is stopped
OUTAGE_FAILURES = 6  # failed client requests seen before it is started again
RUN_TIMEOUT_S = 45
RECOVERY_TIMEOUT_S = 10


@pytest.fixture
def postgres():
    if not os.environ.get("TEST_DATABASE_URL", "").startswith("postgres"):
        pytest.skip("needs TEST_DATABASE_URL on PostgreSQL (scripts/services.sh start)")
    if pg_bin() is None:
        pytest.skip("PostgreSQL server binaries not installed (/usr/lib/postgresql/*/bin)")
    with ThrowAwayPostgres() as pg:
        with psycopg.connect(pg.url(), autocommit=True) as conn:
            conn.execute('CREATE DATABASE "crash"')
        yield pg


@pytest.mark.postgres
@pytest.mark.slow
def test_database_restart_under_load(postgres, tmp_path):
    database = postgres.url("crash")
    home_needs_db = "/work/"  # the annotator home reads the worker and open batches
    with seeded_server(database, workers=WORKERS, log_path=tmp_path / "gunicorn.log",
                       annotators=ANNOTATORS + 1, tasks=TASKS, n=N) as (server, seeded):
        sessions, probe_session = seeded["sessions"][:-1], seeded["sessions"][-1]
        master, workers_before = server.proc.pid, server.worker_pids()

        async def scenario():
            deadline = time.monotonic() + RUN_TIMEOUT_S
            ledger = Ledger()
            probe = Annotator(server.base, probe_session, seeded["batch"], ledger, deadline)
            annotators = [Annotator(server.base, key, seeded["batch"], ledger, deadline)
                          for key in sessions]
            seen = {}
            try:
                action, token = await probe.open_task()
                load = asyncio.ensure_future(asyncio.gather(*(a.run() for a in annotators)))
                await until(lambda: len(ledger.acknowledged) >= OUTAGE_AT or load.done(), 30,
                             f"{OUTAGE_AT} acknowledged submissions")
                assert not load.done(), "the load finished before the outage"
                down_at = time.monotonic()
                await asyncio.to_thread(postgres.stop)
                seen["down_s"] = time.monotonic() - down_at
                seen["submit"], _ = await probe.submit(action, token, retry=False)
                seen["next"], _ = await probe.send("GET", f"/work/batch/{seeded['batch']}/next/",
                                                   retry=False)
                await until(lambda: sum(1 for t, _, _ in ledger.failure_log if t > down_at)
                             >= OUTAGE_FAILURES, 10, "clients to hit the outage")
                acked_down = len(ledger.acknowledged)
                up_at = time.monotonic()
                await asyncio.to_thread(postgres.start)
                seen["start_s"] = time.monotonic() - up_at
                # the refused submit, retried by its client, goes through once PostgreSQL is up
                answer, attempts = await probe.submit(action, token)
                seen["recovered_s"] = time.monotonic() - up_at
                seen["retry"] = (answer.status_code, attempts)
                seen["outage_failures"] = [(kind, what) for t, kind, what in ledger.failure_log
                                           if down_at < t]
                await probe.run()
                await asyncio.wait_for(load, max(1.0, deadline - time.monotonic()))
                seen["acked_during_outage"] = acked_down
                # idle restart: every worker now holds a pooled connection the restart kills
                await asyncio.to_thread(postgres.restart)
                seen["after_idle_restart"] = [
                    getattr((await probe.send("GET", home_needs_db, retry=False))[0],
                            "status_code", None) for _ in range(2 * WORKERS)]
                return ledger, seen
            finally:
                for client in (probe, *annotators):
                    await client.aclose()

        started = time.monotonic()
        ledger, seen = run_async(scenario)
        elapsed = time.monotonic() - started
        assert server.proc.poll() is None and server.proc.pid == master
        workers_after = server.worker_pids()

    print(f"\ncrash-database: {elapsed:.1f} s; stop {seen['down_s']:.2f} s, start "
          f"{seen['start_s']:.2f} s, recovered {seen['recovered_s']:.2f} s after start; "
          f"failures {dict(ledger.failures)}; after idle restart {seen['after_idle_restart']}")
    # during the outage: a clean "try again", not a traceback page or a dropped connection
    for name in ("submit", "next"):
        response = seen[name]
        assert response is not None and response.status_code == 503, (name, response)
        assert "try again" in response.text and response.headers["Retry-After"].isdigit()
    kinds = {kind for kind, _ in seen["outage_failures"]}
    assert kinds == {"503"}, seen["outage_failures"][:10]
    assert set(ledger.failures) == {"503"}, ledger.failures
    # the service recovered by itself: same processes, the refused submit retried to success
    assert workers_after == workers_before, "gunicorn workers were replaced"
    assert seen["retry"][0] in ACKNOWLEDGED, seen["retry"]
    assert seen["recovered_s"] < RECOVERY_TIMEOUT_S
    assert ledger.unexpected == [], ledger.unexpected[:5]
    state = assert_invariants(database, seeded["batch"], ledger, complete=True)
    assert len(ledger.acknowledged) == TASKS * N == len(state["done"])
    # pooled connections after an idle restart
    statuses = seen["after_idle_restart"]
    if settings.DATABASES["default"].get("CONN_HEALTH_CHECKS"):
        assert statuses == [200] * len(statuses), statuses
    else:
        assert statuses[-1] == 200 and statuses.count(503) <= WORKERS, statuses
    assert elapsed < RUN_TIMEOUT_S + RECOVERY_TIMEOUT_S



def test_a_database_connection_error_becomes_503_try_again():
    """The middleware alone: Operational/InterfaceError → 503 + Retry-After (JSON under /api/);
    other exceptions pass through to Django's 500 handling."""
    middleware = DatabaseUnavailableMiddleware(lambda request: None)
    page = middleware.process_exception(RequestFactory().post("/work/a/x/"),
                                        OperationalError("server closed the connection"))
    api = middleware.process_exception(RequestFactory().get("/api/batches/"),
                                       OperationalError("connection refused"))
    assert page.status_code == api.status_code == 503
    assert page["Retry-After"] == "5" and page["Cache-Control"] == "no-store"
    assert b"try again" in page.content and b"<h1>" in page.content
    assert api["Content-Type"] == "application/json" and b"try again" in api.content
    closed = middleware.process_exception(RequestFactory().get("/"), InterfaceError())
    assert closed.status_code == 503  # "connection already closed", message-less
    assert middleware.process_exception(RequestFactory().get("/"), ValueError("bug")) is None
    assert "annotation.core.outage.DatabaseUnavailableMiddleware" in settings.MIDDLEWARE
