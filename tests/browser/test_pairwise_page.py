"""The forced-choice A/B page as a worker uses it: keyboard, submit, progress, time guard."""
import pytest
from django.urls import reverse

from annotation.models import Assignment
from tests.factories import make_batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_keyboard_choice_submit_and_progress(page_for, alice):
    batch = make_batch(3, n=1)
    page = page_for(alice)
    page.goto(reverse("annotation:batch_next", args=[batch.uuid]))
    assert page.locator("#task-position").inner_text() == "Task 1 of 3"
    page.keyboard.press("2")
    assert page.locator("#choice-B").is_checked()
    page.keyboard.press("a")
    assert page.locator("#choice-A").is_checked()
    page.keyboard.press("Enter")
    page.wait_for_selector("#task-position:has-text('Task 2 of 3')")
    assert page.locator("#task-progress").get_attribute("value") == "1"
    first = Assignment.objects.get(task__position=1)
    assert first.answer == {"choice": "A"} and first.counted
    # Submitting without a choice is blocked by the browser, nothing is written.
    page.click("#submit-btn")
    assert page.locator("#task-position").inner_text() == "Task 2 of 3"
    assert Assignment.objects.filter(submitted_at__isnull=False).count() == 1


def test_submit_shows_the_next_task_at_its_own_address_and_reload_reposts_nothing(page_for,
                                                                                   alice):
    batch = make_batch(3, n=1)
    page = page_for(alice)
    posts = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    page.goto(reverse("annotation:batch_next", args=[batch.uuid]))
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    page.wait_for_selector("#task-position:has-text('Task 2 of 3')")
    second = Assignment.objects.get(task__position=2)
    own = reverse("annotation:assignment", args=[second.uuid])
    assert page.evaluate("location.pathname") == own  # not the submitted task's address
    page.reload()
    assert page.locator("#task-position").inner_text() == "Task 2 of 3"
    assert "item 2" in page.locator("#response-a").inner_text()
    assert len(posts) == 1  # the reload was a GET of task 2, not the answer posted again
    assert Assignment.objects.filter(submitted_at__isnull=False).count() == 1
    page.go_back()  # the task before is done: its address leads on to the current task
    page.wait_for_selector("#task-position:has-text('Task 2 of 3')")
    assert len(posts) == 1


def test_skip_moves_on_and_never_returns(page_for, alice):
    batch = make_batch(2, n=1)
    page = page_for(alice)
    page.goto(reverse("annotation:batch_next", args=[batch.uuid]))
    page.click("#skip-btn")  # sent after the undo window (5 s)
    page.wait_for_selector(".flash:has-text('Task skipped')", timeout=15_000)
    # the skipped task is no longer the worker's: their own tasks are the one left
    page.wait_for_selector("#task-position:has-text('Task 1 of 1')")
    assert "item 2" in page.locator("#response-a").inner_text()
    assert Assignment.objects.get(task__position=1).status == "returned"


def test_minimum_time_guard_unlocks_submit(page_for, alice):
    batch = make_batch(1, n=1, min_seconds=2)
    page = page_for(alice)
    page.goto(reverse("annotation:batch_next", args=[batch.uuid]))
    page.keyboard.press("1")
    assert page.locator("#submit-btn").is_disabled()
    assert "unlocks" in page.locator("#time-guard").inner_text()
    page.locator("#submit-btn:enabled").wait_for(timeout=5000)
    page.keyboard.press("Enter")
    page.wait_for_selector("text=All done")
    assert Assignment.objects.get().answer == {"choice": "A"}


def test_mturk_preview_and_phone_layout(page_for):
    batch = make_batch(1, n=1, provider="mturk")
    task = batch.tasks.get()
    page = page_for(None, viewport={"width": 390, "height": 844})
    page.goto(reverse("annotation:mturk_task", args=[task.uuid])
              + "?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H1")
    assert "Preview" in page.locator(".banner").inner_text()
    assert page.locator("#submit-btn").is_disabled()
    a_box = page.locator("label[for=choice-A]").bounding_box()
    b_box = page.locator("label[for=choice-B]").bounding_box()
    assert b_box["y"] > a_box["y"] + a_box["height"] - 1  # stacked on a phone
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert not Assignment.objects.exists()
