"""Results carry the task's inputs (``input.*``, MTurk's ``Input.*``) beside the answer: what
the page showed (instruction, images, turns, the models' names and responses on the sides
they were shown), and the gold answer; read in a number of queries that does not grow with
the batch, and formula-safe in CSV. Every check downloads through the real API."""
import copy
import io
import json
from datetime import timedelta

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.engine.hit_types import get_hit_type
from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_for_user
from annotation.models import Batch, Image, Instance, Task
from tests.factories import make_workers

pytestmark = pytest.mark.django_db


def _download(user, batch, fmt) -> bytes:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    response = client.get(f"/api/batches/{batch.uuid}/results.{fmt}")
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content) if response.streaming else response.content


def _batch(slug, rows, **options):
    made = batch_create_from_rows(hit_type=slug, title=f"{slug} results", rows=rows,
                                  min_seconds=0, **options)
    return batch_set_status(made, Batch.Status.ACTIVE)


def _submit_all(batch, user, answer):
    worker = worker_for_user(user)
    while (a := task_claim_next(batch=batch, worker=worker)) is not None:
        assignment_submit(assignment=a, data=answer, now=a.claimed_at + timedelta(seconds=30))


def test_pairwise_rows_show_the_models_and_responses_on_the_sides_shown(admin, alice):
    example = get_hit_type("pairwise_ab").example_rows  # they name their models: stored
    rows = [*example, {**example[0], "_gold_answer": {"choice": "A"}}]
    batch = _batch("pairwise_ab", rows, assignments_per_task=1)
    _submit_all(batch, alice, {"choice": "B"})
    frame = pd.read_csv(io.BytesIO(_download(admin, batch, "csv")), keep_default_na=False)
    assert len(frame) == 3
    columns = list(frame.columns)
    assert columns.index("input.instruction") < columns.index("answer.choice")
    hit = get_hit_type("pairwise_ab")
    for _, row in frame.iterrows():
        task = Task.objects.get(uuid=row["task"])
        shown = hit.page_context(task)
        assert row["input.instruction"] == shown["instruction"]
        assert json.loads(row["input.image_urls"]) == [i["url"] for i in shown["images"]]
        assert (row["input.response_a"], row["input.response_b"]) == (
            shown["response_a"], shown["response_b"])
        source = next(r for r in example if r["instruction"] == row["input.instruction"])
        # whichever side the randomiser put each model on, its name travels with its text
        assert {(row["input.model_a"], row["input.response_a"]),
                (row["input.model_b"], row["input.response_b"])} == {
            (source["model_a"], source["response_a"]), (source["model_b"], source["response_b"])}
        assert row["answer.choice"] == "B"
        gold = json.loads(row["input.gold"]) if row["input.gold"] else None
        assert gold == (task.gold_answer if task.is_gold else None)
        if task.is_gold:  # the gold follows its response to the side it was shown on
            assert row[f"input.response_{gold['choice'].lower()}"] == source["response_a"]


def test_multiturn_rows_carry_each_turn_as_shown(admin, alice):
    example = get_hit_type("multiturn_ab").example_rows  # 2 turns, then 3 turns
    batch = _batch("multiturn_ab", example, assignments_per_task=1)
    _submit_all(batch, alice, {"turn1": "A", "turn2": "B", "turn3": "A", "overall": "A"})
    lines = [json.loads(line) for line in _download(admin, batch, "jsonl").splitlines()]
    assert len(lines) == 2
    hit = get_hit_type("multiturn_ab")
    for line in lines:
        turns = hit.page_context(Task.objects.get(uuid=line["task"]))["turns"]
        for turn in turns:
            for key in ("instruction", "response_a", "response_b"):
                assert line[f"input.turn{turn['number']}.{key}"] == turn[key]
        assert {line["input.model_a"], line["input.model_b"]} == {"llava-1.5-13b", "qwen-vl-chat"}
    two_turns = next(line for line in lines
                     if line["input.turn1.instruction"].startswith("What colour"))
    assert two_turns["input.turn3.instruction"] is None


def test_feedback_parquet_keeps_the_feedbacks_authors_and_scores(admin, alice):
    batch = _batch("feedback_ab", get_hit_type("feedback_ab").example_rows,
                   assignments_per_task=1)
    _submit_all(batch, alice, {"choice": "A"})
    table = pq.read_table(pa.BufferReader(_download(admin, batch, "parquet")))
    assert table.schema.field("input.score_a").type == pa.float64()
    for row in table.to_pylist():
        authors = {(row["input.source_a"], row["input.score_a"], row["input.feedback_a"]),
                   (row["input.source_b"], row["input.score_b"], row["input.feedback_b"])}
        source = next(r for r in get_hit_type("feedback_ab").example_rows
                      if r["response_text"] == row["input.response"])
        assert authors == {(source["source_a"], source["score_a"], source["feedback_a"]),
                           (source["source_b"], source["score_b"], source["feedback_b"])}
        assert row["input.model"] == source["model"]


def test_inline_inputs_are_neutralised_in_csv_and_kept_in_jsonl(admin, alice):
    formula = "=HYPERLINK(\"https://evil.example\") which shape is larger?"
    row = {"instruction": formula, "image_urls": ["https://example.org/a.png"],
           "response_a": "@SUM(1,2) the circle", "response_b": "The square."}
    batch = _batch("pairwise_ab", [row], assignments_per_task=1)  # no model names: inline
    _submit_all(batch, alice, {"choice": "A"})
    frame = pd.read_csv(io.BytesIO(_download(admin, batch, "csv")), keep_default_na=False)
    assert list(frame["input.instruction"]) == ["'" + formula]
    assert list(frame["input.response_a"]) == ["'@SUM(1,2) the circle"]
    assert list(frame["input.model_a"]) == [""]
    line = json.loads(_download(admin, batch, "jsonl"))
    assert line["input.instruction"] == formula
    assert json.loads(line["input.image_urls"]) == ["https://example.org/a.png"]


def _numbered(slug: str, count: int) -> list[dict]:
    """``count`` distinct rows of ``slug`` (its example rows, their first question numbered)."""
    rows = []
    for i in range(count):
        row = copy.deepcopy(get_hit_type(slug).example_rows[i % 2])
        if "turns" in row:
            row["turns"][0]["instruction"] += f" (#{i})"
        else:
            row["instruction"] += f" (#{i})"
        rows.append(row)
    return rows


def _queries_for(admin, slug: str, count: int) -> int:
    batch = _batch(slug, _numbered(slug, count), assignments_per_task=1)
    for worker in make_workers(count):
        assert task_claim_next(batch=batch, worker=worker) is not None
    Token.objects.get_or_create(user=admin)  # made before counting: both runs reuse it
    with CaptureQueriesContext(connection) as queries:
        body = _download(admin, batch, "csv")
    frame = pd.read_csv(io.BytesIO(body))
    assert len(frame) == count and frame["input.image_urls"].notna().all()
    return len(queries)


@pytest.mark.parametrize("slug", ["pairwise_ab", "multiturn_ab", "rubric_score", "feedback_ab"])
def test_the_inputs_cost_the_same_queries_for_2_tasks_as_for_12(admin, slug):
    assert _queries_for(admin, slug, 2) == _queries_for(admin, slug, 12)


def test_a_verification_row_carries_the_instance_and_the_candidate_checked(admin):
    instance = Instance.objects.create(instruction="Which image has more dots?", kind="multi",
                                       stage="verification",
                                       candidate_reference="Image 2 has more dots.")
    for i in range(2):
        image = Image.objects.create(source_url=f"https://example.org/{i}.png")
        instance.instance_images.create(image=image, position=i)
    batch = _batch("reference_verification", [{"instance": str(instance.uuid)}],
                   assignments_per_task=1)
    task_claim_next(batch=batch, worker=make_workers(1)[0])
    line = json.loads(_download(admin, batch, "jsonl"))
    assert line["input.instance"] == str(instance.uuid)
    assert line["input.instruction"] == "Which image has more dots?"
    assert json.loads(line["input.image_urls"]) == ["https://example.org/0.png",
                                                    "https://example.org/1.png"]
    assert line["input.candidate"] == "Image 2 has more dots."
