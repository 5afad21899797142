"""Generating a report in Chromium: the page answers at once with a progress bar that follows the
build (polled from the status endpoint), then turns into the finished report by itself, with no
manual reload."""

import pytest
from django.urls import reverse

from agreement.models import Report
from tests.agreement.study import build_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def study(transactional_db):
    return build_study()


def test_progress_bar_follows_the_build_and_the_page_becomes_the_report(page_for, analyst,
                                                                        study, held_report_builds):
    page = page_for(analyst)
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(reverse("agreement:report_list"))
    for box in page.locator("input[name=metrics]").all():
        if box.get_attribute("value") != "length":
            box.uncheck()
    page.fill("input[name=bootstrap_rounds]", "50")
    page.click("#generate")
    page.wait_for_url("**/reports/*/")
    bar = page.locator("#progress-bar")
    assert bar.is_visible()
    assert page.locator("#progress-stage").inner_text() == "waiting to start"
    first_url = page.url

    # What the build writes shows up on the open page (the status poll), without a reload.
    Report.objects.update(status=Report.Status.RUNNING, stage="metrics 1/1 (length)",
                          progress=7)
    page.wait_for_function("() => document.getElementById('progress-bar').value === 7")
    assert page.locator("#progress-stage").inner_text() == "metrics 1/1 (length)"
    assert page.locator("#progress-percent").inner_text() == "7%"

    held_report_builds.set()  # the real build runs; the page reloads itself into the report
    page.locator("#summary").wait_for(timeout=90_000)
    assert page.url == first_url
    assert Report.objects.get().status == Report.Status.DONE
    assert page.locator("#progress").count() == 0
    # The summary says who is best, or that no judge beats chance (J1's interval over these
    # few items reaches below 50 %): one of the two, never neither
    verdict = page.locator("#best-judge, #no-judge-beats-chance, #no-source-beats-chance")
    assert verdict.count() >= 1 and "J1" in page.locator("#accuracy, main").first.inner_text()
    assert page.locator("#toc a").count() >= 5
    assert not [e for e in errors if "Content Security Policy" in e], errors
