"""The product's review page, through HTTP: the task beside each answer (not raw JSON),
filters by worker, answer, time, gold and flags, approve / reject by filter across pages with
one reason, and blocking a worker from the same screen after a confirmation, with a reason."""
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.models import Assignment, Worker
from tests.factories import make_batch, make_workers

pytestmark = pytest.mark.django_db(transaction=True)  # decisions run outside transactions


def _answer(batch, worker, choice, seconds=20, telemetry=None):
    start = timezone.now() - timedelta(minutes=5)
    lease = task_claim_next(batch=batch, worker=worker, now=start)
    assignment_submit(assignment=lease, data={"choice": choice}, telemetry=telemetry,
                      now=start + timedelta(seconds=seconds))
    return Assignment.objects.get(pk=lease.pk)


def _review(client, batch, **params):
    return client.get(reverse("console:review", args=[batch.uuid]), params)


def test_each_answer_is_shown_beside_its_task_in_words(admin_client_):
    batch = make_batch(1, n=1)
    worker = make_workers(1)[0]
    Worker.objects.filter(pk=worker.pk).update(external_id="<b>mallory</b>")
    _answer(batch, Worker.objects.get(pk=worker.pk), "B")
    html = _review(admin_client_, batch).content.decode()
    assert "Describe what is unusual in image 1." in html  # the instruction
    assert "Answer A for item 1." in html and "Answer B for item 1." in html  # the responses
    assert "https://example.org/img1.png" in html  # the image
    assert '{"choice"' not in html and "&quot;choice&quot;" not in html
    assert '<dd class="answer-value">B</dd>' in html and "20 s" in html
    assert "<b>mallory</b>" not in html  # worker text escaped


def test_each_answer_shows_its_time_on_the_page_from_the_telemetry(admin_client_):
    batch = make_batch(2, n=1)
    timed, untimed = make_workers(2)
    _answer(batch, timed, "A", seconds=40, telemetry={"active_ms": 12_600})
    _answer(batch, untimed, "B", seconds=30)
    html = _review(admin_client_, batch).content.decode()
    assert "40 s (13 s on the page)" in html
    assert "30 s ·" in html and html.count("s on the page") == 1  # no telemetry: no time


def test_filters_narrow_by_worker_answer_time_and_gold(admin_client_):
    batch = make_batch(4, n=2, gold_every=2)
    quick, slow = make_workers(2)
    for _ in range(4):
        _answer(batch, quick, "A", seconds=3)
    for _ in range(4):
        _answer(batch, slow, "B", seconds=60)
    count = lambda **p: _review(admin_client_, batch, **p).context["count"]  # noqa: E731
    assert count() == 8
    assert count(worker=quick.external_id) == 4
    assert count(answer="choice:B") == 4
    assert count(max_seconds="10") == 4 and count(min_seconds="10", max_seconds="100") == 4
    assert count(gold="gold") == 4 and count(gold="right") == 2 and count(gold="wrong") == 2
    assert count(answer="choice:Z", min_seconds="nan") == 8  # unknown values: no filter


def test_approve_by_filter_covers_every_page_and_only_the_filter(admin_client_):
    batch = make_batch(60, n=2)
    yes, no = make_workers(2)
    for _ in range(60):
        _answer(batch, yes, "A")
    for _ in range(5):
        _answer(batch, no, "B")
    page = _review(admin_client_, batch, answer="choice:A")
    assert page.context["count"] == 60 and len(page.context["page"].object_list) == 50
    assert "Page 1 of 2" in page.content.decode()
    url = reverse("console:review", args=[batch.uuid]) + "?answer=choice:A"
    admin_client_.post(url, {"decision": "approve", "matching": "on", "reason": ""})
    statuses = dict(Assignment.objects.filter(batch=batch).values_list("worker", "status")
                    .distinct())
    assert Assignment.objects.filter(worker=yes, status="approved").count() == 60
    assert Assignment.objects.filter(worker=no, status="submitted").count() == 5
    assert statuses[no.pk] == "submitted"


def test_reject_by_filter_needs_one_reason_the_worker_reads(admin_client_):
    batch = make_batch(3, n=1)
    worker = make_workers(1)[0]
    for _ in range(3):
        _answer(batch, worker, "A")
    url = reverse("console:review", args=[batch.uuid])
    page = admin_client_.post(url, {"decision": "reject", "matching": "on", "reason": " "})
    assert "needs a reason" in page.content.decode()
    assert Assignment.objects.filter(status="submitted").count() == 3
    admin_client_.post(url, {"decision": "reject", "matching": "on",
                             "reason": "Answered without reading."})
    assert set(Assignment.objects.values_list("status", "review_note")) == {
        ("rejected", "Answered without reading.")}


def test_blocking_from_the_review_asks_first_and_the_reason_reaches_the_worker(admin_client_):
    batch = make_batch(2, n=1)
    worker = make_workers(1)[0]
    _answer(batch, worker, "A")
    review = _review(admin_client_, batch).content.decode()
    url = reverse("console:block", args=[batch.uuid])
    assert f"{url}?worker={worker.uuid}" in review
    confirm = admin_client_.get(url, {"worker": worker.uuid})
    assert confirm.status_code == 200 and "Block" in confirm.content.decode()
    admin_client_.post(f"{url}?worker={worker.uuid}", {"reason": "Clicked through."})
    assert not Worker.objects.get(pk=worker.pk).blocked  # not confirmed: nothing happens
    refused = admin_client_.post(f"{url}?worker={worker.uuid}", {
        "reason": "bad\x07bell", "confirm": "on", "reject_pending": "on"})
    assert refused.status_code == 200 and refused.context["form"].errors["reason"]
    assert not Worker.objects.get(pk=worker.pk).blocked  # a refused reason writes nothing
    admin_client_.post(f"{url}?worker={worker.uuid}",
                       {"reason": "Clicked through.", "confirm": "on", "reject_pending": "on"})
    blocked = Worker.objects.get(pk=worker.pk)
    assert blocked.blocked and blocked.blocked_reason == "Clicked through."
    assert Assignment.objects.get(worker=worker).status == "rejected"


def test_the_review_page_is_for_admins_only(alice_client, analyst_client):
    batch = make_batch(1)
    for client in (alice_client, analyst_client):
        assert _review(client, batch).status_code == 403
        assert client.get(reverse("console:block", args=[batch.uuid])).status_code == 403


def test_the_review_page_costs_the_same_queries_for_5_answers_as_for_50(admin_client_):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = []
    for size in (5, 50):
        batch = make_batch(size, n=1)
        worker = make_workers(1)[0]
        for _ in range(size):
            _answer(batch, worker, "A")
        with CaptureQueriesContext(connection) as queries:
            assert _review(admin_client_, batch).status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1], counts
