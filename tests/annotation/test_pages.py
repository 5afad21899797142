"""Task pages: local flow, ownership, forged ids, MTurk arrival and preview, framing policy."""
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.urls import reverse

from annotation.models import Assignment, Worker
from tests.factories import make_batch, publish_on_mturk

pytestmark = pytest.mark.django_db

MTURK = "https://workersandbox.mturk.com"


def _claim(client, batch):
    response = client.get(reverse("annotation:batch_next", args=[batch.uuid]))
    assert response.status_code == 302
    return response.url


def test_local_annotator_claims_sees_and_submits(alice_client):
    batch = make_batch(2, n=1)
    url = _claim(alice_client, batch)
    page = alice_client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Task 1 of 2" in html and "Answer A for item 1." in html
    assert page.headers["Content-Security-Policy"].endswith("base-uri 'none'")
    # The submit answers with the next task's page itself (no redirect, no second request).
    submitted = alice_client.post(url, {"choice": "B"})
    assert submitted.status_code == 200
    second = Assignment.objects.get(worker__user__username="alice", status="leased")
    second_url = reverse("annotation:assignment", args=[second.uuid])
    html = submitted.content.decode()
    assert "Task 2 of 2" in html and "Answer A for item 2." in html
    assert f'action="{second_url}"' in html
    assert Assignment.objects.get(uuid=url.split("/")[-2]).answer == {"choice": "B"}
    # Posting the same answer again (a reload of that response) stores nothing new.
    again = alice_client.post(url, {"choice": "A"})
    assert again.status_code == 200 and f'action="{second_url}"' in again.content.decode()
    assert Assignment.objects.get(uuid=url.split("/")[-2]).answer == {"choice": "B"}
    assert Assignment.objects.filter(status="leased").count() == 1
    last = alice_client.post(second_url, {"choice": "A"})
    assert last.url == reverse("annotation:batch_next", args=[batch.uuid])
    assert "All done" in alice_client.get(last.url).content.decode()


def test_worker_text_is_escaped(alice_client):
    from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
    batch = batch_create_from_rows(hit_type="pairwise_ab", title="xss", rows=[{
        "instruction": "<script>alert(1)</script>", "response_a": "<img src=x onerror=alert(2)>",
        "response_b": "ok"}], assignments_per_task=1)
    batch_set_status(batch, "active")
    html = alice_client.get(_claim(alice_client, batch)).content.decode()
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    assert "<img src=x" not in html


def test_invalid_answer_shows_error_and_writes_nothing(alice_client):
    batch = make_batch(1, n=1)
    url = _claim(alice_client, batch)
    response = alice_client.post(url, {"choice": "C"})
    assert response.status_code == 400 and "choice" in response.content.decode()
    assert Assignment.objects.get().answer is None


def test_other_annotator_gets_404_and_writes_nothing(alice_client, bob_client, client):
    batch = make_batch(1, n=2)
    url = _claim(alice_client, batch)
    assert bob_client.get(url).status_code == 404
    assert bob_client.post(url, {"choice": "A"}).status_code == 404
    assert client.post(url, {"choice": "A"}).status_code == 404  # anonymous
    assert bob_client.post(url + "skip/").status_code == 404
    assert Assignment.objects.get().status == "leased"


def test_forged_token_gets_404(client, alice_client):
    batch = make_batch(1, n=1)
    url = _claim(alice_client, batch)
    assert client.post(url + "?t=forged", {"choice": "A", "t": "forged"}).status_code == 404
    assert Assignment.objects.get().answer is None


def test_anonymous_and_non_annotators_cannot_claim(client, analyst_client):
    batch = make_batch(1, n=1)
    url = reverse("annotation:batch_next", args=[batch.uuid])
    assert client.get(url).status_code == 302  # to login
    assert analyst_client.get(url).status_code == 403
    assert not Assignment.objects.exists()


def test_session_post_without_csrf_token_is_refused(alice):
    from django.test import Client
    batch = make_batch(1, n=1)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    url = _claim(strict, batch)
    assert strict.post(url, {"choice": "A"}).status_code == 403
    assert Assignment.objects.get().answer is None


def _mturk_url(task, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return reverse("annotation:mturk_task", args=[task.uuid]) + "?" + query


def test_mturk_preview_is_read_only_and_writes_nothing(client):
    batch = make_batch(1, n=1, provider="mturk")  # preview works before the launch too
    task = batch.tasks.get()
    page = client.get(_mturk_url(task, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE", hitId="H1"))
    html = page.content.decode()
    assert page.status_code == 200 and "Preview" in html
    assert '<fieldset disabled' in html
    assert "frame-ancestors 'self' https://www.mturk.com" in page.headers["Content-Security-Policy"]
    assert "X-Frame-Options" not in page.headers
    assert not Assignment.objects.exists() and not Worker.objects.exists()


def test_mturk_accept_submit_posts_back_to_mturk(client):
    batch = make_batch(1, n=2)
    publish_on_mturk(batch)
    task = batch.tasks.get()
    arrival = client.get(_mturk_url(task, assignmentId="ASG1", hitId="3HIT1", workerId="W1",
                                    turkSubmitTo=MTURK))
    assert arrival.status_code == 302 and "?t=" in arrival.url
    token = parse_qs(urlsplit(arrival.url).query)["t"][0]
    page = client.get(arrival.url)
    assert page.status_code == 200 and 'name="t"' in page.content.decode()
    done = client.post(arrival.url.split("?")[0], {"choice": "A", "t": token})
    html = done.content.decode()
    assert f'action="{MTURK}/mturk/externalSubmit"' in html
    assert 'name="assignmentId" value="ASG1"' in html
    a = Assignment.objects.get()
    assert a.worker.provider == "mturk" and a.worker.external_id == "W1" and a.counted
    # Re-opening the HIT returns to the same assignment; no second slot is taken.
    again = client.get(_mturk_url(task, assignmentId="ASG1", hitId="3HIT1", workerId="W1",
                                  turkSubmitTo=MTURK))
    assert again.status_code == 302 and Assignment.objects.count() == 1


def test_mturk_forged_or_foreign_ids_are_refused(client):
    batch = make_batch(1, n=3)
    publish_on_mturk(batch)
    task = batch.tasks.get()
    client.get(_mturk_url(task, assignmentId="ASG1", hitId="3HIT1", workerId="W1", turkSubmitTo=MTURK))
    stolen = client.get(_mturk_url(task, assignmentId="ASG1", hitId="3HIT1", workerId="W2",
                                   turkSubmitTo=MTURK))
    assert stolen.status_code == 403
    evil = client.get(_mturk_url(task, assignmentId="ASG9", hitId="3HIT1", workerId="W3",
                                 turkSubmitTo="https://evil.example"))
    assert evil.status_code == 400
    assert Assignment.objects.count() == 1
    assert not Worker.objects.filter(external_id__in=["W3"]).exists()


def _arrive(client, task, **overrides):
    params = {"assignmentId": "ASG1", "hitId": "3HIT1", "workerId": "W1",
              "turkSubmitTo": MTURK, **overrides}
    return client.get(reverse("annotation:mturk_task", args=[task.uuid]) + "?"
                      + urlencode(params))


def test_mturk_arrival_for_a_batch_never_launched_there_writes_nothing(client):
    """Ballot stuffing: a task uuid of a local batch (annotators see them) must not become
    votes under invented worker ids, nor leases that starve real annotators."""
    local = make_batch(1, n=1).tasks.get()
    assert _arrive(client, local).status_code == 404
    assert _arrive(client, local, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE").status_code == 404
    unlaunched = make_batch(1, n=1, provider="mturk").tasks.get()
    refused = _arrive(client, unlaunched)
    assert refused.status_code == 403 and "not published" in refused.content.decode()
    assert "frame-ancestors 'self'" in refused.headers["Content-Security-Policy"]
    assert not Assignment.objects.exists() and not Worker.objects.exists()


def test_mturk_arrival_needs_the_hit_created_for_that_task(client):
    batch = make_batch(2, n=1)
    first, second = publish_on_mturk(batch)
    tasks = list(batch.tasks.order_by("position"))
    assert _arrive(client, tasks[0], hitId=second).status_code == 403  # another task's HIT
    assert _arrive(client, tasks[0], hitId="3HITFORGED").status_code == 403
    other = make_batch(1, n=1)
    (foreign,) = publish_on_mturk(other, prefix="3OTHER")  # a HIT of another batch's task
    assert _arrive(client, tasks[1], hitId=foreign, assignmentId="ASG2").status_code == 403
    assert not Assignment.objects.exists() and not Worker.objects.exists()
    assert _arrive(client, tasks[0], hitId=first).status_code == 302


@pytest.mark.parametrize("params", [
    {"workerId": "   "}, {"workerId": "W" * 129}, {"workerId": "W1\x00"}, {"workerId": ""},
    {"assignmentId": "A" * 200}, {"hitId": ""}, {"workerId": "W1\r\nSet-Cookie: x=1"},
])
def test_mturk_arrival_with_malformed_ids_is_a_400(client, params):
    batch = make_batch(1, n=1)
    publish_on_mturk(batch)
    answer = _arrive(client, batch.tasks.get(), **params)
    assert answer.status_code == 400
    assert not Assignment.objects.exists() and not Worker.objects.exists()


def test_non_task_pages_cannot_be_framed(alice_client):
    response = alice_client.get(reverse("annotation:available"))
    assert response.status_code == 200
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Frame-Options"] == "DENY"


@pytest.mark.parametrize("lost_lease", [False, True], ids=["fast path", "locking path"])
def test_a_submit_that_blocks_its_worker_hands_out_no_further_task(alice_client, settings,
                                                                   lost_lease):
    """The gold check blocks the worker inside the submit; the response must not lease them
    another task — whichever way the submit was stored."""
    settings.AUTO_BLOCK_MIN_GOLD = 1
    batch = make_batch(3, n=2, gold_every=1, auto_block_below=0.5)  # every task is gold ("A")
    url = _claim(alice_client, batch)
    if lost_lease:  # swept meanwhile: the submit re-reads the row under a lock
        Assignment.objects.filter(uuid=url.split("/")[-2]).update(status="expired")
    response = alice_client.post(url, {"choice": "B"}, follow=True)
    assert "blocked" in response.content.decode()
    assert Worker.objects.get(user__username="alice").blocked
    assert not Assignment.objects.filter(status="leased").exists()


def test_marketplace_pages_after_skip_and_refusal_can_be_framed(client):
    """Inside the marketplace's iframe every page of the flow must show, not a blocked frame."""
    batch = make_batch(1, n=1)
    publish_on_mturk(batch)
    arrival = _arrive(client, batch.tasks.get())
    token = parse_qs(urlsplit(arrival.url).query)["t"][0]
    uuid = arrival.url.split("/a/")[1].split("/")[0]
    skipped = client.post(reverse("annotation:assignment_skip", args=[uuid]), {"t": token})
    assert skipped.status_code == 200
    assert "frame-ancestors 'self' https://www.mturk.com" in \
        skipped.headers["Content-Security-Policy"]
    assert "X-Frame-Options" not in skipped.headers
    refused = _arrive(client, batch.tasks.get(), assignmentId="ASG9", workerId="W9",
                      hitId="3HITX")
    assert refused.status_code == 403 and "X-Frame-Options" not in refused.headers


def test_a_refused_mturk_claim_leaves_no_worker_row(client):
    """The claim's refusals (a paused batch, an assignment id of someone else's) roll the
    worker row back with them: the arrival is one transaction, like Prolific's."""
    batch = make_batch(1, n=2)
    publish_on_mturk(batch)
    task = batch.tasks.get()
    assert _arrive(client, task).status_code == 302  # W1 holds ASG1
    assert _arrive(client, task, workerId="W2").status_code == 403  # ASG1 is not W2's
    batch.status = "paused"
    batch.save(update_fields=["status"])
    assert _arrive(client, task, workerId="W3", assignmentId="ASG3").status_code == 403
    assert set(Worker.objects.values_list("external_id", flat=True)) == {"W1"}
    assert Assignment.objects.count() == 1
