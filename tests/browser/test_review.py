"""The disagreement review in Chromium: the analyst opens the list, opens a split item, reads
its votes and adjudicates; the ruling is stored apart from the votes and shown as current."""
from datetime import timedelta

import pytest

from annotation.engine.services.batches import batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.models import Batch
from judging.models import Comparison, Judgment
from judging.services.comparisons import comparison_batch_create
from tests.factories import make_workers
from tests.judging import builders

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def split_item(transactional_db):
    inst = builders.instance(instruction="Which bar is tallest?", urls=[])  # no outside fetch
    ms = builders.models("LLaVA", "BLIP")
    comparison = Comparison.objects.create(
        instance=inst, response_a=builders.respond(inst, ms["LLaVA"], "The <b>third</b> bar."),
        response_b=builders.respond(inst, ms["BLIP"], "The first bar."))
    batch = comparison_batch_create(comparisons=[comparison], title="Bars",
                                    judgments_per_comparison=5)
    batch_set_status(batch, Batch.Status.ACTIVE)
    for worker, choice in zip(make_workers(5), "AABBA", strict=True):
        a = task_claim_next(batch=batch, worker=worker)
        assignment_submit(assignment=a, data={"choice": choice},
                          now=a.claimed_at + timedelta(seconds=30))
    return comparison


def test_analyst_reviews_and_adjudicates(page_for, analyst, split_item):
    page = page_for(analyst)
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto("/review/")
    row = page.locator("#review-items tbody tr")
    assert row.count() == 1 and "3 / 2 / 0" in row.inner_text()
    page.select_option("#id_kind", "judges")
    page.click("#review-filters button")
    assert page.locator("#empty").is_visible()  # no judge disagrees: nothing under that filter
    page.select_option("#id_kind", "split")
    page.click("#review-filters button")
    page.click("#review-items tbody tr a")
    page.wait_for_url(f"**/review/{split_item.uuid}/?turn=")
    assert page.locator("#response-a").inner_text() == "The <b>third</b> bar."
    assert page.locator("#human-votes tbody tr").count() == 5
    assert "Majority: A" in page.locator("#majority").inner_text()
    page.check("#ruling-B")
    page.fill("#id_note", "The first bar is the tallest in the image.")
    page.click("#adjudicate-submit")
    page.wait_for_selector("#rulings")
    assert "Adjudicated: B." in page.locator(".flash").inner_text()
    ruling = page.locator("#rulings tbody tr").first.inner_text()
    assert "B" in ruling and analyst.username in ruling and "current" in ruling
    stored = Judgment.objects.get(kind=Judgment.Kind.ADJUDICATION)
    assert (stored.annotator, stored.choice) == (analyst.username, "B")
    assert Judgment.objects.filter(kind=Judgment.Kind.PAIRWISE).count() == 5
    page.goto("/review/")
    assert page.locator("#empty").is_visible()  # adjudicated: no longer open
    assert errors == []
