"""Inline rating rows that name their models are stored at upload with randomised sides, and
their votes are recorded through the stored path: once per assignment, for the right model."""
import csv
import io
import uuid
from datetime import timedelta

import pytest

from annotation.engine.hit_types import get_hit_type
from annotation.engine.services.batches import (
    RowError,
    batch_create_from_rows,
    batch_set_status,
    rows_from_upload,
)
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.models import Batch, Instance, ScoreRubric
from judging.models import Comparison, EvalModel, Judgment, Response
from judging.selectors import pairwise_judgments
from tests.factories import make_workers

pytestmark = pytest.mark.django_db

VISIT_COLUMNS = ["image_url", "instruction", "A", "B", "A_model", "B_model",
                 "model_selection.A", "model_selection.B"]
INSTRUCTIONS = ["Describe the image.", "What is unusual here?", "Count the animals."]


def _visit_file(n: int) -> bytes:
    """A VisIT-Bench human-preference CSV: instructions repeat across distinct items, the
    winning model ("llava") on column A in some rows and on B in others."""
    out = io.StringIO()
    writer = csv.DictWriter(out, VISIT_COLUMNS)
    writer.writeheader()
    for i in range(n):
        good, bad = f"llava's answer about picture {i}.", f"blip's answer about picture {i}."
        llava_first = i % 3 != 0
        writer.writerow({
            "image_url": f"https://example.org/visit/{i}.jpg",
            "instruction": INSTRUCTIONS[i % len(INSTRUCTIONS)],
            "A": good if llava_first else bad, "B": bad if llava_first else good,
            "A_model": "llava" if llava_first else "blip2",
            "B_model": "blip2" if llava_first else "llava",
            "model_selection.A": 1 if llava_first else 0,
            "model_selection.B": 0 if llava_first else 1})
    return out.getvalue().encode()


def _batch(hit_type, rows, n=1, **options):
    batch = batch_create_from_rows(hit_type=hit_type, title="inline", rows=rows,
                                   assignments_per_task=n, **options)
    return batch_set_status(batch, Batch.Status.ACTIVE)


def _work(batch, worker, decide):
    """Claim and answer every task left for ``worker``; ``decide(page context)`` answers."""
    done = []
    while (assignment := task_claim_next(batch=batch, worker=worker)) is not None:
        page = get_hit_type(batch.hit_type).page_context(assignment.task)
        assignment_submit(assignment=assignment, data=decide(page),
                          now=assignment.claimed_at + timedelta(seconds=30))
        done.append(assignment)
    return done


def _pick_llava(page):
    return {"choice": "A" if page["response_a"].startswith("llava") else "B"}


def test_a_released_preference_file_is_stored_side_randomised_and_votes_find_the_model():
    rows = rows_from_upload("visit_prefs.csv", _visit_file(40))
    batch = _batch("pairwise_ab", rows, n=2)
    tasks = list(batch.tasks.order_by("position"))
    assert all(set(t.payload) == {"comparison"} for t in tasks)
    comparisons = Comparison.objects.filter(uuid__in=[t.payload["comparison"] for t in tasks])
    # shown sides: llava on A for some comparisons, on B for others
    shown_a = {c.response_a.model.name for c in comparisons.select_related("response_a__model")}
    assert shown_a == {"llava", "blip2"}
    assert {c.swapped for c in comparisons} == {True, False}
    # a repeated instruction is not a repeated item: 40 rows, 3 instructions, 40 instances
    assert comparisons.values("instance").distinct().count() == 40
    assert Instance.objects.filter(source="upload").count() == 40
    for worker in make_workers(2):
        assert len(_work(batch, worker, _pick_llava)) == 40
    votes = pairwise_judgments()
    assert len(votes) == 80  # once per assignment
    assert [a if o == "A" else b for a, b, o, _ in votes] == ["llava"] * 80
    assert Judgment.objects.filter(assignment__batch=batch).values("assignment").distinct() \
        .count() == 80


def test_the_sides_are_seeded_per_batch():
    rows = rows_from_upload("visit_prefs.csv", _visit_file(20))

    def sides(batch):
        uuids = [t.payload["comparison"] for t in batch.tasks.order_by("position")]
        swapped = dict(Comparison.objects.filter(uuid__in=uuids).values_list("uuid", "swapped"))
        return [swapped[uuid.UUID(u)] for u in uuids]

    first = _batch("pairwise_ab", rows, seed=11)
    again = _batch("pairwise_ab", rows, seed=11)
    other = _batch("pairwise_ab", rows, seed=12)
    assert sides(first) == sides(again) and sides(first) != sides(other)


def test_a_bad_row_is_named_and_nothing_is_written():
    rows = rows_from_upload("visit_prefs.csv", _visit_file(5))
    rows[2]["B_model"] = ""  # row 3 names one model only
    with pytest.raises(RowError, match=r"Row 3: name both models"):
        batch_create_from_rows(hit_type="pairwise_ab", title="bad", rows=rows)
    rows[2]["B_model"] = rows[2]["A_model"]
    with pytest.raises(RowError, match=r"Row 3: .*both 'llava'"):
        batch_create_from_rows(hit_type="pairwise_ab", title="bad", rows=rows)
    rows[2]["B_model"], rows[4]["image_url"] = "blip2", "/media/local.png"
    with pytest.raises(RowError, match=r"Row 5: image_urls"):
        batch_create_from_rows(hit_type="pairwise_ab", title="bad", rows=rows)
    assert not Batch.objects.exists() and not Instance.objects.exists()
    assert not EvalModel.objects.exists() and not Comparison.objects.exists()
    assert not Response.objects.exists()


def test_rows_naming_one_item_share_it_and_a_changed_answer_is_refused():
    row = {"instruction": "Count the birds.", "image_urls": ["https://example.org/b.jpg"],
           "item_id": "birds-1", "model_a": "llava", "response_a": "Four.",
           "model_b": "blip2", "response_b": "Five."}
    third = {**row, "model_b": "qwen", "response_b": "Three."}
    _batch("pairwise_ab", [row, third])
    assert Instance.objects.get(external_id="birds-1").responses.count() == 3
    with pytest.raises(RowError, match=r"Row 1: 'llava' already has another response"):
        batch_create_from_rows(hit_type="pairwise_ab", title="x",
                               rows=[{**row, "response_a": "Six."}])
    with pytest.raises(RowError, match=r"Row 1: item_id 'birds-1' names an item with another"):
        batch_create_from_rows(hit_type="pairwise_ab", title="x",
                               rows=[{**row, "instruction": "Name the birds."}])


def test_gold_follows_its_row_across_the_swap_and_never_becomes_a_judgment():
    rows = [{"instruction": f"Q{i}?", "model_a": "good", "response_a": f"good {i}",
             "model_b": "bad", "response_b": f"bad {i}", "_gold_answer": '{"choice": "A"}'}
            for i in range(12)]
    batch = _batch("pairwise_ab", rows)
    for task in batch.tasks.all():
        comparison = Comparison.objects.get(uuid=task.payload["comparison"])
        shown = "B" if comparison.swapped else "A"
        assert task.is_gold and task.gold_answer == {"choice": shown}
        assert comparison.gold_choice == shown
    worker, = make_workers(1)
    done = _work(batch, worker, lambda page: {"choice": "A" if "good" in page["response_a"]
                                              else "B"})
    assert all(a.gold_correct for a in Batch.objects.get().assignments.all()) and len(done) == 12
    assert not Judgment.objects.exists()


def test_multiturn_inline_records_each_turn_and_overall_for_the_right_model():
    row = {"image_url": "https://example.org/k.jpg", "A_model": "llava", "B_model": "qwen",
           "turns": [{"instruction": "What is on the table?", "response_a": "llava: a cup",
                      "response_b": "qwen: a plate"},
                     {"instruction": "Why is it there?", "response_a": "llava: for tea",
                      "response_b": "qwen: for cake"}]}
    rows = [{**row, "turns": [dict(t) for t in row["turns"]]} for _ in range(12)]
    batch = _batch("multiturn_ab", rows)

    def llava_side(page):
        side = "A" if page["turns"][0]["response_a"].startswith("llava") else "B"
        return {"turn1": side, "turn2": side, "overall": side}

    worker, = make_workers(1)
    assert len(_work(batch, worker, llava_side)) == 12
    judgments = Judgment.objects.select_related("comparison__response_a__model",
                                                "comparison__response_b__model")
    assert judgments.count() == 12 * 3
    assert {j.turn for j in judgments} == {"1", "2", "overall"}
    winners = {(j.comparison.response_a if j.choice == "A" else j.comparison.response_b)
               .model.name for j in judgments}
    assert winners == {"llava"}
    assert {j.comparison.swapped for j in judgments} == {True, False}
    assert Instance.objects.filter(kind="conversation").count() == 12


def test_rubric_inline_records_the_score_of_the_named_models_response():
    hit = get_hit_type("rubric_score")
    batch = _batch("rubric_score", hit.example_rows, n=2)
    for worker in make_workers(2):
        _work(batch, worker, lambda page: {
            "score": 4 if page["response_text"].startswith("There are four") else 2,
            "feedback": "Reads the image carefully and answers the question."})
    scores = Judgment.objects.filter(kind=Judgment.Kind.SCORE, assignment__isnull=False)
    assert scores.count() == 4
    assert {(j.response.model.name, j.score) for j in scores} == {
        ("llava-1.5-13b", 4.0), ("instructblip-vicuna-7b", 2.0)}
    assert ScoreRubric.objects.count() == 2
    assert all(j.meta["rubric"] for j in scores)


def test_feedback_inline_is_side_randomised_and_records_the_chosen_author():
    base = get_hit_type("feedback_ab").example_rows[0]
    rows = [{**base, "item_id": f"clock-{i}"} for i in range(16)]
    batch = _batch("feedback_ab", rows)
    worker, = make_workers(1)
    # always prefer the feedback prometheus wrote, wherever it is shown
    _work(batch, worker, lambda page: {
        "choice": "A" if page["feedback_a"] == base["feedback_a"] else "B"})
    votes = Judgment.objects.filter(kind=Judgment.Kind.FEEDBACK)
    assert votes.count() == 16
    assert {v.meta[f"source_{v.choice.lower()}"] for v in votes} == {"prometheus-vision-13b"}
    assert {v.choice for v in votes} == {"A", "B"}  # shown on both sides
    stored = Judgment.objects.filter(kind=Judgment.Kind.SCORE, assignment__isnull=True)
    assert stored.count() == 32 and {j.source for j in stored} == {"prometheus-vision-13b",
                                                                    "gpt-4v"}


def test_every_rating_types_examples_make_a_stored_batch():
    for slug in ("pairwise_ab", "multiturn_ab", "rubric_score", "feedback_ab"):
        rows = get_hit_type(slug).example_rows
        assert len(rows) == 2
        batch = batch_create_from_rows(hit_type=slug, title=slug, rows=rows)
        assert all(set(t.payload) & {"comparison", "response", "judgment_a"}
                   for t in batch.tasks.all())


def test_rows_naming_no_model_stay_inline():
    rows = [{"instruction": "Q?", "response_a": "x", "response_b": "y"}]
    batch = _batch("pairwise_ab", rows)
    assert batch.tasks.get().payload == {"instruction": "Q?", "image_urls": [],
                                         "response_a": "x", "response_b": "y"}
    assert not Comparison.objects.exists()
