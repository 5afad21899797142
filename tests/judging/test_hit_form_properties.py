"""Property tests of the rating HIT forms (pairwise_ab, multiturn_ab, rubric_score, feedback_ab)
through the real submit service: any answer data is stored as a valid answer — with exactly the
judgments it implies — or refused with ``AnswerInvalid`` writing nothing; gold answers of any
shape never crash a submit; worker feedback is stored raw and shown escaped. Workers (and
scripts posing as them) can send anything: no answer may crash a submit, half-write it, or end
up as markup in a page."""
import pytest
from django.urls import reverse
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from annotation.engine.services.batches import RowError, batch_create_from_rows, batch_set_status
from annotation.engine.services.workers import worker_for_user
from annotation.models import Batch
from judging.models import Comparison, Judgment, Response
from tests.annotation.test_hit_form_properties import HTML, _data, _leased, submit_or_refuse
from tests.annotation.test_import_properties import (
    JSONISH,
    PROPERTY,
    db_counts,
    refused_or_valid,
    scratch,
)
from tests.judging import builders

pytestmark = pytest.mark.django_db


def _task(hit_type: str, row: dict, **options):
    batch = batch_create_from_rows(hit_type=hit_type, title="t", rows=[row],
                                   assignments_per_task=1, **options)
    batch_set_status(batch, Batch.Status.ACTIVE)
    return batch.tasks.get()


def _comparison() -> Comparison:
    inst = builders.instance()
    ms = builders.models("LLaVA", "BLIP")
    return Comparison.objects.create(instance=inst, response_a=builders.respond(inst, ms["LLaVA"]),
                                     response_b=builders.respond(inst, ms["BLIP"]))


def _scored_pair():
    inst = builders.instance()
    builders.rubric(inst)
    response = builders.respond(inst, builders.models("LLaVA")["LLaVA"])
    return [Judgment.objects.create(response=response, kind="score", source=source,
                                    annotator=source, score=3, feedback=feedback,
                                    created_at=timezone.now())
            for source, feedback in (("judge-1", "Fine."), ("judge-2", HTML))]


@pytest.fixture
def pairwise():
    return _leased(_task("pairwise_ab", {"comparison": str(_comparison().uuid)}))


@pytest.fixture
def multiturn():
    ms = builders.models("LLaVA", "BLIP")
    inst = builders.conversation(ms["LLaVA"], ms["BLIP"])
    ra, rb = (Response.objects.get(instance=inst, model=ms[n], turn=1) for n in ("LLaVA", "BLIP"))
    comparison = Comparison.objects.create(instance=inst, response_a=ra, response_b=rb)
    return _leased(_task("multiturn_ab", {"comparison": str(comparison.uuid)}))


@pytest.fixture
def rubric():
    inst = builders.instance()
    builders.rubric(inst)
    response = builders.respond(inst, builders.models("LLaVA")["LLaVA"])
    return _leased(_task("rubric_score", {"response": str(response.uuid)}))


@pytest.fixture
def feedback():
    a, b = _scored_pair()
    return _leased(_task("feedback_ab", {"judgment_a": str(a.uuid), "judgment_b": str(b.uuid)}))


@PROPERTY
@given(_data(["choice"]))
def test_pairwise_answers_are_stored_or_refused(pairwise, data):
    with scratch():
        stored = submit_or_refuse(pairwise, data)
        if stored is not None:
            assert stored.answer == {"choice": stored.answer["choice"]}
            judgment = Judgment.objects.get(assignment=stored)
            assert judgment.choice == stored.answer["choice"] in ("A", "B")


@PROPERTY
@given(_data(["turn1", "turn2", "turn3", "overall"]))
def test_multiturn_answers_are_stored_or_refused(multiturn, data):
    with scratch():
        stored = submit_or_refuse(multiturn, data)
        if stored is not None:
            assert set(stored.answer) == {"turn1", "turn2", "turn3", "overall"}
            votes = dict(Judgment.objects.filter(assignment=stored).values_list("turn",
                                                                                "choice"))
            assert votes == {k.removeprefix("turn"): v for k, v in stored.answer.items()}
            assert set(votes.values()) <= {"A", "B"}


@PROPERTY
@given(_data(["score", "feedback"]))
def test_rubric_answers_are_stored_or_refused(rubric, data):
    with scratch():
        stored = submit_or_refuse(rubric, data)
        if stored is not None:
            judgment = Judgment.objects.get(assignment=stored)
            assert judgment.kind == "score" and judgment.score == stored.answer["score"]
            assert stored.answer["score"] in range(1, 6)
            assert 20 <= len(judgment.feedback) <= 2000
            assert judgment.feedback == stored.answer["feedback"]


@PROPERTY
@given(_data(["choice"]))
def test_feedback_answers_are_stored_or_refused(feedback, data):
    with scratch():
        stored = submit_or_refuse(feedback, data)
        if stored is not None:
            judgment = Judgment.objects.get(assignment=stored)
            assert judgment.kind == "feedback" and judgment.choice in ("A", "B")


ANSWERS = {"pairwise_ab": {"choice": "A"}, "feedback_ab": {"choice": "B"},
           "multiturn_ab": {"turn1": "A", "overall": "B"},
           "rubric_score": {"score": "4", "feedback": "The answer names every bar correctly."}}
INLINE = {
    "pairwise_ab": {"instruction": "Q?", "response_a": "a", "response_b": "b"},
    "feedback_ab": {"instruction": "Q?", "response_text": "r", "feedback_a": "x",
                    "feedback_b": "y"},
    "multiturn_ab": {"turns": [{"instruction": "Q?", "response_a": "a", "response_b": "b"}]},
    "rubric_score": {"instruction": "Q?", "response_text": "r", "criteria": "c",
                     **{f"score{i}": str(i) for i in range(1, 6)}},
}
GOLD = st.one_of(JSONISH, st.fixed_dictionaries({"score": JSONISH}),
                 st.fixed_dictionaries({"score": st.integers(-3, 9),
                                        "tolerance": st.one_of(st.integers(-2, 3), JSONISH)}),
                 st.fixed_dictionaries({"choice": st.sampled_from(["A", "B", "tie", 1])}))


@PROPERTY
@given(st.sampled_from(sorted(ANSWERS)), GOLD)
def test_gold_answers_of_any_shape_never_crash_a_submit(hit_type, gold):
    """A gold row is refused at upload, or every later submit grades it without crashing."""
    with scratch():
        task, _ = refused_or_valid(
            lambda: _task(hit_type, {**INLINE[hit_type], "_gold_answer": gold}), RowError,
            row_pattern=r"\bRow 1\b")
        if task is not None:
            stored = submit_or_refuse(_leased(task), ANSWERS[hit_type])
            assert stored is not None
            assert stored.gold_correct in ((None,) if gold in (None, "") else (True, False))


def test_malformed_gold_is_refused_at_upload():
    """Regression: a rubric gold answer without an integer score, or a verification gold that
    is not an object, was accepted and then crashed every submit (KeyError / ValueError /
    AttributeError inside the submit transaction)."""
    for hit_type, row, gold in (
            ("rubric_score", INLINE["rubric_score"], {"tolerance": 1}),
            ("rubric_score", INLINE["rubric_score"], {"score": "high"}),
            ("rubric_score", INLINE["rubric_score"], {"score": 3, "tolerance": "x"}),
            ("rubric_score", INLINE["rubric_score"], [4])):
        before = db_counts()
        with pytest.raises(RowError, match=r"Row 1: .*gold"):
            _task(hit_type, {**row, "_gold_answer": gold})
        assert db_counts() == before


def test_worker_feedback_is_stored_raw_and_shown_escaped(rubric, alice, alice_client):
    """A worker's rubric feedback with HTML is kept verbatim in its judgment and is escaped on
    the feedback-comparison page another worker sees."""
    text = f"Good answer overall. {HTML}"
    stored = submit_or_refuse(rubric, {"score": "4", "feedback": text})
    mine = Judgment.objects.get(assignment=stored)
    assert mine.feedback == text and stored.answer["feedback"] == text
    other = Judgment.objects.create(response=mine.response, kind="score", source="judge",
                                    annotator="judge", score=2, feedback="Plain.",
                                    created_at=mine.created_at)
    task = _task("feedback_ab", {"judgment_a": str(mine.uuid), "judgment_b": str(other.uuid)})
    assignment = _leased(task, worker_for_user(alice))
    page = alice_client.get(reverse("annotation:assignment",
                                    kwargs={"assignment_uuid": assignment.uuid}))
    body = page.content.decode()
    assert page.status_code == 200
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in body
    assert "<script>alert" not in body and "<b onmouseover" not in body
