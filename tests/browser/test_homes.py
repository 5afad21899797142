"""The annotator's day in real Chromium: '/' → available work → a task → my work; and a
refused multi-turn submit that comes back with every choice still made."""
import pytest
from django.urls import reverse

from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
from annotation.models import Assignment, Batch
from tests.factories import make_batch
from tests.support.homes import INLINE_ROWS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_annotator_home_to_task_to_my_work(page_for, alice):
    batch = make_batch(2, n=1)
    page = page_for(alice)
    page.goto("/")
    assert page.url.endswith(reverse("annotation:available"))
    card = page.locator(f"#batch-{batch.uuid}")
    assert "2 tasks" in card.locator(".left").inner_text()
    assert "Which response is better?" in card.inner_text()
    card.locator("a.start").click()
    page.wait_for_selector("#task-position:has-text('Task 1 of 2')")
    # The keys work once hit.js has run: wait for the page's load event, not just its header
    # (a loaded machine lost the key presses in between)
    page.wait_for_load_state("load")
    page.keyboard.press("1")
    page.keyboard.press("Enter")
    page.wait_for_selector("#task-position:has-text('Task 2 of 2')")
    page.click("nav >> text=My work")
    page.wait_for_selector("#history")
    assert page.locator("#history tbody tr").count() == 2  # one submitted, one in progress
    assert "pending review" in page.locator("#history").inner_text()
    page.click("nav >> text=Available work")
    assert "1 task" in page.locator(f"#batch-{batch.uuid} .left").inner_text()


def test_a_refused_multiturn_submit_keeps_the_choices(page_for, alice):
    batch = batch_create_from_rows(hit_type="multiturn_ab", title="Chat", assignments_per_task=1,
                                   rows=[INLINE_ROWS["multiturn_ab"]], min_seconds=0)
    batch_set_status(batch, Batch.Status.ACTIVE)
    page = page_for(alice)
    page.goto(reverse("annotation:batch_next", args=[batch.uuid]))
    page.keyboard.press("1")  # question 1 → A
    page.keyboard.press("2")  # question 2 → B
    page.click("label[for=overall-B]")
    # Question 3 left open, past the browser's own check (as an older page would send it):
    page.evaluate("document.querySelectorAll('input[name=turn3]')"
                  ".forEach((i) => i.removeAttribute('required'))")
    page.click("#submit-btn")
    page.wait_for_selector("#form-error")
    for checked in ("#turn1-A", "#turn2-B", "#overall-B"):
        assert page.locator(checked).is_checked(), checked
    assert not page.locator("#turn3-A").is_checked() and not page.locator("#turn3-B").is_checked()
    # The highlight starts at the one open question: a key press answers it.
    assert "active" in page.locator("#group-turn3").get_attribute("class")
    page.keyboard.press("1")
    assert page.locator("#turn3-A").is_checked()
    page.click("#submit-btn")
    page.wait_for_selector("text=All done")
    stored = Assignment.objects.get()
    assert stored.answer == {"turn1": "A", "turn2": "B", "turn3": "A", "overall": "B"}
