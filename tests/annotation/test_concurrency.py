"""50 concurrent workers on a real PostgreSQL: exactly N distinct workers per task."""
import threading
from collections import Counter

import pytest
from django.db import connection, connections

from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.models import Assignment, Task
from tests.factories import make_batch, make_workers

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("concurrency test needs PostgreSQL (make test starts one)")


def _work(batch, worker, errors, barrier):
    try:
        barrier.wait()
        while (a := task_claim_next(batch=batch, worker=worker)) is not None:
            outcome = assignment_submit(assignment=a, data={"choice": "AB"[a.task.position % 2]})
            # a duplicate submit from the same thread must change nothing
            assert assignment_submit(assignment=outcome.assignment, data={"choice": "A"}).duplicate
    except Exception as exc:  # surfaced to the main thread
        errors.append(exc)
    finally:
        connections.close_all()


def test_fifty_workers_fill_200_tasks_times_5_exactly():
    batch = make_batch(200, n=5)
    workers = make_workers(50)
    errors: list[Exception] = []
    barrier = threading.Barrier(len(workers))
    threads = [threading.Thread(target=_work, args=(batch, w, errors, barrier)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors[:3]
    counted = Assignment.objects.filter(batch=batch, counted=True)
    assert counted.count() == 1000
    assert Assignment.objects.filter(batch=batch).exclude(status="submitted").count() == 0
    per_task = Counter(counted.values_list("task_id", flat=True))
    assert set(per_task.values()) == {5} and len(per_task) == 200
    pairs = list(counted.values_list("task_id", "worker_id"))
    assert len(pairs) == len(set(pairs))
    assert set(Task.objects.filter(batch=batch).values_list("slots_taken", flat=True)) == {5}
    assert len({w for _, w in pairs}) > 1
