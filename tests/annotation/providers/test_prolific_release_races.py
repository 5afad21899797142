"""Returned and timed-out Prolific places released while everything else happens at once, on
a real PostgreSQL with threads: arrivals, submits and signed status hooks (some delivered twice)
race, and still N distinct workers per item, one live lease per worker, and every slot counted
once (live leases + counted submissions) hold; each session ends submitted or released, never
both."""
import json
import threading
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.db.models import Count

from annotation.engine.services.errors import AssignmentConflict, NotSubmittable
from annotation.engine.services.submissions import assignment_submit
from annotation.models import Assignment, ProlificHookEvent, Task
from annotation.providers.prolific.arrival import prolific_arrival_claim
from annotation.providers.prolific.hooks import prolific_hook_receive
from annotation.providers.prolific.signing import sign
from tests.factories import make_batch, publish_on_prolific

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]
SECRET = "race-secret"
DONE = "/ext/prolific/batch/x/done"
N, TASKS = 3, 4  # 12 places


def arrive(batch, pid, session):
    return prolific_arrival_claim(batch=batch, participant_id=pid, study_id="study1",
                                           session_id=session, submit_to=DONE)


def hook(session, status, event_id):
    body = json.dumps({"event_type": "submission.status.change", "resource_id": session,
                       "status": status}).encode()
    ts = str(int(time.time()))
    return prolific_hook_receive(body=body, headers={
        "X-Prolific-Request-Timestamp": ts, "X-Prolific-Request-Signature": sign(SECRET, ts, body),
        "X-Event-ID": event_id})


def run_together(jobs):
    barrier, errors = threading.Barrier(len(jobs)), []

    def go(job):
        try:
            barrier.wait()
            job()
        except (AssignmentConflict, NotSubmittable):
            pass  # a lost race, answered as the page would
        except Exception as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=go, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors


def assert_invariants(batch):
    for task in Task.objects.filter(batch=batch):
        rows = Assignment.objects.filter(task=task)
        live = rows.filter(status="leased").count()
        counted = rows.filter(status__in=["submitted", "approved"], counted=True).count()
        assert task.slots_taken == live + counted <= N, (task.position, live, counted)
        workers = [w for w, in rows.values_list("worker_id")]
        assert len(workers) == len(set(workers))  # no one twice on an item
    leases = Counter(Assignment.objects.filter(batch=batch, status="leased")
                     .values_list("worker_id", flat=True))
    assert not leases or max(leases.values()) == 1  # one live lease per worker


@pytest.mark.parametrize("round_", range(3))
def test_returned_and_timed_out_races_keep_the_invariants(settings, round_):
    if connection.vendor != "postgresql":
        pytest.skip("concurrency test needs PostgreSQL")
    settings.PROLIFIC_HOOK_SECRET = SECRET
    batch = make_batch(TASKS, n=N)
    publish_on_prolific(batch)
    run_together([lambda i=i: arrive(batch, f"P{i}", f"S{i}") for i in range(N * TASKS)])
    for i in range(N * TASKS):  # a claim that met only locked tasks got none: come again
        if not Assignment.objects.filter(provider_assignment_id=f"S{i}").exists():
            arrive(batch, f"P{i}", f"S{i}")
    assert Assignment.objects.filter(status="leased").count() == N * TASKS
    assert_invariants(batch)

    # Every first session races its own submit against a RETURNED / TIMED-OUT hook delivered
    # twice, while newcomers arrive for whatever place is freed.
    first = list(Assignment.objects.select_related("batch", "task", "worker"))
    jobs = []
    for i, a in enumerate(first):
        status = "RETURNED" if i % 2 else "TIMED-OUT"
        jobs.append(lambda a=a: assignment_submit(
            assignment=a, data={"choice": "A"}, now=a.claimed_at + timedelta(seconds=5)))
        jobs += [lambda s=a.provider_assignment_id, st=status: hook(s, st, f"e-{s}")] * 2
    jobs += [lambda i=i: arrive(batch, f"N{i}", f"T{i}") for i in range(8)]
    run_together(jobs)
    assert_invariants(batch)
    for a in Assignment.objects.filter(pk__in=[a.pk for a in first]):
        assert a.status in ("submitted", "returned", "expired"), a.status
        if a.status == "submitted" and not a.counted:
            assert a.late  # a submit after the release: kept, counted only with a free slot

    # The released participants come back with new sessions: never the same item again.
    released = Assignment.objects.filter(batch=batch, status__in=["returned", "expired"])
    comeback = [(a.worker.external_id, a.task_id) for a in released.select_related("worker")]
    run_together([lambda p=p, i=i: arrive(batch, p, f"R{i}")
                  for i, (p, _) in enumerate(comeback)])
    assert_invariants(batch)
    per_task_worker = Assignment.objects.values("task", "worker").annotate(n=Count("id"))
    assert all(row["n"] == 1 for row in per_task_worker)
    assert ProlificHookEvent.objects.count() == N * TASKS  # each event applied once
