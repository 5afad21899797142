"""The admin's page per worker: who they are, submissions per batch, median time, gold accuracy,
agreement with the majority of the other workers (ties excluded), blocked state, earnings and a
paginated list of their assignments — in a fixed number of queries."""
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation.engine.selectors_workers import majority_agreement, median, worker_summary
from annotation.engine.services.claims import task_claim_specific
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_for_external, worker_for_user
from annotation.providers import services
from tests.factories import make_batch, make_workers

pytestmark = pytest.mark.django_db


def answer(task, worker, choice, seconds=30.0):
    start = timezone.now() - timedelta(seconds=seconds)
    lease = task_claim_specific(task=task, worker=worker, provider_assignment_id="",
                                provider_hit_id="", submit_to="", now=start)
    assignment_submit(assignment=lease, data={"choice": choice}, now=start + timedelta(
        seconds=seconds))
    return lease


# --- the pure core ----------------------------------------------------------------------------

def test_majority_agreement_compares_with_the_others_and_leaves_ties_out():
    own = {1: {"choice": "A"}, 2: {"choice": "A"}, 3: {"choice": "A"}, 4: {"choice": "B"}}
    others = [(1, {"choice": "A"}), (1, {"choice": "A"}), (1, {"choice": "B"}),  # agrees
              (2, {"choice": "B"}), (2, {"choice": "B"}), (2, {"choice": "A"}),  # disagrees
              (3, {"choice": "A"}), (3, {"choice": "B"})]  # a tie: left out; task 4: alone
    result = majority_agreement(own, others)
    assert (result.agreed, result.compared, result.ties, result.alone) == (1, 2, 1, 1)
    assert result.rate == 0.5
    # Answers are equal as JSON values, whatever the key order.
    assert majority_agreement({1: {"a": 1, "b": 2}}, [(1, {"b": 2, "a": 1})]).agreed == 1
    assert majority_agreement({}, []).rate is None


def test_median_ignores_missing_times():
    assert median([None, 10.0, 30.0, 20.0]) == 20.0 and median([None]) is None


# --- the summary -------------------------------------------------------------------------------

def test_summary_of_a_worker(alice):
    batch = make_batch(4, n=4, gold_every=2)  # tasks 2 and 4 are gold
    t1, t2, t3, t4 = batch.tasks.order_by("position")
    me = worker_for_user(alice)
    x, y, z = make_workers(3)
    gold2 = t2.gold_answer["choice"]
    wrong4 = "B" if t4.gold_answer["choice"] == "A" else "A"
    answer(t1, me, "A", 10)
    answer(t2, me, gold2, 20)
    answer(t3, me, "A", 40)
    answer(t4, me, wrong4, 50)
    for w, c in ((x, "A"), (y, "A"), (z, "B")):
        answer(t1, w, c)  # majority A: agrees
    other2 = "B" if gold2 == "A" else "A"
    for w, c in ((x, other2), (y, other2), (z, gold2)):
        answer(t2, w, c)  # majority other2: disagrees
    answer(t3, x, "A")
    answer(t3, y, "B")  # tie: left out; t4: nobody else
    summary = worker_summary(me)
    assert summary.submitted == 4 and summary.median_seconds == pytest.approx(30.0, abs=0.5)
    assert (summary.gold_correct, summary.gold_total) == (1, 2)
    a = summary.agreement
    assert (a.agreed, a.compared, a.ties, a.alone) == (1, 2, 1, 1)
    (line,) = summary.batches
    assert (line.title, line.submitted, line.by_status) == (batch.title, 4, {"submitted": 4})


# --- the page ----------------------------------------------------------------------------------

def _page(client, worker, **params):
    url = reverse("admin:annotation_worker_overview", args=[worker.pk])
    return client.get(url, params)


def test_the_page_shows_the_person_record_and_earnings(admin_client_, alice):
    batch = make_batch(2, n=2, reward=Decimal("0.40"))
    me, other = worker_for_user(alice), make_workers(1)[0]
    t1, t2 = batch.tasks.order_by("position")
    a1 = answer(t1, me, "A", 12)
    answer(t2, me, "B", 18)
    answer(t1, other, "A")
    services.local_assignment_approve(a1)
    html = _page(admin_client_, me).content.decode()
    assert 'id="worker-person">alice<' in html and "local:user" not in html
    assert 'id="worker-submitted">2<' in html
    assert "15.0 s" in html  # median of 12 and 18
    assert "1 of 1 tasks (100 %)" in html  # t1 agrees with the other worker; t2 is alone
    assert "Ties for the most" in html  # the rule is said on the page
    assert "$0.40" in html  # one approved (owed: local), one pending
    assert "approved 1, submitted 1" in html or "submitted 1, approved 1" in html
    assert 'id="worker-marketplace-block">— (local account)<' in html
    assert "{&quot;choice&quot;: &quot;B&quot;}" in html  # the answer as JSON, escaped


def test_a_marketplace_worker_is_shown_by_id_and_provider(admin_client_):
    turker = worker_for_external("mturk", "A1TURKER")
    html = _page(admin_client_, turker).content.decode()
    assert 'id="worker-person">A1TURKER (Mechanical Turk)<' in html
    assert 'id="worker-marketplace-block">not blocked<' in html


def test_answers_and_notes_are_escaped(admin_client_, alice):
    batch = make_batch(1, n=1)
    a = answer(batch.tasks.get(), worker_for_user(alice), "A")
    services.local_assignment_reject(a, reason="<script>alert(1)</script>")
    html = _page(admin_client_, worker_for_user(alice)).content.decode()
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html


def test_the_list_and_the_change_page_link_to_it(admin_client_, alice):
    me = worker_for_user(alice)
    url = reverse("admin:annotation_worker_overview", args=[me.pk])
    listing = admin_client_.get(reverse("admin:annotation_worker_changelist")).content.decode()
    assert url in listing and ">alice<" in listing
    change = admin_client_.get(reverse("admin:annotation_worker_change", args=[me.pk]))
    assert url in change.content.decode()


def test_assignments_are_paginated_in_a_fixed_number_of_queries(admin_client_, alice):
    me = worker_for_user(alice)
    counts = []
    for n_tasks in (3, 60):
        batch = make_batch(n_tasks, n=2)
        other = make_workers(1)[0]
        for task in batch.tasks.order_by("position"):
            answer(task, me, "A")
            answer(task, other, "B")
        with CaptureQueriesContext(connection) as captured:
            response = _page(admin_client_, me)
        assert response.status_code == 200
        counts.append(len(captured.captured_queries))
    assert counts[0] == counts[1]  # 3 or 63 assignments: the same queries
    # session, user, worker, summary 2, payments 2, page 2, batches awaiting review, the
    # reliability panel (its votes: none here)
    assert counts[0] <= 11
    page2 = _page(admin_client_, me, page=2).content.decode()
    assert "Page 2 of 2 (63 assignments)" in page2


def test_only_staff_reach_it(client, alice_client, analyst_client, alice):
    url = reverse("admin:annotation_worker_overview", args=[worker_for_user(alice).pk])
    for c in (client, alice_client, analyst_client):
        response = c.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert alice_client.post(url, {"op": "block"}).status_code == 302
    assert not worker_for_user(alice).blocked


def test_staff_without_model_permissions_get_403(django_user_model, alice):
    from django.test import Client

    staff = django_user_model.objects.create_user(username="sam_staff", password="pw",
                                                  is_staff=True)
    client = Client()
    client.force_login(staff)
    batch = make_batch(1, n=1)
    worker = worker_for_user(alice)
    for url in (reverse("admin:annotation_worker_overview", args=[worker.pk]),
                reverse("admin:annotation_marketplacebatch_review", args=[batch.pk]),
                reverse("admin:annotation_marketplacebatch_payments", args=[batch.pk])):
        assert client.get(url).status_code == 403, url
        assert client.post(url, {"op": "block"}).status_code == 403, url
    assert not worker_for_user(alice).blocked
