"""At most one live lease per (batch, worker), held by the database.

Concurrent claims by one worker (two tabs, a double click, a script firing twenty requests)
used to leave several live leases: the live-lease check ran outside the claiming transaction.
Here they race for real — threads on PostgreSQL, processes on SQLite — and exactly one lease
may come out; every other caller gets that lease or nothing. A lease past its deadline that
the sweep has not expired yet must not block the worker's next claim.
"""
import os
import sqlite3
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import IntegrityError, connection, connections, transaction
from django.utils import timezone

from annotation.engine.services.claims import task_claim_next, task_claim_specific
from annotation.engine.services.errors import AssignmentConflict
from annotation.engine.services.submissions import assignment_submit
from annotation.models import Assignment, Task
from tests.factories import make_batch, make_workers
from tests.support.migrations import migrate_to

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = 20
REFUSED = "refused"  # a marketplace arrival answered with AssignmentConflict


def _needs(vendor: str) -> None:
    if connection.vendor != vendor:
        pytest.skip(f"this race needs {vendor} (the other database has its own version)")


def _race(calls) -> list:
    """Run every call at once, each on its own connection; their results in order."""
    results: list = [None] * len(calls)
    errors: list[Exception] = []
    barrier = threading.Barrier(len(calls))

    def run(i, call):
        try:
            connection.ensure_connection()  # connect first, so the claims start together
            barrier.wait()
            results[i] = call()
        except Exception as exc:  # surfaced to the main thread
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[:3]
    return results


def _live(batch, worker) -> list[Assignment]:
    return list(Assignment.objects.filter(batch=batch, worker=worker, status="leased"))


def _the_live_lease(batch, worker) -> Assignment:
    live = _live(batch, worker)
    assert len(live) == 1, f"{len(live)} live leases for one worker in one batch"
    return live[0]


def _slots(batch) -> int:
    return sum(Task.objects.filter(batch=batch).values_list("slots_taken", flat=True))


def _specific(task, worker, assignment_id):
    def call():
        try:
            return task_claim_specific(task=task, worker=worker,
                                       provider_assignment_id=assignment_id,
                                       submit_to="https://workersandbox.mturk.com")
        except AssignmentConflict:
            return REFUSED
    return call


# --------------------------------------------------------------------- PostgreSQL: threads


def test_concurrent_claims_by_one_worker_leave_one_live_lease():
    _needs("postgresql")
    batch = make_batch(12, n=3)
    (worker,) = make_workers(1)
    for _ in range(3):  # a race can be lucky once; three rounds, each after a submit
        got = _race([lambda: task_claim_next(batch=batch, worker=worker)] * CLAIMS)
        lease = _the_live_lease(batch, worker)
        assert {a.pk for a in got if a is not None} == {lease.pk}
        assert _slots(batch) == Assignment.objects.filter(batch=batch).count()  # none leaked
        full = Assignment.objects.select_related("task", "batch", "worker").get(pk=lease.pk)
        assignment_submit(assignment=full, data={"choice": "A"})
    assert Assignment.objects.filter(batch=batch, worker=worker, counted=True).count() == 3


def test_concurrent_claims_over_a_stale_lease_expire_it_once_and_lease_once():
    _needs("postgresql")
    batch = make_batch(6, n=1, lease_seconds=60)
    (worker,) = make_workers(1)
    stale = task_claim_next(batch=batch, worker=worker,
                            now=timezone.now() - timedelta(seconds=61))  # never swept
    got = _race([lambda: task_claim_next(batch=batch, worker=worker)] * CLAIMS)
    lease = _the_live_lease(batch, worker)
    assert {a.pk for a in got if a is not None} == {lease.pk}
    stale.refresh_from_db()
    assert stale.status == "expired" and lease.task_id != stale.task_id
    assert Task.objects.get(pk=stale.task_id).slots_taken == 0  # its slot given back once
    assert _slots(batch) == 1


def test_concurrent_marketplace_arrivals_and_claims_leave_one_live_lease():
    """A worker accepting ten HITs of one batch at once while also claiming through the site:
    one lease; each arrival is either that lease or refused, never a second lease."""
    _needs("postgresql")
    batch = make_batch(14, n=1, provider="mturk")
    (worker,) = make_workers(1, provider="mturk")
    tasks = list(batch.tasks.order_by("position"))
    arrivals = [_specific(task, worker, f"ASG{i}") for i, task in enumerate(tasks[:10])]
    nexts = [lambda: task_claim_next(batch=batch, worker=worker)] * 10
    got = _race([c for pair in zip(arrivals, nexts, strict=True) for c in pair])
    lease = _the_live_lease(batch, worker)
    assert {a if a in (None, REFUSED) else a.pk for a in got} <= {lease.pk, None, REFUSED}
    assert lease.pk in {getattr(a, "pk", None) for a in got}
    assert _slots(batch) == 1 and Assignment.objects.filter(batch=batch).count() == 1


# ------------------------------------------------------------------------ SQLite: processes

_CLAIMANT = """
import os, sys, time
import django
django.setup()
from annotation.models import Batch, Worker
from annotation.engine.services.claims import task_claim_next
batch, worker = Batch.objects.get(pk=int(sys.argv[1])), Worker.objects.get(pk=int(sys.argv[2]))
Batch.objects.exists()  # connected
open(sys.argv[3], "w").close()
while not os.path.exists(sys.argv[4]):
    time.sleep(0.0005)
try:
    lease = task_claim_next(batch=batch, worker=worker)
    print(lease.pk if lease else "none")
except Exception as exc:
    print("error", repr(exc))
"""


@pytest.mark.slow
def test_concurrent_claims_by_one_worker_on_sqlite_leave_one_live_lease(tmp_path):
    """SQLite: real processes on a file copy of the test database (the test database is
    in memory, where connections cannot wait for each other's locks)."""
    _needs("sqlite")
    batch = make_batch(12, n=3)
    (worker,) = make_workers(1)
    path = tmp_path / "race.sqlite3"
    with sqlite3.connect(path) as copy:
        connection.connection.backup(copy)
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings_test",
           "DATABASE_URL": f"sqlite:///{path}", "PYTHONPATH": str(ROOT)}
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", _CLAIMANT, str(batch.pk), str(worker.pk),
                               str(tmp_path / f"ready{i}"), str(go)],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for i in range(8)]
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"ready{i}").exists() for i in range(len(procs))):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), \
            [p.communicate() for p in procs if p.poll() is not None][:1]
        time.sleep(0.05)
    go.touch()
    outputs = [p.communicate(timeout=120) for p in procs]
    got = [out.strip() for out, _ in outputs]
    assert not [g for g in got if not (g == "none" or g.isdigit())], outputs[:2]
    with sqlite3.connect(path) as db:
        live = db.execute("SELECT id FROM annotation_assignment WHERE batch_id = ? AND"
                          " worker_id = ? AND status = 'leased'", [batch.pk, worker.pk]).fetchall()
        slots = db.execute("SELECT sum(slots_taken) FROM annotation_task WHERE batch_id = ?",
                           [batch.pk]).fetchone()[0]
    assert len(live) == 1, got
    assert {g for g in got if g != "none"} == {str(live[0][0])}
    assert slots == 1


# ---------------------------------------------------------------------------- both databases


def test_the_database_refuses_a_second_live_lease():
    """Held by the database, not by the services: any future path that writes a lease is
    refused too. Leases that ended (submitted, expired, returned) do not count."""
    batch = make_batch(3, n=2)
    (worker,) = make_workers(1)
    first = task_claim_next(batch=batch, worker=worker)
    second_task = batch.tasks.exclude(pk=first.task_id).first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(task=second_task, batch=batch, worker=worker,
                                  claimed_at=first.claimed_at, expires_at=first.expires_at,
                                  hit_type_version=first.hit_type_version)
    Assignment.objects.filter(pk=first.pk).update(status="expired")
    Assignment.objects.create(task=second_task, batch=batch, worker=worker,
                              claimed_at=first.claimed_at, expires_at=first.expires_at,
                              hit_type_version=first.hit_type_version)


def test_a_lease_past_its_deadline_is_expired_by_the_workers_next_claim():
    """Not yet swept (status still "leased"): the next claim expires it in its own transaction,
    gives its slot back and leases the next task; a late submit of it then follows the late
    rule."""
    batch = make_batch(3, n=1, lease_seconds=60)
    (worker,) = make_workers(1)
    now = timezone.now()
    old = task_claim_next(batch=batch, worker=worker, now=now)
    assert task_claim_next(batch=batch, worker=worker, now=now + timedelta(seconds=59)).pk == old.pk
    new = task_claim_next(batch=batch, worker=worker, now=now + timedelta(seconds=61))
    assert new is not None and new.task_id != old.task_id
    stored = Assignment.objects.get(pk=old.pk)
    assert stored.status == "expired"
    assert [a.pk for a in _live(batch, worker)] == [new.pk]
    assert Task.objects.get(pk=old.task_id).slots_taken == 0
    assert Task.objects.get(pk=new.task_id).slots_taken == 1
    late = assignment_submit(assignment=old, data={"choice": "A"},
                             now=now + timedelta(seconds=62)).assignment
    assert late.late and late.counted  # the freed slot was still free
    assert Task.objects.get(pk=old.task_id).slots_taken == 1


def test_a_stale_lease_is_expired_even_when_nothing_is_left_for_the_worker():
    batch = make_batch(1, n=2, lease_seconds=60)
    (worker,) = make_workers(1)
    now = timezone.now()
    old = task_claim_next(batch=batch, worker=worker, now=now)
    assert task_claim_next(batch=batch, worker=worker, now=now + timedelta(seconds=61)) is None
    assert Assignment.objects.get(pk=old.pk).status == "expired"
    assert _slots(batch) == 0


def test_a_claim_that_finds_its_concurrent_twin_s_lease_in_the_index_returns_it(monkeypatch):
    """The race, made deterministic: this claim's look for a held lease ran just before the
    worker's other tab committed one. The index refuses the second lease; this claim answers
    with the other tab's lease and its slot is given back."""
    from annotation.engine.services import claims

    batch = make_batch(4, n=2)
    (worker,) = make_workers(1)
    look = claims.held_lease
    other_tab = []

    def look_before_the_other_tab_commits(b, w):
        if other_tab:
            return look(b, w)
        other_tab.append(None)
        other_tab[0] = task_claim_next(batch=b, worker=w)  # the other tab claims and commits
        return None  # what this claim saw a moment earlier

    monkeypatch.setattr(claims, "held_lease", look_before_the_other_tab_commits)
    got = task_claim_next(batch=batch, worker=worker)
    assert got.pk == other_tab[0].pk
    assert [a.pk for a in _live(batch, worker)] == [got.pk]
    assert _slots(batch) == 1


def test_a_marketplace_arrival_while_holding_a_live_lease_is_refused():
    batch = make_batch(3, n=1, provider="mturk")
    first, second = batch.tasks.order_by("position")[:2]
    (worker,) = make_workers(1, provider="mturk")
    held = task_claim_specific(task=first, worker=worker, provider_assignment_id="ASG1")
    with pytest.raises(AssignmentConflict, match="another task of this batch"):
        task_claim_specific(task=second, worker=worker, provider_assignment_id="ASG2")
    assert task_claim_next(batch=batch, worker=worker).pk == held.pk
    assert Assignment.objects.count() == 1 and _slots(batch) == 1
    assert task_claim_specific(task=first, worker=worker, provider_assignment_id="ASG1").pk \
        == held.pk  # the same arrival again is still that lease


def test_a_marketplace_arrival_after_a_stale_lease_expires_it():
    batch = make_batch(3, n=1, lease_seconds=60, provider="mturk")
    first, second = batch.tasks.order_by("position")[:2]
    (worker,) = make_workers(1, provider="mturk")
    now = timezone.now()
    old = task_claim_specific(task=first, worker=worker, provider_assignment_id="ASG1", now=now)
    new = task_claim_specific(task=second, worker=worker, provider_assignment_id="ASG2",
                              now=now + timedelta(seconds=61))
    assert new.task_id == second.pk and new.provider_assignment_id == "ASG2"
    assert Assignment.objects.get(pk=old.pk).status == "expired"
    assert [a.pk for a in _live(batch, worker)] == [new.pk] and _slots(batch) == 1


# ------------------------------------------------------------------------------- migration

BEFORE = [("annotation", "0005_reference_convention")]
AFTER = [("annotation", "0006_one_live_lease")]


def test_migration_keeps_each_workers_newest_lease_and_expires_the_rest(back_to_latest):
    """Databases that already hold several live leases per (batch, worker) (the bug) migrate:
    the newest lease stays, the others expire and give their slots back; nothing else moves."""
    apps = migrate_to(BEFORE)
    Batch, Task_, Worker, Assignment_ = (apps.get_model("annotation", name) for name in
                                         ("Batch", "Task", "Worker", "Assignment"))
    batch = Batch.objects.create(hit_type="pairwise_ab", title="t", status="active")
    tasks = [Task_.objects.create(batch=batch, position=i, payload={}, max_assignments=2,
                                  slots_taken=1) for i in range(4)]
    twice, once = (Worker.objects.create(external_id=name) for name in ("twice", "once"))
    t0 = timezone.now()

    def lease(task, worker, minute, status="leased"):
        return Assignment_.objects.create(
            task=task, batch=batch, worker=worker, status=status, hit_type_version="1",
            claimed_at=t0 + timedelta(minutes=minute),
            expires_at=t0 + timedelta(minutes=30 + minute),
            answer={"choice": "A"} if status == "submitted" else None)

    older, newer, newest = (lease(tasks[i], twice, i) for i in range(3))
    other = lease(tasks[0], once, 0)
    done = lease(tasks[3], twice, 5, "submitted")
    Task_.objects.filter(pk=tasks[0].pk).update(slots_taken=2)

    migrate_to(AFTER)
    status = dict(Assignment.objects.values_list("pk", "status"))
    assert [status[a.pk] for a in (older, newer, newest, other, done)] == [
        "expired", "expired", "leased", "leased", "submitted"]
    slots = dict(Task.objects.filter(batch_id=batch.pk).values_list("position", "slots_taken"))
    assert slots == {0: 1, 1: 0, 2: 1, 3: 1}
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.filter(pk=older.pk).update(status="leased")
