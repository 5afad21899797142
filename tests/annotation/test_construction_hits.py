"""The dataset-building HIT types: payloads, answer validation (incl. SSRF and image bombs on the
submitted URL), and what their pages show."""
import io
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.exceptions import ValidationError
from PIL import Image as PILImage

from annotation.engine.hit_types import get_hit_type
from annotation.engine.services.batches import RowError, batch_create_from_rows
from annotation.models import Image, Instance, InstructionFamily
from annotation.pipeline import services as pipeline

pytestmark = pytest.mark.django_db


def _png(size=(64, 48)) -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", size, (10, 200, 10)).save(out, "PNG")
    return out.getvalue()


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = _png() if self.path == "/ok.png" else b"<html>not an image</html>"
        self.send_response(200)
        self.send_header("Content-Type", "image/png" if self.path == "/ok.png" else "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def family():
    return InstructionFamily.objects.create(name="Counting", skill="Counting objects",
                                            seed_instruction="How many birds?")


def _task(family):
    batch = pipeline.instruction_batch_create(family=family, n_tasks=1)
    return batch.tasks.get()


def _answer(url, instruction="How many green squares are there?"):
    return {"image_url": url, "license": "CC0", "instruction": instruction}


def test_payload_accepts_family_by_name_and_names_bad_rows(family):
    batch = batch_create_from_rows(hit_type="instruction_generation", title="t",
                                   rows=[{"family": "Counting"}], assignments_per_task=1)
    assert batch.tasks.get().payload == {"family": str(family.uuid)}
    with pytest.raises(RowError, match="Row 2: family: no instruction family 'Nope'"):
        batch_create_from_rows(hit_type="instruction_generation", title="t",
                               rows=[{"family": "Counting"}, {"family": "Nope"}])
    with pytest.raises(RowError, match="Row 1: instance"):
        batch_create_from_rows(hit_type="instruction_caption", title="t",
                               rows=[{"instance": "5d1c4a4e-0000-4000-8000-000000000000"}])


@pytest.mark.parametrize("url,message", [
    ("http://127.0.0.1:1/x.png", "private or local network"),
    ("http://10.1.2.3/x.png", "private or local network"),
    ("http://169.254.169.254/latest/meta-data/", "private or local network"),
    ("http://[::1]/x.png", "private or local network"),
    ("ftp://example.org/x.png", r"direct http\(s\) link"),
    ("javascript:alert(1)", "Enter a valid URL"),
    ("http://no-such-host.invalid/x.png", "could not be found"),
])
def test_submitted_url_is_refused_by_the_ssrf_guard(family, url, message):
    hit = get_hit_type("instruction_generation")
    with pytest.raises(ValidationError, match=message):
        hit.clean_answer(_answer(url), task=_task(family))
    assert not Image.objects.exists()


def test_loopback_needs_the_settings_flag_and_images_are_checked(family, server, settings):
    hit = get_hit_type("instruction_generation")
    task = _task(family)
    with pytest.raises(ValidationError, match="private or local network"):
        hit.clean_answer(_answer(server + "/ok.png"), task=task)
    settings.IMAGE_FETCH_ALLOW_LOOPBACK = True
    answer = hit.clean_answer(_answer(server + "/ok.png"), task=task)
    image = Image.objects.get(uuid=answer["image"])
    assert image.sha256 == answer["sha256"] and image.fetch_status == "ok"
    with pytest.raises(ValidationError, match="does not lead to an image"):
        hit.clean_answer(_answer(server + "/page.html"), task=task)
    settings.IMAGE_MAX_PIXELS = 1000  # a 64×48 picture now counts as a decompression bomb
    Image.objects.all().delete()
    with pytest.raises(ValidationError, match="too many pixels"):
        hit.clean_answer(_answer(server + "/ok.png"), task=task)
    assert not Image.objects.exists()


def test_instruction_and_url_are_capped_at_200_characters(family):
    hit = get_hit_type("instruction_generation")
    with pytest.raises(ValidationError, match="Your instruction: Ensure this value has at most 200"):
        hit.clean_answer(_answer("https://example.org/x.png", "x" * 201), task=_task(family))
    with pytest.raises(ValidationError, match="Image URL: Ensure this value has at most 200"):
        hit.clean_answer(_answer("https://example.org/" + "a" * 200), task=_task(family))


def _instance(n_images, stage="captioning"):
    instance = Instance.objects.create(instruction="Which image has more dots?", stage=stage,
                                       kind="multi" if n_images > 1 else "single",
                                       candidate_reference="Image 2 has more dots.")
    for i in range(n_images):
        image = Image.objects.create(source_url=f"https://example.org/{i}.png")
        instance.instance_images.create(image=image, position=i, caption=f"Caption {i + 1}.")
    return instance


def _task_for(instance, hit_type):
    batch = batch_create_from_rows(hit_type=hit_type, title="t",
                                   rows=[{"instance": str(instance.uuid)}])
    return batch.tasks.get()


def test_caption_answer_has_one_field_per_image_capped_at_2000(family):
    instance = _instance(3)
    task = _task_for(instance, "instruction_caption")
    hit = get_hit_type("instruction_caption")
    answer = hit.clean_answer({"caption_1": " a ", "caption_2": "b", "caption_3": "c"}, task=task)
    assert answer == {"captions": ["a", "b", "c"]}
    with pytest.raises(ValidationError, match="Caption of image 3: This field is required"):
        hit.clean_answer({"caption_1": "a", "caption_2": "b", "caption_3": "   "}, task=task)
    with pytest.raises(ValidationError, match="Caption of image 2: Ensure .* at most 2000"):
        hit.clean_answer({"caption_1": "a", "caption_2": "b" * 2001, "caption_3": "c"}, task=task)
    context = hit.page_context(task)
    assert [img["field"] for img in context["images"]] == ["caption_1", "caption_2", "caption_3"]


@pytest.mark.parametrize("data,expected", [
    ({"correct": "yes", "reason": "response_wrong"}, {"correct": "yes", "reason": "",
                                                      "harmful": False}),
    ({"correct": "no", "reason": "caption_underspecified", "harmful": "on"},
     {"correct": "no", "reason": "caption_underspecified", "harmful": True}),
])
def test_verification_answers(data, expected):
    task = _task_for(_instance(1, stage="verification"), "reference_verification")
    assert get_hit_type("reference_verification").clean_answer(data, task=task) == expected


def test_verification_no_needs_a_reason():
    task = _task_for(_instance(1, stage="verification"), "reference_verification")
    hit = get_hit_type("reference_verification")
    with pytest.raises(ValidationError, match="Why not: when the answer is No"):
        hit.clean_answer({"correct": "no"}, task=task)
    with pytest.raises(ValidationError, match="Does the response follow the instruction: This field is required"):
        hit.clean_answer({}, task=task)


def test_majority_verdict():
    from annotation.pipeline.verdict import decide_verification

    yes, no_c, no_r = ({"correct": "yes"}, {"correct": "no", "reason": "caption_underspecified"},
                       {"correct": "no", "reason": "response_wrong", "harmful": True})
    assert decide_verification([yes, yes, no_c]) == (True, "", False)
    assert decide_verification([yes, no_c]) == (False, "caption_underspecified", False)
    assert decide_verification([no_c, no_r, yes]) == (False, "response_wrong", True)
