"""Property tests of the dataset-building HIT forms through the real submit service: any answer
data is either stored as a valid answer or refused with ``AnswerInvalid``; a refused submit
writes nothing and leaves the assignment leased; worker text is stored raw and shown escaped.
Workers (and scripts posing as them) can send anything: no answer may crash a submit,
half-write it, or end up as markup in a page."""
import io
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.urls import reverse
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image as PILImage

from annotation.engine.services.batches import RowError, batch_create_from_rows
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.errors import AnswerInvalid
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_for_user
from annotation.models import Assignment, Image, Instance, InstructionFamily
from annotation.pipeline import services as pipeline
from tests.annotation.test_import_properties import (
    JSONISH,
    NASTY,
    NASTY_NONEMPTY,
    PROPERTY,
    db_counts,
    scratch,
)
from tests.factories import make_workers

pytestmark = pytest.mark.django_db

HTML = '<script>alert("x")</script><b onmouseover=1>bold</b>'


CHOICES = ["yes", "no", "", "response_wrong", "caption_underspecified", "on", "true", "A", "B",
           "1", "5", "0", "6", HTML]


def _data(fields: list[str]):
    """Answer data a browser or an API client may send: the form's fields and strangers, each
    holding text (odd or plain), a JSON value, or one of the real choices; half of the time
    every field is present, so valid answers are drawn too."""
    value = st.one_of(NASTY_NONEMPTY, NASTY, JSONISH, st.sampled_from(CHOICES))
    every = st.fixed_dictionaries({f: st.one_of(st.sampled_from(CHOICES), NASTY_NONEMPTY)
                                   for f in fields})
    some = st.dictionaries(st.sampled_from([*fields, "extra", "csrfmiddlewaretoken"]), value,
                           max_size=len(fields) + 2)
    return st.one_of(every, some)


def submit_or_refuse(assignment: Assignment, data):
    """Submit ``data``: stored (returns the stored assignment) or refused with AnswerInvalid
    having written nothing (returns None). Any other exception fails the test."""
    before = db_counts()
    now = assignment.claimed_at + timedelta(seconds=assignment.batch.min_seconds + 1)
    try:
        outcome = assignment_submit(assignment=assignment, data=data, now=now)
    except AnswerInvalid as exc:
        assert str(exc), "a refusal must say why"
        assert db_counts() == before, f"a refused answer wrote rows: {exc}"
        assert Assignment.objects.filter(pk=assignment.pk,
                                         status=Assignment.Status.LEASED,
                                         answer__isnull=True).exists()
        return None
    stored = Assignment.objects.get(pk=outcome.assignment.pk)
    assert stored.status == Assignment.Status.SUBMITTED and not outcome.duplicate
    assert stored.answer == outcome.assignment.answer
    return stored


def _leased(task, worker=None) -> Assignment:
    worker = worker or make_workers(1)[0]
    # claimed long enough ago for the batch's minimum seconds (pipeline batches have one)
    assignment = task_claim_next(batch=task.batch, worker=worker,
                                 now=timezone.now() - timedelta(minutes=5))
    assert assignment is not None and assignment.task_id == task.pk
    return assignment


def _instance(n_images: int, stage: str) -> Instance:
    instance = Instance.objects.create(instruction="Which image has more dots?", stage=stage,
                                       kind="multi" if n_images > 1 else "single",
                                       candidate_reference="Image 2 has more dots.")
    for i in range(n_images):
        image = Image.objects.create(source_url=f"https://example.org/{i}.png")
        instance.instance_images.create(image=image, position=i)
    return instance


# --------------------------------------------------------------------------- captions


@pytest.fixture
def caption_assignment():
    instance = _instance(2, "captioning")
    return _leased(pipeline.caption_task_queue(instance))


@PROPERTY
@given(_data(["caption_1", "caption_2"]))
def test_caption_answers_are_stored_or_refused(caption_assignment, data):
    with scratch():
        stored = submit_or_refuse(caption_assignment, data)
        if stored is not None:
            captions = stored.answer["captions"]
            assert len(captions) == 2 and all(isinstance(c, str) and c.strip()
                                              for c in captions)
            instance = Instance.objects.get(uuid=caption_assignment.task.payload["instance"])
            assert [ii.caption for ii in instance.instance_images.order_by("position")] == captions
            assert instance.stage == Instance.Stage.REFERENCE


# --------------------------------------------------------------------------- verification


@pytest.fixture
def verification_assignment():
    instance = _instance(1, "verification")
    return _leased(pipeline.verification_task_queue(instance))


@PROPERTY
@given(_data(["correct", "reason", "harmful"]))
def test_verification_answers_are_stored_or_refused(verification_assignment, data):
    with scratch():
        stored = submit_or_refuse(verification_assignment, data)
        if stored is not None:
            answer = stored.answer
            assert answer["correct"] in ("yes", "no")
            assert answer["reason"] in ("", "response_wrong", "caption_underspecified")
            assert (answer["correct"] == "no") == bool(answer["reason"])
            assert isinstance(answer["harmful"], bool)


# --------------------------------------------------------------------------- instruction


def _png() -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", (32, 24), (200, 10, 10)).save(out, "PNG")
    return out.getvalue()


class _Images(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        ok = self.path.startswith("/ok")
        body = _png() if ok else b"<html>not an image</html>"
        self.send_response(200)
        self.send_header("Content-Type", "image/png" if ok else "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def image_server(settings):
    settings.IMAGE_FETCH_ALLOW_LOOPBACK = True
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Images)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def instruction_assignment():
    family = InstructionFamily.objects.create(name="Counting", skill="Counting objects",
                                              seed_instruction="How many birds?")
    batch = pipeline.instruction_batch_create(family=family, n_tasks=1)
    return _leased(batch.tasks.get())


@PROPERTY
@given(data=st.data())
def test_instruction_answers_are_stored_or_refused(instruction_assignment, image_server, data):
    # Only URLs that never leave the machine: the loopback server, refused schemes and
    # private addresses (refused before any connection), or text that is no URL at all.
    url = data.draw(st.one_of(
        st.sampled_from([image_server + "/ok.png", image_server + "/ok2.png?q=<b>",
                         image_server + "/page.html", "ftp://example.org/a.png",
                         "http://10.0.0.1/a.png", "javascript:alert(1)", "",
                         image_server + "/ok/" + "a" * 200]),
        st.text(alphabet=st.characters(blacklist_characters="."), max_size=30),
    ), label="image_url")
    answer = data.draw(_data(["license", "instruction"]), label="answer")
    answer["image_url"] = url
    with scratch():
        stored = submit_or_refuse(instruction_assignment, answer)
        if stored is not None:
            created = Instance.objects.get(source="crowd",
                                           external_id=f"assignment:{stored.uuid}")
            assert created.instruction == stored.answer["instruction"]
            assert 0 < len(created.instruction) <= 200
            assert Image.objects.get(uuid=stored.answer["image"]).fetch_status == "ok"


def test_html_in_an_instruction_is_stored_raw_and_shown_escaped(instruction_assignment,
                                                               image_server, alice,
                                                               alice_client):
    """The instruction a worker wrote is shown to the captioner: raw in the database, escaped
    on the caption page."""
    instruction = 'Count the <script>alert("x")</script> birds'
    stored = submit_or_refuse(instruction_assignment, {
        "image_url": image_server + "/ok.png", "license": "CC0", "instruction": instruction})
    created = Instance.objects.get(external_id=f"assignment:{stored.uuid}")
    assert created.instruction == instruction
    caption = _leased(created.stage_task, worker_for_user(alice))
    page = alice_client.get(reverse("annotation:assignment",
                                    kwargs={"assignment_uuid": caption.uuid}))
    assert page.status_code == 200
    body = page.content.decode()
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in body
    assert '<script>alert("x")</script>' not in body


def test_refused_answer_is_shown_back_escaped(alice, alice_client):
    """A refused POST re-renders the page with the worker's text: escaped, nothing stored."""
    caption = _leased(pipeline.caption_task_queue(_instance(1, "captioning")),
                      worker_for_user(alice))
    url = reverse("annotation:assignment", kwargs={"assignment_uuid": caption.uuid})
    before = db_counts()
    page = alice_client.post(url, {"caption_1": HTML + "x" * 2000})  # over the 2,000 cap
    assert page.status_code == 400 and db_counts() == before
    body = page.content.decode()
    assert "at most 2000" in body and "&lt;script&gt;" in body
    assert "<script>alert" not in body


def test_surrogate_in_an_api_answer_is_refused_not_a_crash(caption_assignment):
    """Regression: a JSON answer (the API's DictField) holding a lone surrogate passed the form
    and crashed on insert (UnicodeEncodeError); it is now refused, nothing written."""
    assert submit_or_refuse(caption_assignment, {"caption_1": "ok", "caption_2": "bad \ud800"}) \
        is None


@pytest.mark.parametrize("gold", [["yes"], {"correct": True}, {"choice": "A"}, "yes"])
def test_malformed_verification_gold_is_refused_at_upload(gold):
    """Regression: a verification gold that is not {"correct": "yes"|"no"} was accepted and a
    list crashed every submit (AttributeError inside the submit transaction)."""
    instance = _instance(1, "verification")
    before = db_counts()
    with pytest.raises(RowError, match=r"Row 1: .*gold"):
        batch_create_from_rows(hit_type="reference_verification", title="t",
                               rows=[{"instance": str(instance.uuid), "_gold_answer": gold}])
    assert db_counts() == before
