"""The batch upload page explains itself: each HIT type's columns (from its payload form), a
sample file per type that uploads cleanly, provider / budget / N / lease set at upload, an
activate action that confirms first, and a HIT type fixed once the batch exists."""
import re
from decimal import Decimal

import pytest
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.engine.hit_types import all_hit_types, get_hit_type
from annotation.engine.upload_help import GOLD_COLUMN
from annotation.models import Batch, Instance, InstructionFamily
from tests.factories import make_batch, publish_on_mturk

pytestmark = pytest.mark.django_db

UPLOAD = "admin:annotation_batch_upload"
SAMPLE = "admin:annotation_batch_upload_sample"
CHANGELIST = "admin:annotation_batch_changelist"
SLUGS = [h.slug for h in all_hit_types()]
PAIRWISE_CSV = (b"instruction,response_a,response_b\n"
                b"What is shown?,A cat on a mat.,A dog on a log.\n"
                b"How many birds?,Three birds.,Two birds.\n")


def _upload(client, content=PAIRWISE_CSV, name="rows.csv", **fields):
    data = {"hit_type": "pairwise_ab", "title": "Uploaded", "provider": "local",
            "assignments_per_task": 3, "reward": "0.10", "lease_seconds": 1800,
            "min_seconds": 0, "budget": "", **fields,
            "file": SimpleUploadedFile(name, content)}
    return client.post(reverse(UPLOAD), data)


def _objects_named_by(rows):
    """Create what a sample's rows refer to (the pipeline's family and stand-in instances)."""
    for row in rows:
        if "family" in row:
            InstructionFamily.objects.get_or_create(name=row["family"])
        if "instance" in row:
            Instance.objects.get_or_create(uuid=row["instance"],
                                           defaults={"instruction": "Count the dots."})


def test_the_page_lists_every_types_columns_from_its_payload_form(admin_client_):
    page = admin_client_.get(reverse(UPLOAD))
    assert page.status_code == 200
    html = page.content.decode()
    shown = {h["slug"]: h for h in page.context["hit_types"]}
    assert sorted(shown) == sorted(SLUGS)
    for slug in SLUGS:
        fields = get_hit_type(slug).payload_form.base_fields
        columns = shown[slug]["columns"]
        assert [c.name for c in columns] == [*fields, GOLD_COLUMN]
        assert [c.required for c in columns[:-1]] == [f.required for f in fields.values()]
        assert f'id="columns-{slug}"' in html
        for name in fields:
            assert f"<code>{name}</code>" in html
    # Types, help text and the form's own rule are shown, not only the names.
    pairwise = shown["pairwise_ab"]
    assert {c.name: c.kind for c in pairwise["columns"]}["instruction"] == \
        "text, up to 5,000 characters"
    assert "stored comparison, or the texts inline" in pairwise["rule"]
    assert "Instruction family: uuid or name" in html  # a field's help text
    assert "id (UUID)" in html
    aliases = get_hit_type("pairwise_ab").aliases  # a released file's column → ours
    assert {c.name: c.aliases for c in pairwise["columns"]}["response_a"] == \
        tuple(theirs for theirs, ours in aliases.items() if ours == "response_a") != ()
    # The chosen type's table is picked by a static script (inline scripts are refused);
    # without it every table shows.
    assert "js/batch_upload.js" in html and "<script>" not in html
    assert re.search(r"<section[^>]*\bhidden\b", html) is None


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("slug", SLUGS)
def test_every_types_sample_file_uploads_cleanly(admin_client_, slug, fmt):
    hit = get_hit_type(slug)
    rows = hit.example_rows
    assert rows, f"{slug} has no example_rows: the upload page offers no sample"
    _objects_named_by(rows)
    sample = admin_client_.get(reverse(SAMPLE), {"hit_type": slug, "format": fmt})
    assert sample.status_code == 200
    assert sample["Content-Disposition"] == f'attachment; filename="{slug}-sample.{fmt}"'
    created = _upload(admin_client_, sample.content, name=f"{slug}-sample.{fmt}",
                      hit_type=slug, title=f"Sample {slug}")
    assert created.status_code == 302, created.context["form"].errors
    batch = Batch.objects.get(title=f"Sample {slug}")
    tasks = list(batch.tasks.order_by("position"))
    assert len(tasks) == len(rows)
    assert [t.is_gold for t in tasks] == [bool(r.get(GOLD_COLUMN)) for r in rows]


def test_sample_of_an_unknown_type_or_format_is_a_404(admin_client_):
    assert admin_client_.get(reverse(SAMPLE), {"hit_type": "nope"}).status_code == 404
    assert admin_client_.get(reverse(SAMPLE), {"hit_type": "pairwise_ab",
                                               "format": "xlsx"}).status_code == 404


def test_provider_budget_n_and_lease_are_stored(admin_client_):
    response = _upload(admin_client_, provider="prolific", budget="50.00",
                       assignments_per_task=4, lease_seconds=600, reward="0.25")
    assert response.status_code == 302
    batch = Batch.objects.get()
    assert (batch.provider, batch.budget, batch.assignments_per_task, batch.lease_seconds,
            batch.reward, batch.status) == ("prolific", Decimal("50.00"), 4, 600,
                                            Decimal("0.25"), Batch.Status.DRAFT)
    assert [t.max_assignments for t in batch.tasks.all()] == [4, 4]


def test_a_budget_below_the_estimate_is_refused_and_nothing_is_created(admin_client_):
    # 2 tasks × N 3 × $0.10 = $0.60 (local: no fees).
    page = _upload(admin_client_, budget="0.59")
    assert page.status_code == 200 and not Batch.objects.exists()
    assert "The estimate $0.60" in page.context["form"].errors["budget"][0]
    assert _upload(admin_client_, budget="0.60").status_code == 302


def test_a_paid_marketplace_without_a_budget_is_refused(admin_client_):
    page = _upload(admin_client_, provider="mturk")
    assert page.status_code == 200 and not Batch.objects.exists()
    # MTurk adds 20 % fees: $0.60 + 6 × $0.02.
    assert "needs a budget" in page.context["form"].errors["budget"][0]
    assert "$0.72" in page.context["form"].errors["budget"][0]


def test_a_bad_row_is_named_and_nothing_is_created(admin_client_):
    page = _upload(admin_client_, b"instruction,response_a\nQ?,only one\n")
    assert page.status_code == 200 and not Batch.objects.exists()
    assert "Row 1" in page.context["form"].errors["file"][0]


def test_activate_shows_a_confirmation_and_only_its_post_activates(admin_client_):
    batch = make_batch(2, n=3, activate=False, budget=Decimal("0.50"), reward=Decimal("0.10"))
    url = reverse(CHANGELIST)
    assert admin_client_.get(url).status_code == 200
    first = admin_client_.post(url, {"action": "activate", "_selected_action": [batch.pk],
                                     "index": 0})
    assert first.status_code == 200
    html = first.content.decode()
    assert "Activate these batches?" in html and batch.title in html
    row = first.context["rows"][0]
    assert (row["tasks"], row["estimate"], row["over_budget"]) == (2, Decimal("0.60"), True)
    assert "Over budget" in html and "Local account" in html and "$0.50" in html
    batch.refresh_from_db()
    assert batch.status == Batch.Status.DRAFT
    confirmed = admin_client_.post(url, {"action": "activate", "_selected_action": [batch.pk],
                                         "post": "yes"})
    assert confirmed.status_code == 302
    batch.refresh_from_db()
    assert batch.status == Batch.Status.ACTIVE


def test_hit_type_is_a_choice_on_add_and_read_only_on_change(admin_client_):
    add = admin_client_.get(reverse("admin:annotation_batch_add"))
    options = add.context["adminform"].form.fields["hit_type"].choices
    assert [value for value, _ in options] == SLUGS
    refused = admin_client_.post(reverse("admin:annotation_batch_add"), {
        "hit_type": "free text", "title": "x", "assignments_per_task": 1, "reward": "0",
        "lease_seconds": 60, "min_seconds": 0, "provider": "local", "status": "draft"})
    assert refused.status_code == 200 and "hit_type" in refused.context["adminform"].form.errors

    batch = make_batch(1, activate=False)
    change_url = reverse("admin:annotation_batch_change", args=[batch.pk])
    form = admin_client_.get(change_url).context["adminform"].form
    assert "hit_type" not in form.fields and "provider" in form.fields
    admin_client_.post(change_url, {
        "hit_type": "rubric_score", "title": "Renamed", "assignments_per_task": 5,
        "reward": "0.10", "lease_seconds": 1800, "min_seconds": 0, "provider": "local",
        "status": "draft"})
    batch.refresh_from_db()
    assert (batch.title, batch.hit_type) == ("Renamed", "pairwise_ab")

    publish_on_mturk(batch)  # launched: the marketplace is fixed too
    form = admin_client_.get(change_url).context["adminform"].form
    assert "provider" not in form.fields


def test_staff_without_the_batch_permissions_get_403(django_user_model):
    from django.test import Client

    clerk = django_user_model.objects.create_user(username="clerk", password="x", is_staff=True)
    clerk.user_permissions.add(Permission.objects.get(codename="view_batch"))
    client = Client()
    client.force_login(clerk)
    assert client.get(reverse(UPLOAD)).status_code == 403
    assert client.get(reverse(SAMPLE), {"hit_type": "pairwise_ab"}).status_code == 403
    assert _upload(client).status_code == 403 and not Batch.objects.exists()
    # The list is visible, but activation is not offered and a forged action does nothing.
    batch = make_batch(1, activate=False)
    listing = client.get(reverse(CHANGELIST))
    assert listing.status_code == 200
    assert 'value="activate"' not in listing.content.decode()
    client.post(reverse(CHANGELIST), {"action": "activate", "_selected_action": [batch.pk],
                                      "post": "yes"})
    batch.refresh_from_db()
    assert batch.status == Batch.Status.DRAFT



@pytest.mark.parametrize(("reward", "says"), [
    ("0.25", "The launch will be refused: pay below Prolific's minimum: 3.00 per hour"),
    ("0.60", "Pay below Prolific's recommendation: 7.20 per hour"),
    ("1.00", "On Prolific: 12.00 per hour (5.0 min, estimated time)."),
])
def test_a_prolific_upload_says_the_hourly_rate_against_the_floor(admin_client_, reward, says):
    response = _upload(admin_client_, provider="prolific", budget="50.00", reward=reward)
    assert response.status_code == 302
    notes = [str(m) for m in get_messages(response.wsgi_request)]
    assert any(says in note for note in notes), notes
