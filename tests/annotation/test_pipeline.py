"""The construction pipeline end to end, over real sockets: a loopback image server for the
submitted URL and the loopback OpenAI-protocol server for the LLM reference step."""
import io
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone
from PIL import Image as PILImage

from annotation.core.background import wait_for_jobs
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.errors import AnswerInvalid
from annotation.engine.services.submissions import assignment_submit
from annotation.models import Assignment, Batch, Image, Instance, InstructionFamily
from annotation.pipeline import services as pipeline
from annotation.pipeline.prompts import PROMPT_VERSION, build_reference_prompt
from annotation.pipeline.selectors import verification_report
from annotation.pipeline.tasks import retry_countdown
from tests.factories import make_workers
from tests.support.fake_openai import FakeOpenAIServer, Reply

pytestmark = pytest.mark.django_db


def png(color=(30, 120, 200), size=(64, 48)) -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", size, color).save(out, "PNG")
    return out.getvalue()


class _ImageHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = self.server.files.get(self.path)
        if body is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def image_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ImageHandler)
    server.files = {"/cat.png": png(), "/dog.png": png((200, 40, 40)),
                    "/cat-copy.png": png()}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.url = lambda p: f"http://127.0.0.1:{server.server_address[1]}{p}"
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def llm(settings):
    with FakeOpenAIServer() as fake:
        settings.LLM_BASE_URL = fake.base_url
        settings.LLM_MODEL = "stand-in-model"
        settings.LLM_MAX_RETRIES = 0
        settings.LLM_PRICE_IN_PER_1K = 0.01
        settings.LLM_PRICE_OUT_PER_1K = 0.03
        yield fake


@pytest.fixture
def loopback_ok(settings):
    settings.IMAGE_FETCH_ALLOW_LOOPBACK = True


@pytest.fixture
def family():
    return InstructionFamily.objects.create(
        name="Contextual knowledge of events", skill="Knowing the event behind a scene",
        seed_instruction="Why is he waving? What happened in this event?",
        seed_output="He is greeting the crowd at the March on Washington.")


def _work(batch, worker, data):
    # claimed long enough ago for the stage batch's minimum seconds (never 0 by default)
    assignment = task_claim_next(batch=batch, worker=worker,
                                 now=timezone.now() - timedelta(minutes=5))
    assert assignment is not None
    return assignment_submit(assignment=assignment, data=data).assignment


@pytest.fixture
def step_threads(monkeypatch):
    """The threads the LLM step ran in (it must never be the caller's, i.e. the request's)."""
    from annotation.pipeline import tasks

    seen, real = [], tasks.reference_generate

    def spy(instance_id):
        seen.append(threading.current_thread())
        return real(instance_id)

    monkeypatch.setattr(tasks, "reference_generate", spy)
    return seen


def _jobs_done():
    assert wait_for_jobs(timeout=60), "a background job did not finish"


@pytest.mark.django_db(transaction=True)
def test_whole_pipeline_instruction_to_verified_and_rejected(
        family, image_server, llm, loopback_ok, step_threads):
    writer, captioner, checker = make_workers(3)
    batch = pipeline.instruction_batch_create(family=family, n_tasks=2, min_seconds=0)

    # 1. instruction submitted → instance created → caption task queued
    _work(batch, writer, {"image_url": image_server.url("/cat.png"), "license": "CC0",
                          "instruction": "What colour is the square, and what might it mean?"})
    instance = Instance.objects.get(source="crowd")
    assert instance.stage == "captioning" and instance.family == family
    image = instance.instance_images.get().image
    assert image.fetch_status == "ok" and image.sha256 and image.file and image.thumbnail
    assert (image.width, image.height, image.license) == (64, 48, "CC0")
    caption_batch = Batch.objects.get(hit_type=pipeline.HIT_CAPTION)
    assert instance.stage_task.batch == caption_batch and caption_batch.status == "active"

    # 2. caption submitted → (after commit) reference generated → verification task queued
    _work(caption_batch, captioner, {"caption_1": "A flat square filled with steel blue."})
    _jobs_done()
    assert len(step_threads) == 1 and step_threads[0] is not threading.current_thread()
    instance.refresh_from_db()
    assert instance.stage == "verification"
    assert instance.candidate_reference.startswith("(Stand-in answer")
    meta = instance.reference_meta
    assert meta["model"] == "stand-in-model" and meta["prompt_version"] == PROMPT_VERSION
    assert meta["prompt_tokens"] > 0 and meta["completion_tokens"] > 0
    assert meta["cost"] == pytest.approx(meta["prompt_tokens"] / 1000 * 0.01
                                         + meta["completion_tokens"] / 1000 * 0.03)
    sent = llm.requests[-1].body
    assert sent["model"] == "stand-in-model"
    prompt = sent["messages"][0]["content"]
    assert "steel blue" in prompt and "What colour is the square" in prompt
    verify_batch = Batch.objects.get(hit_type=pipeline.HIT_VERIFICATION)
    assert instance.stage_task.batch == verify_batch

    # 3. verification: Yes → verified, the candidate becomes the reference
    _work(verify_batch, checker, {"correct": "yes"})
    instance.refresh_from_db()
    assert (instance.stage, instance.reference_status) == ("done", "verified")
    assert instance.reference_output == instance.candidate_reference
    assert instance.stage_task is None
    assert instance.reference_rated_by == "crowd"  # counts in Table 2
    assert verification_report()["overall"]["n"] == 1

    # A second instance goes the other way: rejected because the caption was underspecified.
    _work(batch, writer, {"image_url": image_server.url("/dog.png"), "license": "CC BY 2.0",
                          "instruction": "Is this a good colour for a warning sign? Why?"})
    second = Instance.objects.exclude(pk=instance.pk).get(source="crowd")
    _work(caption_batch, captioner, {"caption_1": "A red square."})
    _jobs_done()
    second.refresh_from_db()
    assert second.stage == "verification"
    with pytest.raises(AnswerInvalid, match="Why not: when the answer is No"):
        _work(verify_batch, checker, {"correct": "no"})
    assignment = Assignment.objects.get(task=second.stage_task, worker=checker)
    assignment_submit(assignment=assignment, data={"correct": "no", "reason":
                                                   "caption_underspecified", "harmful": "on"})
    second.refresh_from_db()
    assert (second.reference_status, second.rejection_reason) == ("rejected",
                                                                  "caption_underspecified")
    assert second.flagged_harmful and second.reference_output == ""
    assert second.reference_rated_by == "crowd"


@pytest.mark.django_db(transaction=True)
def test_transitions_are_safe_to_repeat(family, image_server, llm, loopback_ok):
    writer, captioner = make_workers(2)
    batch = pipeline.instruction_batch_create(family=family, n_tasks=1, min_seconds=0)
    assignment = _work(batch, writer, {"image_url": image_server.url("/cat.png"),
                                       "license": "CC0", "instruction": "Describe the colour."})
    again = pipeline.instance_create_from_instruction(assignment=assignment)
    assert Instance.objects.count() == 1 and again.stage_task_id is not None
    assert pipeline.caption_task_queue(again) == again.stage_task  # no second task
    caption_batch = Batch.objects.get(hit_type=pipeline.HIT_CAPTION)
    caption = _work(caption_batch, captioner, {"caption_1": "A blue square."})
    _jobs_done()
    assert not pipeline.captions_record(assignment=caption)  # already moved on
    instance = Instance.objects.get()
    calls = llm.call_count
    assert pipeline.reference_generate(instance.pk) == "skipped" and llm.call_count == calls
    assert pipeline.pipeline_push("verification") == 0  # its task already exists


@pytest.mark.django_db(transaction=True)
def test_llm_step_retries_with_celery_backoff_then_succeeds(llm, step_threads):
    instance = _reference_stage_instance(["A chessboard, white to move.", "The same board."])
    llm.enqueue(Reply.error(503), Reply.ok("Image 1 and Image 2 show the same position."))
    assert pipeline.pipeline_push("reference") == 1  # what the admin's push button calls
    _jobs_done()
    assert step_threads and all(t is not threading.current_thread() for t in step_threads)
    instance.refresh_from_db()
    assert instance.stage == "verification"
    assert instance.candidate_reference == "Image 1 and Image 2 show the same position."
    assert llm.call_count == 2  # the first call failed, the Celery retry succeeded
    prompt = llm.requests[-1].body["messages"][0]["content"]
    assert "Image 1: A chessboard" in prompt and "Image 2: The same board." in prompt


def test_llm_step_waits_without_provider_and_records_hard_errors(settings, llm):
    instance = _reference_stage_instance(["A cat."])
    settings.LLM_BASE_URL = ""
    assert pipeline.reference_generate(instance.pk) == "not_configured"
    settings.LLM_BASE_URL = llm.base_url
    llm.enqueue(Reply.error(400))
    assert pipeline.reference_generate(instance.pk) == "failed"
    instance.refresh_from_db()
    assert instance.stage == "reference" and "400" in instance.reference_meta["last_error"]
    llm.enqueue(Reply.refusal_reply())
    assert pipeline.reference_generate(instance.pk) == "failed"
    instance.refresh_from_db()
    assert "refused" in instance.reference_meta["last_error"] and instance.stage == "reference"


def test_backoff_grows_and_is_capped():
    import random

    rnd = random.Random(1)
    delays = [retry_countdown(n, rnd) for n in range(8)]
    assert 15 <= delays[0] <= 30 and 60 <= delays[2] <= 120 and max(delays) <= 900


def test_prompt_structure_single_and_multi():
    single = build_reference_prompt("How many apples?", ["Three red apples on a plate."])
    assert single.index("Three red apples") < single.index("Instruction: How many apples?")
    assert single.endswith("Answer:") and "Image 1" not in single
    multi = build_reference_prompt("What changed?", ["A cup.", "A cup and a spoon."])
    assert "2 images" in multi and "Image 2: A cup and a spoon." in multi
    with pytest.raises(ValueError):
        build_reference_prompt("x", ["ok", "  "])


def test_pending_image_fetch_stores_dedupes_and_marks_failures(image_server, loopback_ok):
    from annotation.content.imports.images import image_fetch_pending, image_for_url

    first = image_for_url(image_server.url("/cat.png"))
    assert image_fetch_pending(first.pk) == "ok"
    first.refresh_from_db()
    assert first.file and first.thumbnail and first.sha256
    copy = image_for_url(image_server.url("/cat-copy.png"))  # same bytes, other URL
    instance = Instance.objects.create(instruction="x")
    instance.instance_images.create(image=copy, position=0)
    assert image_fetch_pending(copy.pk) == "ok"
    assert not Image.objects.filter(pk=copy.pk).exists()
    assert instance.instance_images.get().image == first  # pointed at the stored twin
    missing = image_for_url(image_server.url("/nope.png"))
    assert image_fetch_pending(missing.pk) == "failed"
    missing.refresh_from_db()
    assert missing.fetch_status == "failed" and "404" in missing.fetch_error


def test_loopback_is_refused_unless_the_test_flag_is_set(image_server, settings):
    from annotation.content.imports.images import image_fetch_pending, image_for_url

    settings.IMAGE_FETCH_ALLOW_LOOPBACK = False
    image = image_for_url(image_server.url("/cat.png"))
    assert image_fetch_pending(image.pk) == "failed"
    image.refresh_from_db()
    assert "blocked_address" in image.fetch_error and not image.file


def _reference_stage_instance(captions):
    instance = Instance.objects.create(instruction="Compare the pictures.", kind="multi"
                                       if len(captions) > 1 else "single", stage="reference")
    for n, caption in enumerate(captions):
        image = Image.objects.create(source_url=f"https://example.org/{n}.png")
        instance.instance_images.create(image=image, position=n, caption=caption)
    return instance


def test_demo_has_instances_in_every_stage(settings):
    import random

    from annotation.pipeline.demo import extend_demo
    from annotation.pipeline.selectors import stage_counts

    settings.LLM_BASE_URL = ""
    result = extend_demo(random.Random(3))
    assert result["created"] and result["references_generated"] == 0
    rows = {r["stage"]: r for r in stage_counts()}
    assert all(rows[s]["total"] > 0 for s in ("instruction", "captioning", "reference",
                                              "verification", "done"))
    assert rows["captioning"]["queued"] == rows["captioning"]["total"]
    assert Instance.objects.filter(kind="multi", stage="captioning").exists()
    assert extend_demo(random.Random(3)) == {"created": False}


def test_demo_runs_the_llm_step_when_a_provider_is_configured(llm):
    import random

    from annotation.pipeline.demo import extend_demo

    result = extend_demo(random.Random(4))
    assert result["references_generated"] == 2 and llm.call_count == 2
    assert Instance.objects.filter(source="demo", stage="reference").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_push_of_many_instances_is_one_background_thread(llm, step_threads):
    instances = [_reference_stage_instance([f"Picture {n}."]) for n in range(3)]
    llm.enqueue(Reply.ok("first"), Reply.error(400), Reply.ok("third"))
    assert pipeline.pipeline_push("reference") == 3
    _jobs_done()
    assert len(step_threads) == 3 and len(set(step_threads)) == 1
    assert step_threads[0] is not threading.current_thread()
    stages = [Instance.objects.get(pk=i.pk).stage for i in instances]
    assert stages == ["verification", "reference", "verification"]  # one failure, the rest go on


@pytest.mark.django_db(transaction=True)
def test_pipeline_advance_waits_for_its_jobs_before_exiting(llm):
    from django.core.management import call_command

    instance = _reference_stage_instance(["A cat on a mat."])
    llm.enqueue(Reply.ok("A cat sits on a mat."))
    out = io.StringIO()
    call_command("pipeline_advance", "--stage", "reference", stdout=out)
    instance.refresh_from_db()  # no waiting here: the command did
    assert "reference: queued 1" in out.getvalue()
    assert (instance.stage, instance.candidate_reference) == ("verification", "A cat sits on a mat.")


@pytest.mark.django_db(transaction=True)
def test_image_downloads_run_outside_the_caller(image_server, loopback_ok, monkeypatch):
    from annotation.pipeline import tasks

    threads, real = [], tasks.image_fetch_pending
    monkeypatch.setattr(tasks, "image_fetch_pending",
                        lambda pk: threads.append(threading.current_thread()) or real(pk))
    image = Image.objects.create(source_url=image_server.url("/cat.png"))
    assert pipeline.images_fetch_queue() == 1
    _jobs_done()
    image.refresh_from_db()
    assert image.fetch_status == "ok" and threads and threads[0] is not threading.current_thread()


def test_stage_batches_take_their_hit_types_minimum_seconds():
    """A pipeline stage batch refuses click-through answers like an uploaded one: its minimum
    time is the HIT type's default, not 0."""
    from annotation.engine.hit_types import get_hit_type

    for hit_type in (pipeline.HIT_CAPTION, pipeline.HIT_VERIFICATION):
        batch = pipeline.pipeline_batch(hit_type)
        assert batch.min_seconds == get_hit_type(hit_type).default_min_seconds() > 0

