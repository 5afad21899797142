"""The four rating pages in Chromium: keyboard answering, the minimum-time guard, and the
judgments each submission records."""
import pytest
from django.urls import reverse

from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
from annotation.models import Batch
from judging.models import Comparison, Judgment
from judging.services.comparisons import comparison_batch_create
from tests.judging import builders

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


LOCK_SECONDS = 3  # long enough that the page is still locked when first looked at under load


def _open(page_for, user, batch):
    """The task page, checked locked at once: the submit button starts disabled with an
    explanation (checked here, right after loading, not after the test's typing, which under
    load could outlast the lock)."""
    page = page_for(user)
    page.goto(reverse("annotation:batch_next", args=[batch.uuid]))
    assert page.locator("#submit-btn").is_disabled()
    assert "unlocks" in page.locator("#time-guard").inner_text()
    return page


def _guarded(page):
    """The submit button unlocks once the minimum time has passed."""
    page.locator("#submit-btn:enabled").wait_for(timeout=(LOCK_SECONDS + 5) * 1000)


def _batch(hit_type, rows, min_seconds=LOCK_SECONDS):
    batch = batch_create_from_rows(hit_type=hit_type, title=f"{hit_type} test", rows=rows,
                                   assignments_per_task=1, min_seconds=min_seconds)
    return batch_set_status(batch, Batch.Status.ACTIVE)


def test_forced_choice_page_records_the_winning_model(page_for, alice):
    inst = builders.instance(instruction="What is unusual about this <b>fridge</b>?")
    ms = builders.models("LLaVA", "BLIP")
    ra, rb = builders.respond(inst, ms["LLaVA"]), builders.respond(inst, ms["BLIP"])
    comparison = Comparison.objects.create(instance=inst, response_a=rb, response_b=ra,
                                           swapped=True)
    batch = comparison_batch_create(comparisons=[comparison], title="ab",
                                    judgments_per_comparison=1, min_seconds=LOCK_SECONDS)
    batch_set_status(batch, Batch.Status.ACTIVE)
    page = _open(page_for, alice, batch)
    assert "<b>fridge</b>" in page.locator("#instruction").inner_text()  # escaped, shown as text
    assert "BLIP" in page.locator("#response-a").inner_text()
    page.keyboard.press("b")
    assert page.locator("#choice-B").is_checked()
    _guarded(page)
    page.keyboard.press("Enter")
    page.wait_for_selector("text=All done")
    judgment = Judgment.objects.get()
    assert judgment.choice == "B" and judgment.comparison.response_b.model.name == "LLaVA"


def test_multi_turn_page_keyboard_walks_the_turns(page_for, alice):
    ms = builders.models("Alpha", "Beta")
    inst = builders.conversation(ms["Alpha"], ms["Beta"])
    anchor = {r.model.name: r for r in inst.responses.filter(turn=1)}
    comparison = Comparison.objects.create(instance=inst, response_a=anchor["Alpha"],
                                           response_b=anchor["Beta"])
    batch = comparison_batch_create(comparisons=[comparison], title="conv",
                                    judgments_per_comparison=1, min_seconds=LOCK_SECONDS)
    batch_set_status(batch, Batch.Status.ACTIVE)
    page = _open(page_for, alice, batch)
    assert page.locator("#turn2-question").inner_text() == "Why might the cup be empty?"
    assert page.locator("#turn3-response-b").inner_text() == "B answer to turn 3"
    assert "Mentions the empty cup" in page.locator("#focus-points").inner_text()
    assert "active" in page.locator("#group-turn1").get_attribute("class")
    for key in ("1", "2", "b", "a"):
        page.keyboard.press(key)
    assert page.locator("#turn1-A").is_checked() and page.locator("#turn2-B").is_checked()
    assert page.locator("#turn3-B").is_checked() and page.locator("#overall-A").is_checked()
    page.click("#group-turn2 legend")  # clicking a group makes it the one the keys answer
    page.keyboard.press("a")
    assert page.locator("#turn2-A").is_checked()
    _guarded(page)
    page.keyboard.press("Enter")
    page.wait_for_selector("text=All done")
    got = dict(Judgment.objects.values_list("turn", "choice"))
    assert got == {"1": "A", "2": "A", "3": "B", "overall": "A"}


def test_rubric_page_score_keys_and_feedback(page_for, alice):
    inst = builders.instance(instruction="Which bar is tallest?")
    rubric = builders.rubric(inst)
    response = builders.respond(inst, builders.models("LLaVA")["LLaVA"], "The third bar.")
    batch = _batch("rubric_score", [{"response": str(response.uuid), "rubric": str(rubric.uuid)}])
    page = _open(page_for, alice, batch)
    assert page.locator("#criteria").inner_text().startswith("Does the response describe")
    assert page.locator(".level").count() == 5
    assert "third one" in page.locator("#reference-answer").inner_text()
    page.keyboard.press("4")
    assert page.locator("#score-4").is_checked()
    page.fill("#feedback", "Names the right bar but gives no values at all.")
    page.keyboard.press("2")  # typing in the feedback box never changes the score
    assert page.locator("#score-4").is_checked()
    assert "/ 2000" in page.locator(".counter").inner_text()
    _guarded(page)
    page.locator("#criteria").click()
    page.keyboard.press("Enter")
    page.wait_for_selector("text=All done")
    judgment = Judgment.objects.get()
    assert judgment.score == 4.0 and judgment.kind == "score" and judgment.response == response


def test_feedback_page_keys(page_for, alice):
    batch = _batch("feedback_ab", [{"instruction": "Which bar is tallest?",
                                    "response_text": "The third bar.",
                                    "feedback_a": "Accurate and specific.",
                                    "feedback_b": "Too harsh: the answer is right."}])
    page = _open(page_for, alice, batch)
    assert page.locator("#feedback-b").inner_text() == "Too harsh: the answer is right."
    page.keyboard.press("2")
    assert page.locator("#choice-B").is_checked()
    _guarded(page)
    page.keyboard.press("Enter")
    page.wait_for_selector("text=All done")
    assert batch.assignments.get().answer == {"choice": "B"}
