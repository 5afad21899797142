"""Claim rules: N distinct workers per task, never the same task twice, skips stay skipped,
leases count against N until they expire."""
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.engine.services.batches import batch_set_status
from annotation.engine.services.claims import task_claim_next, task_claim_specific
from annotation.engine.services.errors import AssignmentConflict, NotEligible
from annotation.engine.services.leases import leases_expire
from annotation.engine.services.qualifications import qualification_grant
from annotation.engine.services.submissions import assignment_return, assignment_submit
from annotation.engine.services.workers import worker_block
from annotation.models import Assignment, Batch, Qualification, Task
from tests.factories import make_batch, make_workers

pytestmark = pytest.mark.django_db


def test_claims_fill_tasks_in_order_with_distinct_workers():
    batch = make_batch(2, n=2)
    w1, w2, w3 = make_workers(3)
    a1 = task_claim_next(batch=batch, worker=w1)
    a2 = task_claim_next(batch=batch, worker=w2)
    a3 = task_claim_next(batch=batch, worker=w3)
    assert a1.task == a2.task and a1.task.position == 1
    assert a3.task.position == 2  # task 1 is full (2 live leases)
    assert Task.objects.get(pk=a1.task_id).slots_taken == 2


def test_reloading_returns_the_live_lease_instead_of_a_second_slot():
    batch = make_batch(3, n=1)
    (w,) = make_workers(1)
    first = task_claim_next(batch=batch, worker=w)
    again = task_claim_next(batch=batch, worker=w)
    assert again.pk == first.pk
    assert Assignment.objects.filter(worker=w).count() == 1


def test_worker_never_gets_a_task_twice_and_runs_out():
    batch = make_batch(2, n=3)
    (w,) = make_workers(1)
    seen = []
    while (a := task_claim_next(batch=batch, worker=w)) is not None:
        seen.append(a.task_id)
        assignment_submit(assignment=a, data={"choice": "A"})
    assert sorted(seen) == sorted(set(seen)) and len(seen) == 2


def test_skipped_task_is_never_offered_again_and_frees_its_slot():
    batch = make_batch(2, n=1)
    w1, w2 = make_workers(2)
    a = task_claim_next(batch=batch, worker=w1)
    assert assignment_return(assignment=a)
    assert not assignment_return(assignment=a)  # second return changes nothing
    assert Task.objects.get(pk=a.task_id).slots_taken == 0
    nxt = task_claim_next(batch=batch, worker=w1)
    assert nxt.task_id != a.task_id
    assert task_claim_next(batch=batch, worker=w2).task_id == a.task_id  # the slot is free again


def test_expired_lease_frees_the_slot_for_another_worker():
    batch = make_batch(1, n=1, lease_seconds=60)
    w1, w2 = make_workers(2)
    now = timezone.now()
    a = task_claim_next(batch=batch, worker=w1, now=now)
    assert task_claim_next(batch=batch, worker=w2, now=now + timedelta(seconds=30)) is None
    b = task_claim_next(batch=batch, worker=w2, now=now + timedelta(seconds=61))
    assert b is not None and b.task_id == a.task_id
    a.refresh_from_db()
    assert a.status == Assignment.Status.EXPIRED
    assert Task.objects.get(pk=a.task_id).slots_taken == 1


def test_periodic_expiry_counts_each_lease_once():
    batch = make_batch(2, n=2, lease_seconds=10)
    workers = make_workers(3)
    now = timezone.now()
    for w in workers:
        task_claim_next(batch=batch, worker=w, now=now)
    later = now + timedelta(seconds=11)
    assert leases_expire(now=later) == 3
    assert leases_expire(now=later) == 0
    assert sum(Task.objects.filter(batch=batch).values_list("slots_taken", flat=True)) == 0


@pytest.mark.parametrize("problem", ["paused", "blocked", "unqualified"])
def test_ineligible_workers_get_nothing(problem):
    qualification = Qualification.objects.create(name="pairwise-test")
    batch = make_batch(1, n=1, required_qualification=qualification)
    (w,) = make_workers(1)
    qualification_grant(qualification=qualification, worker=w, now=timezone.now())
    if problem == "paused":
        batch_set_status(batch, Batch.Status.PAUSED)
    elif problem == "blocked":
        worker_block(w, "test")
    else:
        qualification.grants.all().delete()
    with pytest.raises(NotEligible):
        task_claim_next(batch=batch, worker=w)
    assert not Assignment.objects.exists()


def test_specific_claim_is_idempotent_and_refuses_forged_ids():
    batch = make_batch(1, n=2, provider="mturk")
    task = batch.tasks.get()
    w1, w2 = make_workers(2, provider="mturk")
    a = task_claim_specific(task=task, worker=w1, provider_assignment_id="ASG1")
    assert task_claim_specific(task=task, worker=w1, provider_assignment_id="ASG1").pk == a.pk
    with pytest.raises(AssignmentConflict):
        task_claim_specific(task=task, worker=w2, provider_assignment_id="ASG1")
    with pytest.raises(AssignmentConflict):
        task_claim_specific(task=task, worker=w1, provider_assignment_id="ASG-OTHER")
    assert Assignment.objects.count() == 1
    assert Task.objects.get(pk=task.pk).slots_taken == 1
