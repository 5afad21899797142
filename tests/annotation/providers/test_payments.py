"""The payments overview: base rewards, bonuses and marketplace fees, paid vs owed vs pending,
per batch and per worker, to the cent — checked against Mechanical Turk's published fees (20 %
of each reward and bonus, at least $0.01; another 20 % of the reward on HITs of 10 or more
assignments) with decisions and bonuses made through the real services and a Stubbed MTurk."""
from decimal import Decimal

import pytest
from botocore.stub import ANY
from django.urls import reverse

from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_for_user
from annotation.models import Bonus
from annotation.providers import services
from annotation.providers.mturk.fees import MTurkFees
from annotation.providers.selectors import batch_costs
from annotation.providers.selectors_payments import payments_overview
from tests.factories import make_batch

from .test_mturk import work

pytestmark = pytest.mark.django_db(transaction=True)

D = Decimal


def test_mturk_fee_figures():
    fees = MTurkFees()
    assert fees.reward_fee(D("1.00"), 9) == D("0.20")  # 20 %
    assert fees.reward_fee(D("1.00"), 10) == D("0.40")  # 20 % + 20 % from 10 assignments
    assert fees.reward_fee(D("0.04"), 3) == D("0.01")  # at least a cent
    assert fees.reward_fee(D("0.07"), 10) == D("0.03")  # 0.028, half up
    assert fees.bonus_fee(D("1.00")) == D("0.20") and fees.bonus_fee(D("0.01")) == D("0.01")


def approve(mturk, a):
    mturk.add_response("approve_assignment", {}, {"AssignmentId": a.provider_assignment_id})
    assert services.assignment_approve(a, actor="ada") is True


def bonus(mturk, a, amount, *, fail=False):
    if fail:
        mturk.add_client_error("send_bonus", "RequestError", "Insufficient funds.",
                               http_status_code=400)
    else:
        mturk.add_response("send_bonus", {}, {
            "WorkerId": a.worker.external_id, "BonusAmount": amount,
            "AssignmentId": a.provider_assignment_id, "Reason": "Careful work",
            "UniqueRequestToken": ANY})
    try:
        services.worker_bonus(a, amount=amount, reason="Careful work", key=f"k{amount}")
    except Exception:
        assert fail


def test_an_mturk_batch_paid_owed_and_pending_to_the_cent(mturk):
    batch = make_batch(2, n=3, provider="mturk", budget=D("100"), reward=D("0.50"))
    t1, t2 = batch.tasks.order_by("position")
    w1a, w2a, w3a = (work(t1, f"W{i}", f"ASG1{i}") for i in (1, 2, 3))
    w1b, w2b = (work(t2, f"W{i}", f"ASG2{i}") for i in (1, 2))
    for a in (w1a, w2a, w3a):
        approve(mturk, a)
    mturk.add_response("reject_assignment", {}, {"AssignmentId": "ASG21",
                                                 "RequesterFeedback": "Wrong"})
    services.assignment_reject(w1b, reason="Wrong")
    bonus(mturk, w1a, "1.00")
    bonus(mturk, w2a, "0.25", fail=True)  # failed: nothing paid, still owed
    assert Bonus.objects.get(amount=D("0.25")).status == "failed"

    overview = payments_overview(batch=batch)
    (line,) = overview.lines
    assert (line.paid.base, line.paid.bonus, line.paid.fees) == (D("1.50"), D("1.00"), D("0.50"))
    assert line.paid.total == D("3.00")  # 3 × (0.50 + 0.10) + 1.00 + 0.20
    assert (line.owed.base, line.owed.bonus, line.owed.fees) == (D("0"), D("0.25"), D("0.05"))
    assert (line.pending.base, line.pending.fees, line.pending.total) == (
        D("0.50"), D("0.10"), D("0.60"))
    assert line.counts == {"approved": 3, "rejected": 1, "submitted": 1}
    assert line.paid.total == batch_costs(batch).spent  # the launch page's own arithmetic

    by_worker = payments_overview(batch=batch, by="worker")
    assert [w.title for w in by_worker.lines] == ["W1 (Mechanical Turk)",
                                                  "W2 (Mechanical Turk)",
                                                  "W3 (Mechanical Turk)"]
    w1 = by_worker.lines[0]
    assert (w1.paid.total, w1.pending.total, w1.counts["rejected"]) == (D("1.80"), D("0"), 1)
    for name in ("paid", "owed", "pending"):
        assert getattr(by_worker.total, name).total == getattr(overview.total, name).total
    # One worker across batches: the worker's page view of the same money.
    mine = payments_overview(worker=w2a.worker)
    assert (mine.total.paid.total, mine.total.owed.total, mine.total.pending.total) == (
        D("0.60"), D("0.30"), D("0.60"))


def test_hits_of_ten_or_more_assignments_pay_the_extra_fee(mturk):
    batch = make_batch(1, n=10, provider="mturk", budget=D("100"), reward=D("0.50"))
    task = batch.tasks.get()
    for i in range(10):
        approve(mturk, work(task, f"WL{i}", f"ASGL{i}"))
    total = payments_overview(batch=batch).total
    assert (total.paid.base, total.paid.fees, total.paid.total) == (D("5.00"), D("2.00"),
                                                                     D("7.00"))


def test_local_work_is_owed_without_fees(alice, bob):
    batch = make_batch(1, n=2, reward=D("0.35"))
    a = task_claim_next(batch=batch, worker=worker_for_user(alice))
    assignment_submit(assignment=a, data={"choice": "A"})
    b = task_claim_next(batch=batch, worker=worker_for_user(bob))
    assignment_submit(assignment=b, data={"choice": "B"})
    services.local_assignment_approve(a)
    services.worker_bonus(a, amount="0.15", reason="Thanks", key="t")  # recorded, not sent
    total = payments_overview(batch=batch).total
    assert total.paid.total == D("0")
    assert (total.owed.base, total.owed.bonus, total.owed.fees) == (D("0.35"), D("0.15"), D("0"))
    assert (total.pending.base, total.pending.fees) == (D("0.35"), D("0"))
    assert [line.title for line in payments_overview(batch=batch, by="worker").lines] == [
        "alice", "bob"]


def test_the_payments_page_shows_the_batch_and_its_workers(mturk, admin_client_,
                                                           django_assert_max_num_queries):
    batch = make_batch(1, n=3, provider="mturk", budget=D("100"), reward=D("0.50"))
    task = batch.tasks.get()
    for i in range(3):
        approve(mturk, work(task, f"WP{i}", f"ASGP{i}"))
    url = reverse("admin:annotation_marketplacebatch_payments", args=[batch.pk])
    with django_assert_max_num_queries(10):
        response = admin_client_.get(url)
    html = response.content.decode()
    assert response.status_code == 200
    assert "$1.80" in html  # 3 × (0.50 + 0.10)
    assert "WP0 (Mechanical Turk)" in html and 'id="batch-payments-workers"' in html
