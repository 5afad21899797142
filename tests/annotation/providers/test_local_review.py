"""Approve / reject on local batches by Mechanical Turk's rules (ApproveAssignment,
RejectAssignment, OverrideRejection, AutoApprovalDelay), idempotent, race-safe, logged with the
marketplaces' decisions, and reachable from the batch review page and the worker page."""
import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, connections
from django.urls import reverse
from django.utils import timezone

from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_for_user
from annotation.models import Assignment, ProviderAction, ProviderConfig
from annotation.providers import services
from annotation.providers.services import (
    local_assignment_approve,
    local_assignment_reject,
    local_auto_approve,
)
from tests.factories import make_batch, make_workers, publish_on_mturk

pytestmark = pytest.mark.django_db(transaction=True)


def submitted(batch, worker, choice="A", now=None) -> Assignment:
    lease = task_claim_next(batch=batch, worker=worker, now=now)
    assignment_submit(assignment=lease, data={"choice": choice}, now=now)
    return Assignment.objects.select_related("batch", "worker", "task").get(pk=lease.pk)


def status(a) -> str:
    return Assignment.objects.get(pk=a.pk).status


def test_submitted_work_is_approved_once_and_logged_like_a_marketplace_decision():
    a = submitted(make_batch(1, n=1), make_workers(1)[0])
    assert local_assignment_approve(a, feedback="Thanks!", actor="ada") is True
    assert local_assignment_approve(a, actor="ada") is False  # idempotent: nothing new
    assert status(a) == "approved" and Assignment.objects.get(pk=a.pk).review_note == "Thanks!"
    log = ProviderAction.objects.get()
    assert (log.provider, log.action, log.target, log.ok, log.actor) == (
        "local", "approve", str(a.uuid), True, "ada")


def test_a_rejection_needs_a_readable_reason_and_bad_reasons_write_nothing():
    a = submitted(make_batch(1, n=1), make_workers(1)[0])
    for reason in ("", "   ", "bad\x07bell", "x" * 501):
        with pytest.raises(ValidationError):
            local_assignment_reject(a, reason=reason)
    assert status(a) == "submitted" and not ProviderAction.objects.exists()
    assert local_assignment_reject(a, reason="Wrong on the\ncheck items.") is True
    assert local_assignment_reject(a, reason="Again") is False
    row = Assignment.objects.get(pk=a.pk)
    assert row.status == "rejected" and row.review_note == "Wrong on the\ncheck items."


def test_approved_work_can_never_be_rejected():
    a = submitted(make_batch(1, n=1), make_workers(1)[0])
    local_assignment_approve(a)
    with pytest.raises(ValidationError, match="Approved work cannot be rejected"):
        local_assignment_reject(a, reason="Changed my mind")
    assert status(a) == "approved"


def test_only_submitted_work_can_be_decided():
    batch = make_batch(1, n=1)
    lease = task_claim_next(batch=batch, worker=make_workers(1)[0])
    with pytest.raises(ValidationError, match="Only submitted work"):
        local_assignment_approve(lease)
    with pytest.raises(ValidationError, match="Only submitted work"):
        local_assignment_reject(lease, reason="No")
    assert status(lease) == "leased"


def test_a_rejection_is_overridden_only_explicitly_and_within_30_days():
    a = submitted(make_batch(1, n=1), make_workers(1)[0])
    local_assignment_reject(a, reason="Too short")
    with pytest.raises(ValidationError, match="overriding the rejection"):
        local_assignment_approve(a)
    late = a.submitted_at + timedelta(days=30, seconds=1)
    with pytest.raises(ValidationError, match="within 30 days"):
        local_assignment_approve(a, override_rejection=True, now=late)
    assert status(a) == "rejected"
    in_time = a.submitted_at + timedelta(days=29, hours=23)
    assert local_assignment_approve(a, override_rejection=True, feedback="Sorry, our mistake",
                                    now=in_time) is True
    row = Assignment.objects.get(pk=a.pk)
    assert row.status == "approved" and row.review_note == "Sorry, our mistake"
    assert list(ProviderAction.objects.order_by("pk").values_list("action", flat=True)) == [
        "reject", "approve_override"]


def test_marketplace_batches_are_refused_and_the_marketplace_services_route_local_work():
    batch = make_batch(1, n=1)
    a = submitted(batch, make_workers(1)[0])
    assert services.assignment_approve(a, actor="ada") is True  # routed to the local rules
    assert ProviderAction.objects.get().provider == "local"
    other = make_batch(1, n=1)
    publish_on_mturk(other, prefix="3OTHER")
    b = submitted(other, make_workers(1, provider="mturk")[0])
    with pytest.raises(ValidationError, match="marketplace"):
        local_assignment_approve(b)


def test_unreviewed_work_is_approved_after_the_batch_auto_approval_delay():
    quick, default = make_batch(1, n=2), make_batch(1, n=1)
    ProviderConfig.objects.create(batch=quick, auto_approval_seconds=3600)
    w1, w2, w3 = make_workers(3)
    old = timezone.now() - timedelta(hours=2)
    due = submitted(quick, w1, now=old)
    rejected = submitted(quick, w2, now=old)
    local_assignment_reject(rejected, reason="No")
    not_yet = submitted(default, w3, now=old)  # the default delay is 3 days
    assert local_auto_approve() == 1
    assert (status(due), status(rejected), status(not_yet)) == ("approved", "rejected",
                                                                "submitted")
    assert local_auto_approve(now=timezone.now() + timedelta(days=3)) == 1
    assert status(not_yet) == "approved"
    assert ProviderAction.objects.filter(action="auto_approve").count() == 2


def _race(calls):
    results, barrier = [None] * len(calls), threading.Barrier(len(calls))

    def run(i, call):
        try:
            connection.ensure_connection()
            barrier.wait()
            results[i] = call()
        except ValidationError as exc:
            results[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return results


def test_racing_decisions_flip_an_assignment_once():
    if connection.vendor != "postgresql":
        pytest.skip("threads racing on one row need PostgreSQL")
    batch = make_batch(1, n=1)
    a = submitted(batch, make_workers(1)[0])
    results = _race([lambda: local_assignment_approve(Assignment.objects.select_related(
        "batch").get(pk=a.pk), actor="admin") for _ in range(6)])
    assert sorted(results) == [False] * 5 + [True]
    assert ProviderAction.objects.filter(action="approve").count() == 1
    b = submitted(make_batch(1, n=1), make_workers(1)[0])
    fresh = lambda: Assignment.objects.select_related("batch").get(pk=b.pk)  # noqa: E731
    results = _race([lambda: local_assignment_approve(fresh()),
                     lambda: local_assignment_reject(fresh(), reason="No")] * 3)
    winners = [r for r in results if r is True]
    assert len(winners) == 1 and ProviderAction.objects.filter(target=str(b.uuid)).count() == 1


# --- the admin pages ------------------------------------------------------------------------

def test_the_batch_review_page_approves_and_rejects_ticked_work(admin_client_, alice, bob):
    batch = make_batch(1, n=2)
    a = submitted(batch, worker_for_user(alice))
    b = submitted(batch, worker_for_user(bob))
    url = reverse("admin:annotation_marketplacebatch_review", args=[batch.pk])
    page = admin_client_.get(url).content.decode()
    assert "alice" in page and "bob" in page and str(a.uuid) in page
    refused = admin_client_.post(url, {"decision": "reject", "reason": "",
                                       "assignment": [str(a.uuid)]})
    assert refused.status_code == 200 and "needs a reason" in refused.content.decode()
    assert status(a) == "submitted"
    done = admin_client_.post(url, {"decision": "reject", "reason": "Off-topic <b>answer</b>",
                                    "assignment": [str(a.uuid)]}, follow=True)
    assert "1 assignment(s) rejected." in [str(m) for m in done.context["messages"]]
    admin_client_.post(url, {"decision": "approve", "assignment": [str(b.uuid)]})
    assert (status(a), status(b)) == ("rejected", "approved")
    # The rejected list escapes the reason and offers the override.
    rejected = admin_client_.get(url + "?status=rejected").content.decode()
    assert "Off-topic &lt;b&gt;answer&lt;/b&gt;" in rejected
    admin_client_.post(url + "?status=rejected", {"decision": "override",
                                                  "assignment": [str(a.uuid)]})
    assert status(a) == "approved"
    log = list(ProviderAction.objects.order_by("pk").values_list("action", "actor"))
    assert log == [("reject", "ada_admin"), ("approve", "ada_admin"),
                   ("approve_override", "ada_admin")]


def test_review_refusals_are_reported_and_foreign_rows_are_refused(admin_client_, alice):
    batch = make_batch(1, n=1)
    a = submitted(batch, worker_for_user(alice))
    other = submitted(make_batch(1, n=1), make_workers(1)[0])
    url = reverse("admin:annotation_marketplacebatch_review", args=[batch.pk])
    foreign = admin_client_.post(url, {"decision": "approve", "assignment": [str(other.uuid)]})
    assert foreign.status_code == 200 and status(other) == "submitted"
    junk = admin_client_.post(url, {"decision": "approve", "assignment": ["not-a-uuid\x00"]})
    assert junk.status_code == 200
    local_assignment_approve(a)
    # Approved work is not listed as submitted any more; the worker page offers no box for it.
    worker_page = reverse("admin:annotation_worker_overview", args=[a.worker_id])
    response = admin_client_.post(worker_page, {"decision": "reject", "reason": "Late change",
                                                 "assignment": [str(a.uuid)]}, follow=True)
    assert status(a) == "approved"
    assert any("Approved work cannot be rejected" in str(m)
               for m in response.context["messages"])


def test_the_periodic_sync_runs_the_local_auto_approval():
    a = submitted(make_batch(1, n=1), make_workers(1)[0],
                  now=timezone.now() - timedelta(days=3, minutes=1))
    services.sync_all(actor="beat")
    assert status(a) == "approved"


def test_the_review_page_decides_marketplace_work_through_the_marketplace(mturk, admin_client_):
    from .test_mturk import work

    batch = make_batch(1, n=2, provider="mturk", budget=Decimal("5"))
    task = batch.tasks.get()
    a, b = work(task, "WR1", "ASGR1"), work(task, "WR2", "ASGR2")
    url = reverse("admin:annotation_marketplacebatch_review", args=[batch.pk])
    mturk.add_response("approve_assignment", {}, {"AssignmentId": "ASGR1"})
    admin_client_.post(url, {"decision": "approve", "assignment": [str(a.uuid)]})
    mturk.add_response("reject_assignment", {}, {"AssignmentId": "ASGR2",
                                                 "RequesterFeedback": "Off-topic"})
    admin_client_.post(url, {"decision": "reject", "reason": "Off-topic",
                             "assignment": [str(b.uuid)]})
    assert (status(a), status(b)) == ("approved", "rejected")
    # The override goes to MTurk too: ApproveAssignment with OverrideRejection.
    mturk.add_response("approve_assignment", {}, {"AssignmentId": "ASGR2",
                                                  "OverrideRejection": True})
    admin_client_.post(url + "?status=rejected", {"decision": "override",
                                                  "assignment": [str(b.uuid)]})
    assert status(b) == "approved"
    assert list(ProviderAction.objects.order_by("pk").values_list("provider", "action")) == [
        ("mturk", "approve"), ("mturk", "reject"), ("mturk", "approve_override")]
