"""The admin's batch pages in the product, through HTTP: the list and a batch's page (HIT type
and options by name, progress with ETA, spend with fees, "finished" at 100 %), the upload
wizard (size refused before parsing, a wrong HIT type named, gold checked against the batch's
choices, broken image URLs listed), the preview as a worker, activation and launch."""
import json
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from annotation.console.selectors import eta_seconds
from annotation.engine.services import uploads
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.models import Assignment, Batch
from judging.hits import BARS, SHAPES, PairwiseHit, RubricHit
from tests.factories import make_batch, make_workers

pytestmark = pytest.mark.django_db

UPLOAD = reverse("console:upload")
BROKEN = "http://10.1.2.3/missing.png"  # a private address: the fetcher refuses it at once


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def _pairwise(n=2, image=SHAPES, **extra):
    return [{"instruction": f"Question {i}?", "image_urls": [image], "response_a": f"A{i}",
             "response_b": f"B{i}", **extra} for i in range(1, n + 1)]


def _post(client, content, *, hit_type="pairwise_ab", name="rows.jsonl", **fields):
    data = {"hit_type": hit_type, "title": "Wizard batch", "provider": "local",
            "assignments_per_task": 2, "reward": "0.10", "lease_seconds": 1800,
            "min_seconds": 0, "budget": "", **fields, "file": SimpleUploadedFile(name, content)}
    return client.post(UPLOAD, data)


def _errors(response) -> str:
    form = response.context["form"]
    return " ".join(str(e) for errors in form.errors.values() for e in errors)


def test_the_wizard_starts_with_the_hit_types_by_their_names_then_shows_columns_and_a_sample(
        admin_client_):
    first = admin_client_.get(UPLOAD).content.decode()
    assert PairwiseHit.title in first and RubricHit.title in first
    assert 'href="?hit_type=pairwise_ab"' in first
    second = admin_client_.get(UPLOAD, {"hit_type": "pairwise_ab"}).content.decode()
    assert "<code>response_a</code>" in second and "<code>_gold_answer</code>" in second
    assert PairwiseHit.example_rows[0]["response_a"] in second  # the sample row, shown
    assert "A or B only (forced choice" in second  # the type's options asked by name
    sample = admin_client_.get(reverse("console:upload_sample"),
                               {"hit_type": "pairwise_ab", "format": "jsonl"})
    assert sample.status_code == 200 and b"response_a" in sample.content


def test_an_upload_creates_a_draft_and_lists_its_broken_image_urls(admin_client_):
    rows = [*_pairwise(2), *_pairwise(1, image=BROKEN)]
    response = _post(admin_client_, _jsonl(rows))
    batch = Batch.objects.get()
    assert response.status_code == 302 and response.url == reverse("console:batch",
                                                                    args=[batch.uuid])
    assert batch.status == "draft" and batch.tasks.count() == 3
    assert [(p["task"], p["url"]) for p in batch.image_problems] == [(3, BROKEN)]
    page = admin_client_.get(response.url).content.decode()
    assert 'id="image-problems"' in page and BROKEN in page
    assert SHAPES not in page.split('id="image-problems"')[1].split("</section>")[0]


def test_an_upload_over_the_size_limit_is_refused_before_a_row_is_parsed(
        admin_client_, monkeypatch):
    parsed = []
    monkeypatch.setattr(uploads, "rows_from_upload", lambda *a: parsed.append(a) or [])
    monkeypatch.setattr(settings, "BATCH_UPLOAD_MAX_BYTES", 1000)
    response = _post(admin_client_, b"x" * 1001, name="rows.csv")
    assert response.status_code == 200
    assert "limited to 0.0 MB" in _errors(response) or "BATCH_UPLOAD_MAX_BYTES" in _errors(
        response)
    assert parsed == [] and not Batch.objects.exists()


def test_a_rubric_file_uploaded_as_pairwise_is_named_and_writes_nothing(admin_client_):
    response = _post(admin_client_, _jsonl(RubricHit.example_rows))
    assert f"This looks like a “{RubricHit.title}” file" in _errors(response)
    assert not Batch.objects.exists()


def test_a_gold_answer_the_batch_does_not_offer_is_refused(admin_client_):
    for gold in ({"choice": "C"}, {"choice": "tie"}):  # forced choice offers A / B only
        response = _post(admin_client_, _jsonl(_pairwise(2, _gold_answer=gold)))
        assert response.status_code == 200 and "_gold_answer" in _errors(response), gold
    assert not Batch.objects.exists()
    response = _post(admin_client_, _jsonl(_pairwise(2, _gold_answer={"choice": "tie"})),
                     **{"opt-answers": "ab_tie"})
    assert response.status_code == 302
    assert Batch.objects.get().tasks.filter(is_gold=True).count() == 2


def test_the_preview_renders_the_real_task_page_and_submits_nothing(admin_client_):
    batch = make_batch(2, n=1, activate=False)
    url = reverse("console:preview", args=[batch.uuid, 2])
    page = admin_client_.get(url)
    html = page.content.decode()
    assert page.status_code == 200 and page.templates[0].name == PairwiseHit.template
    assert "Answer A for item 2." in html and "<fieldset disabled" in html
    assert "Preview as a worker of task 2" in html
    assert admin_client_.post(url, {"choice": "A"}).status_code == 405
    assert not Assignment.objects.exists()
    assert admin_client_.get(reverse("console:preview", args=[batch.uuid, 9])).status_code == 404


def test_activation_asks_about_broken_images_first(admin_client_):
    _post(admin_client_, _jsonl(_pairwise(1, image=BROKEN)))
    batch = Batch.objects.get()
    url = reverse("console:status", args=[batch.uuid])
    admin_client_.post(url, {"status": "active"})
    assert Batch.objects.get().status == "draft"
    admin_client_.post(url, {"status": "active", "images_checked": "on"})
    assert Batch.objects.get().status == "active"


def test_the_batch_page_says_finished_gives_an_eta_and_spend_with_fees(admin_client_):
    batch = make_batch(2, n=1, reward="0.50")
    start = timezone.now() - timedelta(minutes=10)
    for i, worker in enumerate(make_workers(1)):
        lease = task_claim_next(batch=batch, worker=worker, now=start)
        assignment_submit(assignment=lease, data={"choice": "A"},
                          now=start + timedelta(minutes=1 + i))
    page = admin_client_.get(reverse("console:batch", args=[batch.uuid])).content.decode()
    assert "Active" in page and "Time to finish" in page and "$0.50" in page
    assert PairwiseHit.title in page and "A or B only" in page  # HIT type and option by name
    worker = make_workers(1)[0]
    lease = task_claim_next(batch=batch, worker=worker)
    assignment_submit(assignment=lease, data={"choice": "B"})
    page = admin_client_.get(reverse("console:batch", args=[batch.uuid])).content.decode()
    assert "Finished: every answer is in" in page
    listing = admin_client_.get(reverse("console:batches")).content.decode()
    assert "Finished: every answer is in" in listing and PairwiseHit.title in listing


def test_the_eta_is_the_pace_of_the_latest_answers():
    assert eta_seconds([0, 60, 120], remaining=10) == 600
    assert eta_seconds([5], remaining=3) is None
    assert eta_seconds([1, 2], remaining=0) == 0


def test_a_marketplace_batch_shows_its_estimate_and_launches_only_when_confirmed(admin_client_):
    batch = make_batch(2, n=3, activate=False, provider="mturk", budget="10.00")
    url = reverse("console:launch", args=[batch.uuid])
    page = admin_client_.get(url).content.decode()
    assert 'id="launch-estimate"' in page and "$0.60" in page  # 6 answers × $0.10
    admin_client_.post(url, {})
    assert Batch.objects.get().status == "draft"
    local = make_batch(1, activate=False)
    page = admin_client_.get(reverse("console:launch", args=[local.uuid])).content.decode()
    assert 'id="local-batch"' in page


def test_only_admins_reach_the_batch_pages(alice_client, analyst_client):
    batch = make_batch(1, activate=False)
    for client in (alice_client, analyst_client):
        for url in (reverse("console:batches"), UPLOAD,
                    reverse("console:batch", args=[batch.uuid]),
                    reverse("console:preview", args=[batch.uuid, 1])):
            assert client.get(url).status_code == 403, url


def test_own_static_sample_images_are_checked_on_disk():
    assert uploads.image_problem(BARS) == ""
    assert uploads.image_problem(f"{settings.PUBLIC_BASE_URL}{settings.STATIC_URL}no.png")
    assert uploads.image_problem("/media/../../etc/passwd")
    assert uploads.image_problem("/static/../../../etc/passwd") == "no such file on this server"
