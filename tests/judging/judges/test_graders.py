"""Multi-turn (per turn + overall), Prometheus rubric 1–5 and ConvBench 0–10 grading end to end,
including the parsing edge cases (out of range, two scores, none) through the real server."""
import pytest

from judging.judges.models import JudgeCall
from judging.judges.services import judge_run_execute, judge_run_start
from judging.models import Comparison, Judgment, Response
from tests.judging.judges.conftest import (
    conversation_responses,
    make_conversation_instance,
    make_instance,
    make_judge,
    make_models,
    make_rubric,
    reference_model,
)
from tests.support.fake_openai import Reply, prompt_text

pytestmark = pytest.mark.django_db


def _run(judge, items):
    run = judge_run_start(judge=judge, item_uuids=[i.uuid for i in items], dispatch=False)
    return judge_run_execute(run)


def test_multi_turn_judges_each_turn_then_overall_with_the_turn_judgments(server):
    (model,) = make_models("m1")
    instance = make_conversation_instance(focus=("Is the poem romantic?",))
    mine = conversation_responses(instance, model)
    ref = conversation_responses(instance, reference_model())
    comparison = Comparison.objects.create(instance=instance, response_a=mine[1],
                                           response_b=ref[1])

    def responder(body):
        prompt = prompt_text(body)
        if "overall conversation" in prompt and "turn evaluation" in prompt:
            return "Weighing the turns.\nOverall, Response B is better."
        for ordinal in ("first", "second", "third"):
            if f"compare the {ordinal} turn responses" in prompt:
                return f"JUDGMENT-{ordinal}: fine.\nOverall, Response A is better."
        return "??"

    server.responder = responder
    run = _run(make_judge(server, kind="multi_turn"), [comparison])
    assert run.status == "done" and server.call_count == 8  # (3 turns + overall) × 2 orderings
    prompts = [prompt_text(r.body) for r in server.requests]
    assert "Is the poem romantic?" in prompts[2] and "Is the poem romantic?" not in prompts[0]
    assert "m1 generated turn 2" in prompts[1] and "Reference turn 2" in prompts[1]
    overall = prompts[3]
    for ordinal in ("first", "second", "third"):
        assert f"The {ordinal} turn evaluation: JUDGMENT-{ordinal}" in overall
    got = dict(Judgment.objects.filter(comparison=comparison).values_list("turn", "choice"))
    assert got == {"1": "tie", "2": "tie", "3": "tie", "overall": "tie"}  # position bias
    assert set(JudgeCall.objects.values_list("turn", flat=True)) == {"1", "2", "3", "overall"}


def test_multi_turn_under_perfect_perception_skips_the_substituted_turn(server):
    (model,) = make_models("m1")
    instance = make_conversation_instance()
    mine = conversation_responses(instance, model, condition="perfect_perception")
    ref = conversation_responses(instance, reference_model())
    comparison = Comparison.objects.create(instance=instance, response_a=mine[1],
                                           response_b=ref[1])
    server.responder = lambda body: "Overall, Response A is better."
    _run(make_judge(server, kind="multi_turn"), [comparison])
    assert server.call_count == 6  # turns 2, 3 and overall, both orderings
    assert sorted(Judgment.objects.values_list("turn", flat=True)) == ["2", "3", "overall"]


@pytest.mark.parametrize("replies, score, path", [
    (["Feedback: Names the colour. [RESULT] 4"], 4.0, "strict"),
    (["Feedback: ok [RESULT] (5)"], 5.0, "strict"),
    (["Feedback: great [RESULT] 7", "Final Rating: 3"], 3.0, "extraction"),  # out of range
    (["Feedback: [RESULT] 2 ... on reflection [RESULT] 4", "Final Rating: Unknown"],
     None, "failed"),  # two scores, extraction gives up
    (["Feedback: decent, I'd say four.", "Final Rating: 4"], 4.0, "extraction"),  # none
    (["Feedback: meh [RESULT] 3.5", "Final Rating: 3.5"], None, "failed"),  # not an integer
])
def test_rubric_grading_and_its_edge_cases(server, replies, score, path):
    (model,) = make_models("m1")
    instance = make_instance()
    make_rubric(instance)
    response = Response.objects.create(instance=instance, model=model, text="It is red.")
    server.enqueue(*replies)
    judge = make_judge(server, kind="rubric", send_images=False)
    _run(judge, [response])
    assert server.call_count == len(replies)
    prompt = prompt_text(server.requests[0].body)
    assert "###Score Rubrics:" in prompt and "Score 5: Right and precise." in prompt
    assert "###Reference Answer (Score 5):\nIt is a red square." in prompt
    call = JudgeCall.objects.get(purpose="judge")
    assert (call.score, call.parse_path) == (score, path)
    judgment = Judgment.objects.get(response=response)
    assert judgment.score == score and judgment.source == judge.name
    if score == 4.0 and path == "strict":
        assert judgment.feedback == "Names the colour."



@pytest.mark.parametrize("replies, score, path", [
    (["The answer matches.\nRating: 7"], 7.0, "strict"),
    (["Close.\nRating:{9}"], 9.0, "strict"),
    (["Perfect. Rating: 0"], 0.0, "strict"),
    (["Too good.\nRating: 11", "Final Rating: 10"], 10.0, "extraction"),  # out of range
    (["Rating: 7 ... no, Rating: 8", "Final Rating: Unknown"], None, "failed"),  # two scores
    (["I would give it six.", "Final Rating: 6"], 6.0, "extraction"),  # none
])
def test_direct_grading_0_to_10_and_its_edge_cases(server, replies, score, path):
    (model,) = make_models("m1")
    response = Response.objects.create(instance=make_instance(), model=model, text="Red.")
    server.enqueue(*replies)
    _run(make_judge(server, kind="direct"), [response])
    assert server.call_count == len(replies)
    call = JudgeCall.objects.get(purpose="judge")
    assert (call.score, call.parse_path) == (score, path)
    assert Judgment.objects.get(response=response).score == score


def test_direct_grading_of_a_conversation_per_turn_and_overall(server):
    (model,) = make_models("m1")
    instance = make_conversation_instance()
    turns = conversation_responses(instance, model)

    def responder(body):
        prompt = prompt_text(body)
        if "rate the overall conversation" in prompt:
            assert "The third turn evaluation:" in prompt
            return "Consistent.\nRating: 6"
        for score, ordinal in ((8, "first"), (5, "second"), (3, "third")):
            if f"rate the {ordinal} turn response" in prompt:
                return f"ok\nRating: {score}"
        return Reply.error(400)

    server.responder = responder
    judge = make_judge(server, kind="direct", k=2, temperature=0.5)
    _run(judge, [turns[1]])
    assert server.call_count == 8  # (3 turns + overall) × k=2
    got = {(j.turn, j.response.turn): j.score for j in Judgment.objects.all()}
    assert got == {("1", 1): 8.0, ("2", 2): 5.0, ("3", 3): 3.0, ("overall", 1): 6.0}
