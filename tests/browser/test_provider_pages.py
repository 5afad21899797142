"""Task pages opened the way the marketplaces open them, in real Chromium, without a login.

The marketplaces' own hosts are intercepted with ``page.route``: we assert what our page posts
to MTurk's externalSubmit and where it sends a Prolific participant.
"""
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.urls import reverse

from annotation.models import Assignment
from annotation.providers.services import config_for
from tests.factories import make_batch, publish_on_mturk, publish_on_prolific

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SANDBOX = "https://workersandbox.mturk.com"


def test_mturk_preview_then_accept_posts_assignment_id_to_external_submit(page_for):
    batch = make_batch(1, n=2, provider="mturk")
    publish_on_mturk(batch)
    task = batch.tasks.get()
    page = page_for(None)  # no session: the signed per-assignment token carries identity
    base = reverse("annotation:mturk_task", args=[task.uuid])
    response = page.goto(base + "?" + urlencode({"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE",
                                                 "hitId": "3HIT1"}))
    assert f"frame-ancestors 'self' https://www.mturk.com {SANDBOX}" in \
        response.headers["content-security-policy"]
    assert "Preview" in page.locator(".banner").inner_text()
    assert page.locator("#submit-btn").is_disabled()
    assert not Assignment.objects.exists()

    posted = []

    def external_submit(route):
        posted.append((route.request.url, route.request.method, route.request.post_data))
        route.fulfill(status=200, content_type="text/html", body="<p id='mturk'>Thanks</p>")

    page.route(f"{SANDBOX}/**", external_submit)
    page.goto(base + "?" + urlencode({"assignmentId": "ASG1", "hitId": "3HIT1",
                                      "workerId": "W1", "turkSubmitTo": SANDBOX}))
    page.keyboard.press("1")
    page.click("#submit-btn")
    page.wait_for_selector("#mturk")
    assert len(posted) == 1
    url, method, body = posted[0]
    assert url == f"{SANDBOX}/mturk/externalSubmit" and method == "POST"
    assert parse_qs(body) == {"assignmentId": ["ASG1"]}
    a = Assignment.objects.get()  # committed before the post
    assert a.answer == {"choice": "A"} and a.worker.external_id == "W1"


def test_prolific_arrival_submit_and_completion_redirect(page_for):
    batch = make_batch(2, n=1, provider="prolific")
    publish_on_prolific(batch, "study1")
    code = config_for(batch).completion_code
    landed = []

    def prolific(route):
        landed.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<p id='prolific'>Done</p>")

    page = page_for(None)
    page.route("https://app.prolific.com/**", prolific)
    page.goto(reverse("annotation:prolific_batch", args=[batch.uuid]) + "?" + urlencode(
        {"PROLIFIC_PID": "PID1", "STUDY_ID": "study1", "SESSION_ID": "SESS1"}))
    page.wait_for_selector("#hit-form")  # one HIT, not the batch: no "Task 1 of 2" (#15)
    assert page.locator("#task-position").count() == 0
    page.keyboard.press("2")
    page.click("#submit-btn")
    page.wait_for_selector("#prolific")
    assert len(landed) == 1
    parts = urlsplit(landed[0])
    assert (parts.netloc, parts.path) == ("app.prolific.com", "/submissions/complete")
    assert parse_qs(parts.query) == {"cc": [code]}
    a = Assignment.objects.get()
    assert a.provider_assignment_id == "SESS1" and a.answer == {"choice": "B"}
