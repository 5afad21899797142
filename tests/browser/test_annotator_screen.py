"""The annotator's task screen in real Chromium: zoom and pan an image in the viewer (served
from our own static files), see a multi-image item side by side, skip with an undo window, and
read My work's times in the browser's own time zone."""
import re
import time
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse

from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_for_user
from annotation.models import Assignment, Batch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _two_image_batch(live_server, tasks=1):
    images = [f"{live_server.url}/static/judging/samples/{name}"
              for name in ("shapes-4.png", "bars-2.png")]
    rows = [{"instruction": f"Which picture has more purple? ({i})", "image_urls": images,
             "response_a": "The first.", "response_b": "The second."} for i in range(tasks)]
    batch = batch_create_from_rows(hit_type="pairwise_ab", title="Two pictures", rows=rows,
                                   assignments_per_task=1, min_seconds=0)
    return batch_set_status(batch, Batch.Status.ACTIVE)


def _open_task(page, batch):
    page.goto(reverse("annotation:batch_next", args=[batch.uuid]))
    page.wait_for_selector("#hit-form")
    page.wait_for_load_state("load")


def test_an_image_zooms_and_pans_in_the_viewer_and_the_keys_come_back(page_for, alice,
                                                                         live_server):
    batch = _two_image_batch(live_server)
    page = page_for(alice)
    problems = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("request", lambda r: problems.append(r.url)
            if not r.url.startswith(live_server.url) else None)
    _open_task(page, batch)
    page.locator(".images button.zoom").first.click()
    page.wait_for_selector(".viewer-container.viewer-in")
    canvas_image = page.locator(".viewer-canvas img")
    canvas_image.wait_for()
    before = canvas_image.bounding_box()
    page.click(".viewer-zoom-in")
    page.click(".viewer-zoom-in")
    page.wait_for_function(f"document.querySelector('.viewer-canvas img')"
                           f".getBoundingClientRect().width > {before['width'] * 1.15}")
    zoomed = canvas_image.bounding_box()
    centre = (zoomed["x"] + zoomed["width"] / 2, zoomed["y"] + zoomed["height"] / 2)
    page.mouse.move(*centre)
    page.mouse.down()
    page.mouse.move(centre[0] + 120, centre[1] + 60, steps=6)
    page.mouse.up()
    panned = canvas_image.bounding_box()
    assert panned["x"] == pytest.approx(zoomed["x"] + 120, abs=3)
    assert panned["y"] == pytest.approx(zoomed["y"] + 60, abs=3)
    page.keyboard.press("Enter")  # inside the viewer Enter does not submit the answer
    assert Assignment.objects.get(batch=batch).status == Assignment.Status.LEASED
    page.keyboard.press("Escape")
    page.wait_for_function("!document.body.classList.contains('viewer-open')")
    page.keyboard.press("2")
    assert page.locator("input[name=choice][value=B]").is_checked()
    assert not problems, problems  # no CDN, no CSP refusal


def test_a_multi_image_item_shows_side_by_side(page_for, alice, live_server):
    batch = _two_image_batch(live_server)
    page = page_for(alice)
    _open_task(page, batch)
    page.click("button.compare-toggle")
    page.wait_for_selector(".images.compare")
    first, second = (page.locator(".images.compare figure").nth(i).bounding_box()
                     for i in range(2))
    assert first["y"] == pytest.approx(second["y"], abs=1) and second["x"] > first["x"]
    assert first["width"] > 400  # each half of the row, wider than the grid's cells
    assert page.locator("button.compare-toggle").get_attribute("aria-pressed") == "true"


def test_skip_waits_for_undo_then_skips(page_for, alice, live_server):
    batch = _two_image_batch(live_server, tasks=2)
    page = page_for(alice)
    _open_task(page, batch)
    first = Assignment.objects.get(batch=batch, status=Assignment.Status.LEASED)
    page.click("#skip-btn")
    page.wait_for_selector(".skip-pending:has-text('Skipping this task in')")
    assert not page.locator("#skip-btn").is_visible()
    page.click("#skip-undo")
    time.sleep(6)  # past the window: nothing was sent
    first.refresh_from_db()
    assert first.status == Assignment.Status.LEASED and page.locator("#skip-btn").is_visible()
    page.click("#skip-btn")
    page.wait_for_selector(".flash:has-text('Task skipped')", timeout=15_000)
    first.refresh_from_db()
    assert first.status == Assignment.Status.RETURNED


def test_my_work_shows_times_in_the_browsers_time_zone(page_for, alice, live_server):
    batch = _two_image_batch(live_server)
    lease = task_claim_next(batch=batch, worker=worker_for_user(alice))
    assignment_submit(assignment=lease, data={"choice": "A"})
    lease.refresh_from_db()
    page = page_for(alice, timezone_id="Asia/Tokyo", locale="en-GB")
    page.goto(reverse("annotation:my_work"))
    page.wait_for_selector("#history")
    page.wait_for_load_state("load")
    assert page.locator("[data-local-zone]").inner_text().startswith("Asia/Tokyo")
    shown = page.locator("#history time").first.inner_text()
    tokyo = lease.submitted_at.astimezone(ZoneInfo("Asia/Tokyo"))
    assert re.search(rf"\b{tokyo.hour:02d}:{tokyo.minute:02d}\b", shown), shown


def test_the_language_switch_turns_the_pages_french_and_they_stay_so(page_for, alice,
                                                                      live_server):
    batch = _two_image_batch(live_server)
    page = page_for(alice)
    page.goto(reverse("annotation:available"))
    page.wait_for_load_state("load")
    page.select_option("#language-select", "fr")
    page.wait_for_selector("h1:has-text('Tâches disponibles')")
    assert page.locator("html").get_attribute("lang") == "fr"
    _open_task(page, batch)
    assert "Passer cette tâche" in page.locator("#skip-btn").inner_text()
    assert page.locator(".images button.zoom").first.inner_text() == "agrandir"
