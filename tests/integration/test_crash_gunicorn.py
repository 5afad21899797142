"""Crash test: gunicorn workers are SIGKILLed while annotators submit: a worker
can die at any moment (OOM killer, timeout, deploy), and no acknowledged submission may be lost
or doubled.

Real gunicorn (config/gunicorn.py, 3 sync workers) on its own PostgreSQL database; simulated
annotators over HTTP claim and submit; the test kills workers with SIGKILL:

- three times at random moments of the run, always a worker that is serving a request;
- once deterministically in the middle of a submit transaction: the test holds the row lock of
  one annotator's assignment, so the worker handling that POST waits inside its transaction
  (seen in ``pg_stat_activity`` as blocked by us; its connection's port names the worker).

Clients whose request died retry it, as a browser user would. Afterwards every acknowledged
submission is stored exactly once with the answer sent, no assignment or judgment is half
written, no task is over-assigned, slot counters match the rows, the master replaced every
killed worker, and replaying a submission changes nothing.
"""
import asyncio
import os
import signal
import time

import psycopg
import pytest

from tests.support.http_load import (
    ACKNOWLEDGED,
    Annotator,
    Gunicorn,
    Ledger,
    assert_invariants,
    run_async,
    scratch_database,
    seeded_server,
    until,
)

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

WORKERS = 3
ANNOTATORS = 8
TASKS, N = 24, 3
RANDOM_KILLS_AT = (8, 20, 32)  # acknowledged submissions before each random kill
TARGETED_KILL_AT = 44
RUN_TIMEOUT_S = 45


@pytest.fixture
def database():
    url = os.environ.get("TEST_DATABASE_URL", "")
    if not url.startswith("postgres"):
        pytest.skip("needs TEST_DATABASE_URL on PostgreSQL (scripts/services.sh start)")
    with scratch_database(url, f"crash_gunicorn_{os.getpid()}") as db_url:
        yield db_url


async def _kill_and_await_respawn(server: Gunicorn, victim: int) -> None:
    os.kill(victim, signal.SIGKILL)
    await until(lambda: victim not in server.worker_pids()
                 and len(server.worker_pids()) == WORKERS, 20, f"a worker to replace {victim}")


async def _random_kills(server, ledger, load, killed):
    for threshold in RANDOM_KILLS_AT:
        await until(lambda t=threshold: len(ledger.acknowledged) >= t or load.done(), 30,
                     f"{threshold} acknowledged submissions")
        busy = await until(server.busy_workers, 5, "a worker serving a request")
        victim = min(busy)
        killed.append(victim)
        await _kill_and_await_respawn(server, victim)


async def _kill_inside_submit(server, db_url, probe, opened, killed) -> dict:
    """Kill the worker that is inside the probe's submit transaction; return what happened."""
    action, token = opened
    uuid = action.rstrip("/").split("/")[-1]
    async with await psycopg.AsyncConnection.connect(db_url) as holder, \
            await psycopg.AsyncConnection.connect(db_url, autocommit=True) as observer:
        await holder.execute(
            "SELECT id FROM annotation_assignment WHERE uuid = %s FOR UPDATE", [uuid])
        holder_pid = holder.info.backend_pid
        post = asyncio.create_task(probe.submit(action, token))

        async def blocked_backend():
            cur = await observer.execute(
                "SELECT pid, client_port FROM pg_stat_activity "
                "WHERE %s = ANY(pg_blocking_pids(pid))", [holder_pid])
            return await cur.fetchone()

        row = None
        deadline = time.monotonic() + 15
        while row is None:
            assert time.monotonic() < deadline, "the probe's submit never reached the lock"
            await asyncio.sleep(0.02)
            row = await blocked_backend()
        victim = server.worker_with_local_port(row[1])
        assert victim is not None, f"no worker owns the connection of backend {row[0]}"
        killed_at = (await (await observer.execute("SELECT clock_timestamp()")).fetchone())[0]
        killed.append(victim)
        await _kill_and_await_respawn(server, victim)
        await holder.rollback()  # the killed worker's transaction can now fail; the retry proceeds
        response, attempts = await asyncio.wait_for(post, 30)
        cur = await observer.execute(
            "SELECT status, submitted_at, answer ->> 'choice' FROM annotation_assignment "
            "WHERE uuid = %s", [uuid])
        status, submitted_at, choice = await cur.fetchone()
    return {"uuid": uuid, "status_code": response.status_code, "attempts": attempts,
            "stored": status, "submitted_at": submitted_at, "killed_at": killed_at,
            "choice": choice}


async def _replay(annotator: Annotator, db_url: str) -> tuple[int, tuple, tuple]:
    """POST an annotator's last answer again; the row and its judgments must not change."""
    action, token = annotator.last
    uuid = action.rstrip("/").split("/")[-1]
    query = ("SELECT a.status, a.submitted_at, a.answer, count(j.id) FROM annotation_assignment a "
             "LEFT JOIN judging_judgment j ON j.assignment_id = a.id WHERE a.uuid = %s "
             "GROUP BY a.id")
    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        before = await (await conn.execute(query, [uuid])).fetchone()
        response, _ = await annotator.send(
            "POST", action, data={"choice": "AB"[before[2]["choice"] == "A"],  # the other side
                                  "csrfmiddlewaretoken": token})
        after = await (await conn.execute(query, [uuid])).fetchone()
    return response.status_code, before, after


def test_killed_workers_leave_no_partial_records(database, tmp_path):
    with seeded_server(database, workers=WORKERS, log_path=tmp_path / "gunicorn.log",
                       annotators=ANNOTATORS + 1, tasks=TASKS, n=N) as (server, seeded):
        sessions, probe_session = seeded["sessions"][:-1], seeded["sessions"][-1]
        master = server.proc.pid

        async def scenario():
            deadline = time.monotonic() + RUN_TIMEOUT_S
            ledger, killed = Ledger(), []
            probe = Annotator(server.base, probe_session, seeded["batch"], ledger, deadline)
            annotators = [Annotator(server.base, key, seeded["batch"], ledger, deadline)
                          for key in sessions]
            try:
                opened = await probe.open_task()  # holds a lease until the targeted kill
                load = asyncio.ensure_future(asyncio.gather(*(a.run() for a in annotators)))
                await _random_kills(server, ledger, load, killed)
                await until(lambda: len(ledger.acknowledged) >= TARGETED_KILL_AT
                             or load.done(), 30, f"{TARGETED_KILL_AT} acknowledged submissions")
                targeted = await _kill_inside_submit(server, database, probe, opened, killed)
                await probe.run()  # its submit leased the next task: finish like the others
                await asyncio.wait_for(load, max(1.0, deadline - time.monotonic()))
                replays = [await _replay(a, database) for a in (probe, *annotators[:3])]
                return ledger, killed, targeted, replays
            finally:
                for client in (probe, *annotators):
                    await client.aclose()

        started = time.monotonic()
        ledger, killed, targeted, replays = run_async(scenario)
        elapsed = time.monotonic() - started
        workers_after = server.worker_pids()
        assert server.proc.poll() is None, "the gunicorn master died"
        assert server.proc.pid == master
        log = server.log_tail(10**6)

    # the clients: every lost request was retried to success, nothing else went wrong
    assert ledger.unexpected == [], ledger.unexpected[:5]
    transport = {k: v for k, v in ledger.failures.items() if not k.isdigit()}
    assert sum(transport.values()) >= 1, "no kill interrupted a request"
    assert not any(k.isdigit() for k in ledger.failures), ledger.failures  # no 5xx from a kill
    # the master replaced each killed worker and still runs WORKERS of them
    assert len(killed) == len(RANDOM_KILLS_AT) + 1 and len(set(killed)) == len(killed)
    assert len(workers_after) == WORKERS and not workers_after & set(killed)
    assert log.count("Booting worker") >= WORKERS + len(killed)
    # the submit killed inside its transaction left nothing; the client's retry stored it once
    assert targeted["status_code"] in ACKNOWLEDGED and targeted["attempts"] >= 2, targeted
    assert targeted["stored"] == "submitted" and targeted["submitted_at"] > targeted["killed_at"]
    assert targeted["uuid"] in ledger.acknowledged and targeted["uuid"] in ledger.retried_submits
    # replaying an acknowledged submission (even with another answer) changes nothing
    for status_code, before, after in replays:
        assert status_code in ACKNOWLEDGED and before == after and before[3] == 1, (before, after)
    # the database: complete, once each, no half-written rows, counters consistent
    state = assert_invariants(database, seeded["batch"], ledger, complete=True)
    assert set(ledger.retried_submits) <= set(state["done"])
    assert len(ledger.acknowledged) == TASKS * N
    assert elapsed < RUN_TIMEOUT_S
    print(f"\ncrash-gunicorn: {elapsed:.1f} s, kills {len(killed)}, failures "
          f"{dict(ledger.failures)}, retried submits {len(ledger.retried_submits)}")
