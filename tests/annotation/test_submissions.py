"""Submit is atomic and idempotent; the late rule; gold checks, auto-block, qualification tests."""
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.errors import AnswerInvalid, NotSubmittable, TooFast
from annotation.engine.services.submissions import assignment_return, assignment_submit
from annotation.models import Assignment, Qualification, QualificationGrant, Task
from tests.factories import make_batch, make_workers

pytestmark = pytest.mark.django_db


def test_submit_stores_a_validated_answer_and_time_spent():
    batch = make_batch(1, n=1)
    (w,) = make_workers(1)
    now = timezone.now()
    a = task_claim_next(batch=batch, worker=w, now=now)
    out = assignment_submit(assignment=a, data={"choice": "B", "extra": "ignored"},
                            now=now + timedelta(seconds=12))
    a.refresh_from_db()
    assert not out.duplicate
    assert a.status == "submitted" and a.counted and not a.late
    assert a.answer == {"choice": "B"}
    assert a.seconds_spent == pytest.approx(12)
    assert a.hit_type_version == "1"


def test_double_submit_keeps_the_first_answer():
    batch = make_batch(1, n=1)
    (w,) = make_workers(1)
    a = task_claim_next(batch=batch, worker=w)
    assignment_submit(assignment=a, data={"choice": "A"})
    out = assignment_submit(assignment=Assignment.objects.get(pk=a.pk), data={"choice": "B"})
    assert out.duplicate
    stale = Assignment.objects.get(pk=a.pk)
    stale.status = Assignment.Status.LEASED  # a stale in-memory copy still thinks it's leased
    assert assignment_submit(assignment=stale, data={"choice": "B"}).duplicate
    assert Assignment.objects.get(pk=a.pk).answer == {"choice": "A"}
    assert Assignment.objects.filter(counted=True).count() == 1


def test_invalid_answer_writes_nothing():
    batch = make_batch(1, n=1)
    (w,) = make_workers(1)
    a = task_claim_next(batch=batch, worker=w)
    with pytest.raises(AnswerInvalid, match="choice"):
        assignment_submit(assignment=a, data={"choice": "tie"})
    a.refresh_from_db()
    assert a.status == "leased" and a.answer is None


def test_minimum_time_guard():
    batch = make_batch(1, n=1, min_seconds=10)
    (w,) = make_workers(1)
    now = timezone.now()
    a = task_claim_next(batch=batch, worker=w, now=now)
    with pytest.raises(TooFast):
        assignment_submit(assignment=a, data={"choice": "A"}, now=now + timedelta(seconds=3))
    assignment_submit(assignment=a, data={"choice": "A"}, now=now + timedelta(seconds=10))
    assert Assignment.objects.get(pk=a.pk).status == "submitted"


def test_late_submission_counts_when_the_slot_is_still_free():
    batch = make_batch(1, n=1, lease_seconds=60)
    (w,) = make_workers(1)
    now = timezone.now()
    a = task_claim_next(batch=batch, worker=w, now=now)
    from annotation.engine.services.leases import leases_expire
    leases_expire(now=now + timedelta(seconds=61))
    a.refresh_from_db()
    assignment_submit(assignment=a, data={"choice": "A"}, now=now + timedelta(seconds=70))
    a.refresh_from_db()
    assert a.counted and a.late
    assert Task.objects.get(pk=a.task_id).slots_taken == 1


def test_late_submission_is_kept_but_not_counted_when_the_slot_was_reused():
    batch = make_batch(1, n=1, lease_seconds=60)
    w1, w2 = make_workers(2)
    now = timezone.now()
    a = task_claim_next(batch=batch, worker=w1, now=now)
    b = task_claim_next(batch=batch, worker=w2, now=now + timedelta(seconds=61))
    assignment_submit(assignment=b, data={"choice": "B"}, now=now + timedelta(seconds=62))
    a.refresh_from_db()
    assignment_submit(assignment=a, data={"choice": "A"}, now=now + timedelta(seconds=63))
    a.refresh_from_db()
    assert a.status == "submitted" and a.late and not a.counted and a.answer == {"choice": "A"}
    assert Assignment.objects.filter(task=a.task, counted=True).count() == 1
    assert Task.objects.get(pk=a.task_id).slots_taken == 1


def test_returned_assignment_cannot_be_submitted():
    batch = make_batch(1, n=1)
    (w,) = make_workers(1)
    a = task_claim_next(batch=batch, worker=w)
    assignment_return(assignment=a)
    with pytest.raises(NotSubmittable):
        assignment_submit(assignment=Assignment.objects.get(pk=a.pk), data={"choice": "A"})


def test_gold_answers_are_scored_and_low_accuracy_workers_blocked(settings):
    settings.AUTO_BLOCK_MIN_GOLD = 3
    batch = make_batch(6, n=2, gold_every=2, auto_block_below=0.5)  # tasks 2, 4, 6 are gold
    good, bad = make_workers(2)
    for _ in range(6):
        a = task_claim_next(batch=batch, worker=good)
        assignment_submit(assignment=a, data={"choice": "A"})
    for _ in range(6):
        a = task_claim_next(batch=batch, worker=bad) if not bad.blocked else None
        if a is None:
            break
        assignment_submit(assignment=a, data={"choice": "B"})
        bad.refresh_from_db()
    good.refresh_from_db()
    assert not good.blocked
    assert bad.blocked and "0/3" in bad.blocked_reason
    assert list(Assignment.objects.filter(worker=good, task__is_gold=True)
                .values_list("gold_correct", flat=True)) == [True, True, True]


def test_qualification_test_grants_on_pass_only():
    qualification = Qualification.objects.create(name="ab-qual", pass_mark=0.75)
    test_batch = make_batch(4, n=100, gold_every=1, grants_qualification=qualification)
    passer, failer = make_workers(2)
    for worker, answers in ((passer, "AAAB"), (failer, "ABBB")):
        for choice in answers:
            a = task_claim_next(batch=test_batch, worker=worker)
            assignment_submit(assignment=a, data={"choice": choice})
    grant = QualificationGrant.objects.get(qualification=qualification)
    assert grant.worker == passer and grant.score == 0.75
