"""A batch's results out: one row per assignment in CSV, JSONL and Parquet, read back with
pandas / pyarrow; workers shown as people; admins only; the command and the admin actions."""
import io
import json
from datetime import timedelta

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.contrib import admin as django_admin
from django.core.management import CommandError, call_command
from django.http import Http404
from django.test import RequestFactory
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.engine.admin import AssignmentAdmin, BatchAdmin
from annotation.engine.hit_types import get_hit_type
from annotation.engine.results import FIXED, flatten_answer
from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_for_external, worker_for_user
from annotation.models import Assignment, Batch

pytestmark = pytest.mark.django_db

ANSWER_COLUMNS = ["answer.score", "answer.feedback"]
INPUT_COLUMNS = ["input.instruction", "input.image_urls", "input.model", "input.response",
                 "input.criteria", *(f"input.score{i}" for i in range(1, 6)),
                 "input.reference_answer", "input.gold"]
FORMULA = "=HYPERLINK(\"https://evil.example\")  is what this feedback starts with"


@pytest.fixture
def batch(alice, bob, django_user_model):
    """Rubric batch: 2 tasks + 1 gold (score 5); alice and carl do every task, bob holds a
    lease without submitting."""
    carl = django_user_model.objects.create_user(username="carl", password="pw-carl")
    example = get_hit_type("rubric_score").example_rows
    rows = [*example, {**example[0], "_gold_answer": '{"score": 5}'}]
    made = batch_create_from_rows(hit_type="rubric_score", title="Rubric results", rows=rows,
                                  assignments_per_task=3)
    made = batch_set_status(made, Batch.Status.ACTIVE)
    for worker, score in ((worker_for_user(alice), 5), (worker_for_user(carl), 2)):
        while (a := task_claim_next(batch=made, worker=worker)) is not None:
            feedback = FORMULA if score == 2 else "Reads the clock hands correctly and fully."
            assignment_submit(assignment=a, data={"score": score, "feedback": feedback},
                              now=a.claimed_at + timedelta(seconds=40))
    task_claim_next(batch=made, worker=worker_for_user(bob))
    return made


def _api(user=None):
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def _get(user, batch, fmt):
    response = _api(user).get(f"/api/batches/{batch.uuid}/results.{fmt}")
    assert response.status_code == 200, response.content
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return response, body


def _check_frame(frame: pd.DataFrame, batch: Batch):
    assert list(frame.columns) == [name for name, _ in FIXED] + INPUT_COLUMNS + ANSWER_COLUMNS
    assert len(frame) == 7  # 3 + 3 submitted, 1 lease
    assert set(frame["worker"]) == {"alice", "carl", "bob"}
    assert set(frame["batch"]) == {str(batch.uuid)}
    by_worker = frame.groupby("worker")
    assert set(by_worker.get_group("carl")["answer.feedback"]) == {FORMULA}
    gold = frame[frame["is_gold"]]
    assert dict(zip(gold["worker"], gold["gold_correct"], strict=True)) == {
        "alice": True, "carl": False}
    lease = frame[frame["status"] == "leased"].iloc[0]
    assert lease["worker"] == "bob" and pd.isna(lease["answer.score"])
    assert pd.isna(lease["submitted_at"])
    done = frame[frame["status"] == "submitted"]
    assert set(done["answer.score"]) == {5, 2} and set(done["seconds_spent"]) == {40.0}
    assert done["counted"].all() and not done["late"].any()
    assert list(frame["task_position"]) == sorted(frame["task_position"])
    first = Assignment.objects.order_by("pk").first()
    row = frame[frame["assignment"] == str(first.uuid)].iloc[0]
    assert pd.Timestamp(row["claimed_at"]) == pd.Timestamp(first.claimed_at)


def test_csv_reads_back_with_pandas_and_neutralises_formulas(batch, admin):
    response, body = _get(admin, batch, "csv")
    assert response["Content-Type"].startswith("text/csv")
    assert f'results-{batch.uuid}.csv' in response["Content-Disposition"]
    frame = pd.read_csv(io.BytesIO(body), parse_dates=["claimed_at", "submitted_at"])
    assert "'" + FORMULA in set(frame["answer.feedback"])  # csv_safety's apostrophe
    frame["answer.feedback"] = frame["answer.feedback"].str.removeprefix("'")
    _check_frame(frame, batch)
    assert "local:" not in body.decode()


def test_jsonl_has_the_same_keys_on_every_line(batch, admin):
    _, body = _get(admin, batch, "jsonl")
    lines = [json.loads(line) for line in body.decode().splitlines()]
    assert len({tuple(line) for line in lines}) == 1
    frame = pd.read_json(io.BytesIO(body), lines=True, dtype=False)
    for column in ("claimed_at", "submitted_at"):
        frame[column] = pd.to_datetime(frame[column])
    _check_frame(frame, batch)


def test_parquet_keeps_its_types(batch, admin):
    response, body = _get(admin, batch, "parquet")
    table = pq.read_table(pa.BufferReader(body))
    types = dict(zip(table.schema.names, table.schema.types, strict=True))
    assert types["answer.score"] == pa.int64() and types["answer.feedback"] == pa.string()
    assert types["claimed_at"] == pa.timestamp("us", tz="UTC")
    assert types["seconds_spent"] == pa.float64() and types["is_gold"] == pa.bool_()
    assert types["task_position"] == pa.int64() and types["gold_correct"] == pa.bool_()
    _check_frame(table.to_pandas(), batch)


def test_answers_are_flattened_and_columns_are_the_union_with_one_type(batch, admin):
    flat = flatten_answer({"choice": "A", "extra": {"why": "clear", "tags": ["x", 1]},
                           "n": None})
    assert flat == {"answer.choice": "A", "answer.extra.why": "clear",
                    "answer.extra.tags": ["x", 1], "answer.n": None}
    one, two = Assignment.objects.filter(status="submitted").order_by("pk")[:2]
    # shapes no HIT type writes today: nested, mixed int/float, a number where text was
    Assignment.objects.filter(pk=one.pk).update(answer={"score": 2.5, "feedback": 7,
                                                        "extra": {"tags": ["a", "b"]}})
    Assignment.objects.filter(pk=two.pk).update(answer={"score": 3, "feedback": "ok"})
    _, body = _get(admin, batch, "parquet")
    table = pq.read_table(pa.BufferReader(body))
    assert table.schema.field("answer.score").type == pa.float64()
    assert table.schema.field("answer.feedback").type == pa.string()
    rows = {r["assignment"]: r for r in table.to_pylist()}
    assert rows[str(one.uuid)]["answer.extra.tags"] == '["a", "b"]'
    assert rows[str(one.uuid)]["answer.feedback"] == "7"
    assert rows[str(two.uuid)]["answer.extra.tags"] is None
    assert rows[str(two.uuid)]["answer.score"] == 3.0


def test_a_marketplace_worker_is_shown_by_their_marketplace_id(admin):
    rows = get_hit_type("pairwise_ab").example_rows
    made = batch_create_from_rows(hit_type="pairwise_ab", title="On MTurk", rows=rows,
                                  provider="mturk")
    made = batch_set_status(made, Batch.Status.ACTIVE)
    turker = worker_for_external("mturk", "A3TURKER")
    claimed = task_claim_next(batch=made, worker=turker)
    assignment_submit(assignment=claimed, data={"choice": "B"},
                      now=claimed.claimed_at + timedelta(seconds=12))
    _, body = _get(admin, made, "csv")
    frame = pd.read_csv(io.BytesIO(body), keep_default_na=False)
    assert list(frame["worker"]) == ["A3TURKER"] and list(frame["worker_provider"]) == ["mturk"]
    assert list(frame["answer.choice"]) == ["B"]
    assert str(turker.uuid) not in body.decode() and "mturk:" not in body.decode()


def test_only_admins_get_results(batch, admin, analyst, alice):
    path = f"/api/batches/{batch.uuid}/results.csv"
    assert _api().get(path).status_code == 401
    assert _api(alice).get(path).status_code == 403
    assert _api(analyst).get(path).status_code == 403
    assert _api(admin).get(path).status_code == 200
    bad = _api(admin).get(f"/api/batches/{batch.uuid}/results.xlsx")
    assert bad.status_code == 400 and "use one of csv, jsonl, parquet" in str(bad.data)
    assert _api(alice).get(f"/api/batches/{batch.uuid}/results.xlsx").status_code == 403
    missing = "/api/batches/00000000-0000-0000-0000-000000000000/results.csv"
    assert _api(admin).get(missing).status_code == 404
    # a client asking for the file's own type gets the file, and errors still come as JSON
    assert _api(admin).get(path, HTTP_ACCEPT="text/csv").status_code == 200
    bad = _api(admin).get(f"/api/batches/{batch.uuid}/results.xlsx", HTTP_ACCEPT="text/csv")
    assert bad.status_code == 400 and "unknown results format" in bad.json()["format"][0]


def test_command_writes_each_format_and_refuses_a_bad_one(batch, tmp_path, monkeypatch):
    out = tmp_path / "results.parquet"
    call_command("export_results", "--batch", str(batch.uuid), "--format", "parquet",
                 "--out", str(out), stdout=io.StringIO())
    assert pq.read_table(out).num_rows == 7
    jsonl = tmp_path / "results.jsonl"
    call_command("export_results", "--batch", str(batch.uuid), "--format", "jsonl",
                 "--out", str(jsonl), stdout=io.StringIO())
    assert len(jsonl.read_text().splitlines()) == 7
    with pytest.raises(CommandError, match="unknown results format 'xls'; use one of csv"):
        call_command("export_results", "--batch", str(batch.uuid), "--format", "xls",
                     "--out", str(tmp_path / "r.xls"))
    assert not (tmp_path / "r.xls").exists()
    with pytest.raises(CommandError, match="Not a batch uuid"):
        call_command("export_results", "--batch", "42", "--format", "csv",
                     "--out", str(tmp_path / "r.csv"))


def test_admin_exports_selected_batches_and_shows_people(batch, admin, alice, client):
    request = RequestFactory().post("/admin/annotation/batch/")
    request.user = admin
    model_admin = BatchAdmin(Batch, django_admin.site)
    response = model_admin.export_results_csv(request, Batch.objects.all())
    frame = pd.read_csv(io.BytesIO(b"".join(response.streaming_content)))
    assert len(frame) == 7 and set(frame["worker"]) == {"alice", "carl", "bob"}
    parquet = model_admin.export_results_parquet(request, Batch.objects.all())
    assert pq.read_table(pa.BufferReader(b"".join(parquet.streaming_content))).num_rows == 7
    page = RequestFactory().get("/")
    page.user = admin
    jsonl = model_admin.results_view(page, str(batch.pk), "jsonl")
    assert len(b"".join(jsonl.streaming_content).splitlines()) == 7
    bad = model_admin.results_view(page, str(batch.pk), "xlsx")
    assert bad.status_code == 400 and b"unknown results format 'xlsx'" in bad.content
    with pytest.raises(Http404):
        model_admin.results_view(page, "999999", "csv")
    people = AssignmentAdmin(Assignment, django_admin.site)
    shown = {people.person(a) for a in Assignment.objects.select_related("worker__user")}
    assert any(">alice</a> <small>(Local account)</small>" in s for s in shown)
    assert any(">carl</a> <small>(Local account)</small>" in s for s in shown)
    assert not any("local:" in s for s in shown)
    client.force_login(admin)  # the real admin pages: the list names people, links download
    listing = client.get("/admin/annotation/assignment/").content.decode()
    assert ">alice</a>" in listing and "local:user" not in listing.split("<tbody>")[-1]
    change = client.get(f"/admin/annotation/batch/{batch.pk}/change/").content.decode()
    assert f"/admin/annotation/batch/{batch.pk}/results/parquet/" in change
