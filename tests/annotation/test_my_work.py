"""The annotator's "My work" page: history (paginated), earnings by review state and bonuses,
gold accuracy only once a batch is finished, qualifications held — and only their own."""
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.engine.services.batches import batch_set_status
from annotation.engine.services.workers import worker_for_user
from annotation.models import Assignment, Batch, Bonus, Qualification, QualificationGrant
from tests.factories import make_batch
from tests.support.homes import submit

pytestmark = pytest.mark.django_db
URL = reverse("annotation:my_work")


def _bonus(assignment, amount, status):
    return Bonus.objects.create(
        batch=assignment.batch, assignment=assignment, worker=assignment.worker,
        provider="local", amount=Decimal(amount), reason="thanks", key=f"k-{status}",
        token=f"t-{assignment.pk}-{status}", status=status, created_at=timezone.now())


def test_earnings_split_by_review_state_with_bonuses(alice_client, alice):
    me = worker_for_user(alice)
    batch = make_batch(4, n=1, reward=Decimal("0.50"))
    approved = submit(batch, me, status=Assignment.Status.APPROVED)
    submit(batch, me, status=Assignment.Status.APPROVED)
    submit(batch, me)  # pending review
    submit(batch, me, status=Assignment.Status.REJECTED)
    _bonus(approved, "0.30", Bonus.Status.PAID)
    _bonus(approved, "0.20", Bonus.Status.PENDING)
    html = alice_client.get(URL).content.decode()
    assert 'id="earned-approved">$1.00<' in html
    assert 'id="earned-pending">$0.50<' in html
    assert 'id="bonus-paid">$0.30<' in html and "+ $0.20 on its way" in html
    assert "1 submission rejected" in html


def test_history_rows_and_statuses(alice_client, alice):
    me = worker_for_user(alice)
    batch = make_batch(2, n=1)
    submit(batch, me, seconds=42)
    from annotation.engine.services.claims import task_claim_next

    task_claim_next(batch=batch, worker=me)  # in progress
    html = alice_client.get(URL).content.decode()
    assert "42 s" in html and "pending review" in html and "in progress" in html
    assert html.count(f"<td>{batch.title}</td>") == 2


def test_gold_results_are_revealed_only_once_the_batch_is_finished(alice_client, alice):
    me = worker_for_user(alice)
    batch = make_batch(2, n=1, gold_every=1)  # every task is gold, answer "A"
    submit(batch, me, {"choice": "A"})
    submit(batch, me, {"choice": "B"})
    html = alice_client.get(URL).content.decode()
    assert 'id="gold-accuracy">—<' in html
    assert "correct" not in html and "wrong" not in html  # not even which items were checks
    batch_set_status(batch, Batch.Status.FINISHED)
    html = alice_client.get(URL).content.decode()
    assert 'id="gold-accuracy">50 %<' in html and "1 of 2 right" in html
    assert ">correct<" in html and ">wrong<" in html


def test_qualifications_held_not_revoked(alice_client, alice):
    me = worker_for_user(alice)
    now = timezone.now()
    held = Qualification.objects.create(name="Chart reader")
    lost = Qualification.objects.create(name="Map reader")
    QualificationGrant.objects.create(qualification=held, worker=me, score=0.9, granted_at=now)
    QualificationGrant.objects.create(qualification=lost, worker=me, score=0.9, granted_at=now,
                                      revoked=True)
    html = alice_client.get(URL).content.decode()
    assert "Chart reader" in html and "Map reader" not in html


def test_history_is_paginated_and_only_mine(alice_client, alice, bob):
    from annotation.engine.views import HISTORY_PAGE

    me = worker_for_user(alice)
    batch = make_batch(HISTORY_PAGE + 2, n=2)
    for _ in range(HISTORY_PAGE + 2):
        submit(batch, me)
    submit(batch, worker_for_user(bob))
    first = alice_client.get(URL).content.decode()
    assert first.count("pending review") == HISTORY_PAGE and 'rel="next"' in first
    second = alice_client.get(URL, {"page": 2}).content.decode()
    assert second.count("pending review") == 2 and "Page 2 of 2" in second
    assert alice_client.get(URL, {"page": "junk"}).status_code == 200  # first page


def test_my_work_query_count_is_flat(alice_client, alice, django_assert_max_num_queries):
    me = worker_for_user(alice)
    batch = make_batch(10, n=1)
    for _ in range(10):
        submit(batch, me)
    with django_assert_max_num_queries(11):
        alice_client.get(URL)


def test_my_work_is_for_annotators(analyst_client):
    assert analyst_client.get(URL).status_code == 403
