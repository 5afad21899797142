"""The analyst report pages in Chromium: generating a report from the page answers at once and
the report is built out of the request (the page refreshes until it is done); the report page
renders every plot (decoded images, not broken links) and its downloads."""
import threading
import time

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from agreement.models import Report
from tests.agreement.study import build_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def study(transactional_db):
    return build_study()


def test_generate_and_view_report(page_for, analyst, study):
    page = page_for(analyst)
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(reverse("agreement:report_list"))
    assert page.locator("#empty").is_visible()
    for box in page.locator("input[name=metrics]").all():
        if box.get_attribute("value") not in ("length", "bleu4"):
            box.uncheck()
    page.fill("input[name=bootstrap_rounds]", "100")
    page.fill("input[name=title]", "Browser <report>")
    page.click("#generate")
    page.wait_for_url("**/reports/*/")
    assert page.locator("#status").is_visible()
    deadline = time.monotonic() + 90
    while (report := Report.objects.get()).status not in (Report.Status.DONE,
                                                           Report.Status.FAILED):
        assert time.monotonic() < deadline, "the report was not built"
        time.sleep(0.2)
    for thread in threading.enumerate():
        if thread.name.startswith("job "):
            thread.join(30)
    assert report.status == Report.Status.DONE, report.error
    # The page reloads itself when the build is done (a reload of our own would race it).
    expect(page.locator("#status")).to_contain_text("done", timeout=30_000)
    page.wait_for_load_state("load")
    assert report.params["metrics"] == ["bleu4", "length"]
    assert page.locator("h1").inner_text() == "Browser <report>"
    assert "done" in page.locator("#status").inner_text()
    images = page.locator("img.plot")
    assert images.count() >= 5
    ids = set()
    for i in range(images.count()):
        img = images.nth(i)
        img.scroll_into_view_if_needed()
        page.wait_for_function("img => img.complete", arg=img.element_handle())
        assert img.evaluate("img => img.naturalWidth") > 100, img.get_attribute("src")
        ids.add(img.get_attribute("id"))
    assert {"plot-accuracy_by_level", "plot-agreement_main", "plot-ratings",
            "plot-length_bias"} <= ids
    cell = page.locator("#table-accuracy .row-card").first.inner_text()  # too wide: cards
    assert "J1" in cell and "75.0%" in cell
    links = page.locator("#downloads a")
    assert "report.html" in links.all_inner_texts()
    with page.expect_download() as dl:
        page.click("#downloads a:text-is('report.json')")
    assert dl.value.suggested_filename == "report.json"
    assert not [e for e in errors if "Content Security Policy" in e], errors
    page.goto(reverse("agreement:report_list"))
    assert page.locator("#reports tbody tr").count() == 1
