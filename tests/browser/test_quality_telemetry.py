"""Telemetry from a real Chromium task page to the results export: typing and pasting into a
rubric page's feedback box, submitting, then downloading the batch's CSV as its owner."""
import csv
import io

import pytest
from django.urls import reverse

from annotation.engine.hit_types import get_hit_type
from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
from annotation.models import Assignment, Batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TYPED = "Reads the hands right; "
PASTED = "but the answer never says whether it is day or night, which the image shows."
PASTE = """(text) => {
  const box = document.getElementById("feedback");
  const data = new DataTransfer();
  data.setData("text/plain", text);
  box.dispatchEvent(new ClipboardEvent("paste", {clipboardData: data, bubbles: true,
                                                 cancelable: true}));
}"""


def test_typing_and_pasting_on_a_task_page_reach_the_results_export(page_for, alice, admin):
    batch = batch_create_from_rows(hit_type="rubric_score", title="telemetry",
                                   rows=[get_hit_type("rubric_score").example_rows[0]],
                                   assignments_per_task=1, min_seconds=1)
    batch_set_status(batch, Batch.Status.ACTIVE)
    page = page_for(alice)
    page.goto(reverse("annotation:batch_next", args=[batch.uuid]))
    page.check("#score-4")
    page.click("#feedback")
    page.keyboard.type(TYPED)
    page.evaluate(PASTE, PASTED)  # the paste event a real paste fires, then its text
    page.keyboard.insert_text(PASTED)
    page.locator("#submit-btn:enabled").wait_for(timeout=5000)
    page.click("#submit-btn")
    page.wait_for_selector("text=All done")
    stored = Assignment.objects.get(batch=batch)
    assert stored.answer["feedback"] == TYPED + PASTED
    assert "_telemetry" not in stored.answer

    owner = page_for(admin)
    download = owner.request.get(reverse("admin:annotation_batch_results",
                                         args=[batch.pk, "csv"]))
    assert download.ok
    (row,) = csv.DictReader(io.StringIO(download.text()))
    assert int(row["telemetry.keystrokes"]) >= len(TYPED)
    assert int(row["telemetry.pastes"]) == 1
    assert int(row["telemetry.pasted_chars"]) == len(PASTED)
    assert float(row["telemetry.active_seconds"]) > 0
    assert row["flags"] == "paste_heavy"  # 77 of the 100 characters were pasted
