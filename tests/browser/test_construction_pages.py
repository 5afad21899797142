"""The three dataset-building pages as a worker uses them, in Chromium: counters, server-side
validation errors (SSRF-refused URL, blank caption, No without a reason), skip, keyboard, and a
multi-image instance going from captions through the LLM step to verification."""
import io
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.urls import reverse
from PIL import Image as PILImage

from annotation.content.imports.images import image_store_bytes
from annotation.core.background import wait_for_jobs
from annotation.models import Assignment, Batch, Instance, InstructionFamily
from annotation.pipeline import services as pipeline
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _png(color) -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", (120, 80), color).save(out, "PNG")
    return out.getvalue()


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = _png((0, 128, 255))
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def image_url(settings):
    settings.IMAGE_FETCH_ALLOW_LOOPBACK = True
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/photo.png"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def stage_batches_without_minimum_time(transactional_db):
    """The stage batches these pages submit to, opened first without the minimum seconds they
    get by default (the pages are submitted at once; the minimum is tested in test_pipeline)."""
    for hit_type in (pipeline.HIT_CAPTION, pipeline.HIT_VERIFICATION):
        Batch.objects.filter(pk=pipeline.pipeline_batch(hit_type).pk).update(min_seconds=0)


@pytest.fixture
def family():
    seed = image_store_bytes(_png((200, 0, 0)))
    family = InstructionFamily.objects.create(
        name="Colour knowledge", skill="Naming and reasoning about colours",
        seed_instruction="What mood does this colour suggest?",
        seed_output="Red suggests energy or alarm.")
    family.seed_images.add(seed)
    return family


def _instance(n_images, stage, **fields):
    instance = Instance.objects.create(instruction="Which picture is the darkest, and why?",
                                       kind="multi" if n_images > 1 else "single", stage=stage,
                                       **fields)
    for i in range(n_images):
        image = image_store_bytes(_png((40 * i, 90, 200 - 40 * i)))
        instance.instance_images.create(image=image, position=i,
                                        caption=f"A flat colour field number {i + 1}."
                                        if stage != "captioning" else "")
    return instance


def test_instruction_generation_counters_ssrf_error_and_submit(page_for, alice, family,
                                                               image_url):
    batch = pipeline.instruction_batch_create(family=family, n_tasks=2, min_seconds=0)
    page = page_for(alice)
    page.goto(reverse("annotation:batch_next", args=[batch.uuid]))
    assert page.locator("#family-name").inner_text().startswith("Colour knowledge")
    assert "What mood" in page.locator("#seed-instruction").inner_text()
    assert page.locator(".task-context img").first.evaluate("i => i.naturalWidth") == 120
    counters = page.locator(".counter")
    assert counters.count() == 3 and counters.nth(0).inner_text() == "0 / 200"
    page.fill("#instruction", "y" * 250)  # the browser holds the 200-character cap
    assert page.locator("#instruction").input_value() == "y" * 200
    assert counters.nth(2).inner_text() == "200 / 200"
    # A private-network URL is refused by the server's SSRF guard; the form keeps its values.
    page.fill("#image_url", "http://10.0.0.7/cat.png")
    page.fill("#license", "CC BY 2.0")
    page.fill("#instruction", "What feeling does this shade of blue give you, and why?")
    page.click("#submit-btn")
    assert "private or local network" in page.locator("#form-error").inner_text()
    assert page.locator("#license").input_value() == "CC BY 2.0"
    assert not Instance.objects.exists()
    page.fill("#image_url", image_url)
    page.click("#submit-btn")
    page.wait_for_selector("#task-position:has-text('Task 2 of 2')")
    instance = Instance.objects.get(source="crowd")
    assert instance.instruction.startswith("What feeling") and instance.stage == "captioning"
    assert instance.instance_images.get().image.fetch_status == "ok"
    assert instance.stage_task.batch.hit_type == "instruction_caption"
    # Skip the second task: returned, never offered again.
    page.click("#skip-btn")
    page.wait_for_selector("text=All done")
    assert Assignment.objects.filter(status="returned").count() == 1


def test_multi_image_caption_page_then_llm_then_verification(page_for, alice, bob, settings):
    instance = _instance(3, "captioning")
    pipeline.caption_task_queue(instance)
    batch = Batch.objects.get(hit_type="instruction_caption")
    with FakeOpenAIServer() as fake:
        settings.LLM_BASE_URL = fake.base_url
        page = page_for(alice)
        page.goto(reverse("annotation:batch_next", args=[batch.uuid]))
        assert page.locator("#images figure").count() == 3
        assert page.locator("#images img").nth(2).evaluate("i => i.naturalWidth") == 120
        assert page.locator("#hit-form textarea").count() == 3
        assert page.locator(".counter").nth(1).inner_text() == "0 / 2000"
        page.fill("#caption_1", "A solid blue rectangle, bright and even.")
        page.fill("#caption_2", "   ")  # passes `required` in the browser, not the server
        page.fill("#caption_3", "A deep indigo rectangle, the darkest of the three.")
        page.click("#submit-btn")
        assert "Caption of image 2" in page.locator("#form-error").inner_text()
        assert page.locator("#caption_1").input_value().startswith("A solid blue")
        page.fill("#caption_2", "A medium blue rectangle with a slight purple tint.")
        assert page.locator(".counter").nth(1).inner_text() == "50 / 2000"
        page.click("#submit-btn")
        page.wait_for_selector("text=All done")
        assert wait_for_jobs(timeout=60)  # the LLM step runs after the submit, not inside it
        instance.refresh_from_db()
        assert instance.stage == "verification" and fake.call_count == 1
        assert "Image 3: A deep indigo" in fake.requests[0].body["messages"][0]["content"]
    # Bob verifies it: the page shows the three captions and the LLM's candidate.
    verify = Batch.objects.get(hit_type="reference_verification")
    page = page_for(bob)
    page.goto(reverse("annotation:batch_next", args=[verify.uuid]))
    assert page.locator("#caption-3").inner_text().startswith("Image 3: A deep indigo")
    assert page.locator("#candidate").inner_text() == instance.candidate_reference
    page.keyboard.press("y")
    assert page.locator("#correct-yes").is_checked()
    assert page.locator("#reason-block").is_hidden()
    page.keyboard.press("Enter")
    page.wait_for_selector("text=All done")
    instance.refresh_from_db()
    assert (instance.stage, instance.reference_status) == ("done", "verified")


def test_verification_no_requires_a_reason(page_for, alice):
    instance = _instance(1, "verification", candidate_reference="It is bright red.")
    pipeline.verification_task_queue(instance)
    batch = Batch.objects.get(hit_type="reference_verification")
    page = page_for(alice)
    page.goto(reverse("annotation:batch_next", args=[batch.uuid]))
    assert page.locator("#reason-block").is_hidden()
    page.keyboard.press("n")
    assert page.locator("#reason-block").is_visible()
    page.click("#submit-btn")  # no reason chosen: the browser refuses, nothing is written
    assert Assignment.objects.get().status == "leased"
    # Without the browser's check the server refuses too, and says why.
    page.evaluate("document.querySelectorAll('input[name=reason]')"
                  ".forEach(r => r.required = false)")
    page.click("#submit-btn")
    assert "say whether the caption or the response" in page.locator("#form-error").inner_text()
    assert page.locator("#correct-no").is_checked() and page.locator("#reason-block").is_visible()
    page.keyboard.press("2")
    assert page.locator("#reason-caption").is_checked()
    page.check("#harmful")
    page.click("#submit-btn")
    page.wait_for_selector("text=All done")
    instance.refresh_from_db()
    assert instance.reference_status == "rejected"
    assert instance.rejection_reason == "caption_underspecified" and instance.flagged_harmful
