"""Rating HITs through the real engine: each stored vote becomes judgments tied to its
assignment, the winning model survives side randomization, gold never becomes a judgment."""
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.engine.services.batches import RowError, batch_create_from_rows, batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.errors import AnswerInvalid, NotEligible
from annotation.engine.services.submissions import assignment_submit
from annotation.models import Batch
from judging.models import Comparison, Judgment
from judging.selectors import pairwise_judgments
from judging.services.comparisons import comparison_batch_create, gold_comparison_create
from tests.factories import make_workers
from tests.judging import builders

pytestmark = pytest.mark.django_db


def _active(hit_type, rows, n=1, **options):
    options.setdefault("min_seconds", 0)  # votes here are submitted at once
    batch = batch_create_from_rows(hit_type=hit_type, title="t", rows=rows,
                                   assignments_per_task=n, **options)
    return batch_set_status(batch, Batch.Status.ACTIVE)


def _do(batch, worker, data):
    assignment = task_claim_next(batch=batch, worker=worker)
    assignment_submit(assignment=assignment, data=data,
                      now=assignment.claimed_at + timedelta(seconds=30))
    return assignment


def _comparison(a_name="LLaVA", b_name="BLIP", swapped=False):
    inst = builders.instance()
    ms = builders.models(a_name, b_name)
    ra, rb = builders.respond(inst, ms[a_name]), builders.respond(inst, ms[b_name])
    first, second = (rb, ra) if swapped else (ra, rb)
    return Comparison.objects.create(instance=inst, response_a=first, response_b=second,
                                     swapped=swapped)


def test_pairwise_vote_maps_to_the_winning_model_whatever_the_sides():
    straight, swapped = _comparison(), _comparison(swapped=True)
    batch = _active("pairwise_ab", [{"comparison": str(straight.uuid)},
                                    {"comparison": str(swapped.uuid)}])
    worker, = make_workers(1)
    _do(batch, worker, {"choice": "A"})  # LLaVA shown as A
    _do(batch, worker, {"choice": "B"})  # LLaVA shown as B
    rows = pairwise_judgments()
    winners = [a if o == "A" else b for a, b, o, _ in rows]
    assert winners == ["LLaVA", "LLaVA"]
    judgment = Judgment.objects.get(comparison=swapped)
    assert judgment.assignment.worker == worker and judgment.annotator == str(worker)


def test_repeat_submit_and_second_judgment_for_an_assignment_are_refused():
    comparison = _comparison()
    batch = _active("pairwise_ab", [{"comparison": str(comparison.uuid)}])
    worker, = make_workers(1)
    assignment = _do(batch, worker, {"choice": "A"})
    outcome = assignment_submit(assignment=assignment, data={"choice": "B"})
    assert outcome.duplicate and Judgment.objects.count() == 1
    with pytest.raises(IntegrityError), transaction.atomic():
        Judgment.objects.create(comparison=comparison, assignment=assignment, annotator="x",
                                choice="B", created_at=timezone.now())


def test_inline_pairwise_payload_still_works_without_judgments():
    batch = _active("pairwise_ab", [{"instruction": "Q?", "response_a": "x", "response_b": "y",
                                     "image_urls": ["https://example.org/a.png"]}])
    worker, = make_workers(1)
    assert _do(batch, worker, {"choice": "B"}).task.payload["response_b"] == "y"
    assert not Judgment.objects.exists()


def test_gold_checks_grade_block_and_never_count():
    inst = builders.instance()
    ms = builders.models("good", "bad")
    good, bad = builders.respond(inst, ms["good"]), builders.respond(inst, ms["bad"])
    golds = [gold_comparison_create(better=good, worse=bad, seed=s) for s in range(6)]
    assert {g.gold_choice for g in golds} == {"A", "B"}  # sides randomized for gold too
    real = [_comparison() for _ in range(2)]
    batch = comparison_batch_create(comparisons=real, title="g", judgments_per_comparison=1,
                                    gold=golds, gold_rate=0.75, auto_block_below=0.5)
    batch_set_status(batch, Batch.Status.ACTIVE)
    assert batch.tasks.filter(is_gold=True).count() == 6
    spammer, = make_workers(1)
    for _ in range(8):
        try:
            a = task_claim_next(batch=batch, worker=spammer)
        except NotEligible:
            break
        if a is None:
            break
        gold = a.task.gold_answer
        wrong = {"A": "B", "B": "A"}[gold["choice"]] if gold else "A"
        assignment_submit(assignment=a, data={"choice": wrong},
                          now=a.claimed_at + timedelta(seconds=9))
    spammer.refresh_from_db()
    assert spammer.blocked and "Gold accuracy 0/" in spammer.blocked_reason
    assert not Judgment.objects.filter(comparison__in=golds).exists()
    counted = Judgment.objects.filter(worker=spammer).count()
    assert counted >= 1
    assert len(pairwise_judgments(exclude_blocked=True)) == 0
    assert len(pairwise_judgments()) == counted


def test_gold_rate_needs_enough_gold():
    with pytest.raises(ValueError, match="gold_rate needs"):
        comparison_batch_create(comparisons=[_comparison()], title="x", gold=[], gold_rate=0.2)


def test_multi_turn_records_each_turn_and_overall():
    ms = builders.models("Alpha", "Beta")
    inst = builders.conversation(ms["Alpha"], ms["Beta"])
    anchor = {r.model.name: r for r in inst.responses.filter(turn=1)}
    comparison = Comparison.objects.create(instance=inst, response_a=anchor["Beta"],
                                           response_b=anchor["Alpha"], swapped=True)
    batch = comparison_batch_create(comparisons=[comparison], title="conv", min_seconds=0,
                                    judgments_per_comparison=1)
    batch_set_status(batch, Batch.Status.ACTIVE)
    assert batch.hit_type == "multiturn_ab"
    worker, = make_workers(1)
    assignment = task_claim_next(batch=batch, worker=worker)
    with pytest.raises(AnswerInvalid, match="turn 3"):
        assignment_submit(assignment=assignment, data={"turn1": "A", "turn2": "B",
                                                       "overall": "A"})
    assert not Judgment.objects.exists()
    assignment_submit(assignment=assignment, data={"turn1": "A", "turn2": "B", "turn3": "B",
                                                   "overall": "A"})
    got = dict(Judgment.objects.filter(assignment=assignment).values_list("turn", "choice"))
    assert got == {"1": "A", "2": "B", "3": "B", "overall": "A"}
    rows = pairwise_judgments(split="turn:2")
    assert [(a, b, o) for a, b, o, _ in rows] == [("Beta", "Alpha", "B")]  # Alpha won turn 2
    assert [r[2] for r in pairwise_judgments(split="overall")] == ["A"]


def test_multi_turn_payload_must_be_a_conversation():
    comparison = _comparison()
    with pytest.raises(RowError, match="not a conversation"):
        batch_create_from_rows(hit_type="multiturn_ab", title="x",
                               rows=[{"comparison": str(comparison.uuid)}])


def test_rubric_score_and_feedback_preference():
    inst = builders.instance()
    rubric = builders.rubric(inst)
    ms = builders.models("LLaVA")
    response = builders.respond(inst, ms["LLaVA"])
    batch = _active("rubric_score", [{"response": str(response.uuid), "rubric": str(rubric.uuid)}],
                    n=2, reward=Decimal("0.1"))
    w1, w2 = make_workers(2)
    with pytest.raises(AnswerInvalid, match="feedback"):
        a = task_claim_next(batch=batch, worker=w1)
        assignment_submit(assignment=a, data={"score": "4", "feedback": "short"})
    _do(batch, w1, {"score": "4", "feedback": "Reads the chart right but misses the units."})
    _do(batch, w2, {"score": "2", "feedback": "Gets the tallest bar wrong; vague overall."})
    scored = list(Judgment.objects.filter(kind="score").order_by("score"))
    assert [j.score for j in scored] == [2.0, 4.0] and scored[0].response == response
    feedback = _active("feedback_ab", [{"judgment_a": str(scored[1].uuid),
                                        "judgment_b": str(scored[0].uuid)}])
    _do(feedback, w1, {"choice": "B"})
    pref = Judgment.objects.get(kind="feedback")
    assert pref.choice == "B" and pref.meta["judgment_b"] == str(scored[0].uuid)
    assert pref.response == response
    assert len(pairwise_judgments()) == 0  # neither scores nor feedback votes enter ratings


def test_rubric_gold_uses_tolerance():
    from annotation.engine.hit_types import get_hit_type

    hit = get_hit_type("rubric_score")
    assert hit.is_correct({"score": 4}, {"score": 5, "tolerance": 1})
    assert not hit.is_correct({"score": 3}, {"score": 5, "tolerance": 1})
