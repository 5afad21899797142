"""How judge runs store their verdicts, against the real loopback server: grades as score
judgments (on the score boards), each verdict with its template version and prompt hash, earlier
template or judge versions kept but never counted twice, one shared paid extraction call."""
import hashlib
import importlib

import pytest
from django.apps import apps
from django.urls import reverse
from django.utils import timezone

from judging.judges.models import JudgeCall, JudgeUnit
from judging.judges.services import judge_run_execute, judge_run_start
from judging.judges.templates import PROMPTS_DIR
from judging.leaderboards import leaderboard_build, score_leaderboard_build
from judging.models import Judgment, Response
from judging.selectors import comparison_majorities, pairwise_judgments, score_judgments
from tests.judging.judges.conftest import (
    conversation_responses,
    make_comparison,
    make_conversation_instance,
    make_instance,
    make_judge,
    make_models,
    make_rubric,
)
from tests.support.fake_openai import prompt_text

pytestmark = pytest.mark.django_db

VERDICT = "Step 1: compared.\nOverall, Response {} is better."
STRICT = "Be strict about colours."


def _run(judge, items):
    run = judge_run_start(judge=judge, item_uuids=[i.uuid for i in items], dispatch=False)
    return judge_run_execute(run)


def _override(name: str) -> dict:
    """The shipped template with one sentence added: a new template version of the same judge."""
    text = (PROMPTS_DIR / f"{name}.txt").read_text(encoding="utf-8")
    head, sep, rest = text.partition("=== user ===\n")
    return {name: f"{head}{sep}{STRICT}\n{rest}"}


def _prefers(default: str, strict: str):
    """Prefers the response containing ``default``, or ``strict`` under the new template."""
    def responder(body):
        prompt = prompt_text(body)
        shown_a = prompt.split("Response A: ")[-1].split("Response B: ")[0]
        wanted = strict if STRICT in prompt else default
        return VERDICT.format("A" if wanted in shown_a else "B")
    return responder


# ---------------------------------------------------------------- grades are score judgments


def test_rubric_grades_are_score_judgments_with_their_template_and_prompt(server):
    (model,) = make_models("m1")
    instance = make_instance()
    make_rubric(instance)
    response = Response.objects.create(instance=instance, model=model, text="It is red.")
    server.responder = lambda body: "Feedback: Names the colour. [RESULT] 4"
    judge = make_judge(server, kind="rubric", name="prometheus")
    _run(judge, [response])
    judgment = Judgment.objects.get(response=response)
    call = JudgeCall.objects.get(purpose="judge")
    assert judgment.kind == Judgment.Kind.SCORE and judgment.score == 4.0
    assert judgment.template_version == "rubric_absolute@v1" == call.template_version
    assert judgment.prompt_hash == call.prompt_hash  # one prompt: the call's own hash
    assert score_judgments(judge="prometheus") == [("m1", (response.pk, ""), 4.0)]
    board = score_leaderboard_build("prometheus", bootstrap_rounds=0)
    assert board.scale == [1, 5] and board.rows[0]["model"] == "m1" and board.rows[0]["n"] == 1
    assert leaderboard_build("prometheus", bootstrap_rounds=0).judgments == 0


def test_conversation_grades_split_by_turn_and_overall(server):
    m1, m2 = make_models("m1", "m2")
    firsts = [conversation_responses(make_conversation_instance(), m)[1] for m in (m1, m2)]

    def responder(body):
        prompt = prompt_text(body)
        base = 8 if "m1 generated" in prompt else 4
        if "rate the overall conversation" in prompt:
            return f"ok\nRating: {base - 1}"
        for offset, ordinal in enumerate(("first", "second", "third")):
            if f"rate the {ordinal} turn response" in prompt:
                return f"ok\nRating: {base - offset}"
        return "??"

    server.responder = responder
    _run(make_judge(server, kind="direct", name="convbench"), firsts)
    assert set(Judgment.objects.values_list("kind", flat=True)) == {Judgment.Kind.SCORE}

    def means(split):
        board = score_leaderboard_build("convbench", split, bootstrap_rounds=0)
        return {r["model"]: r["mean"] for r in board.rows}

    assert means("turn:1") == {"m1": 8.0, "m2": 4.0}
    assert means("turn:3") == {"m1": 6.0, "m2": 2.0}
    assert means("overall") == means("all") == {"m1": 7.0, "m2": 3.0}
    assert means("single") == {}
    board = score_leaderboard_build("convbench", "all", bootstrap_rounds=0)
    assert (board.scale, board.observed_min, board.observed_max) == ([0, 10], 3.0, 7.0)


def test_score_judgments_fixed_by_the_data_migration():
    """Rows written before the fix (kind left at 'pairwise') become score judgments."""
    migration = importlib.import_module("judging.migrations.0005_score_judgments_kind")
    (model,) = make_models("m1")
    response = Response.objects.create(instance=make_instance(), model=model, text="Red.")
    now = timezone.now()
    old_grade = Judgment.objects.create(response=response, source="j", annotator="j@1",
                                        score=7.0, created_at=now)
    failed = Judgment.objects.create(response=response, source="j", annotator="j@1",
                                     turn="overall", score=None, created_at=now)
    feedback = Judgment.objects.create(response=response, source="human", annotator="w",
                                       kind=Judgment.Kind.FEEDBACK, choice="A", created_at=now)
    migration.grades_are_scores(apps, None)
    for row in (old_grade, failed, feedback):
        row.refresh_from_db()
    assert (old_grade.kind, failed.kind) == (Judgment.Kind.SCORE, Judgment.Kind.SCORE)
    assert feedback.kind == Judgment.Kind.FEEDBACK
    assert score_judgments(judge="j") == [("m1", (response.pk, ""), 7.0)]


# ---------------------------------------------------------------- provenance and versions


def test_pairwise_verdict_records_both_orderings_prompts(server):
    m1, m2 = make_models("m1", "m2")
    comparison = make_comparison(m1, m2)
    server.responder = _prefers("m1 answer", "m2 answer")
    _run(make_judge(server), [comparison])
    judgment = Judgment.objects.get(comparison=comparison)
    calls = {c.ordering: c.prompt_hash for c in JudgeCall.objects.filter(purpose="judge")}
    assert judgment.template_version == "pairwise_reference_free@v1"
    both = hashlib.sha256(f"{calls['AB']}\n{calls['BA']}".encode()).hexdigest()
    assert judgment.prompt_hash == both
    assert judgment.meta["prompt_hashes"] == {"AB": [calls["AB"]], "BA": [calls["BA"]]}
    units = JudgeUnit.objects.filter(run__judge__name=judgment.source)
    assert {u.ordering: u.prompts[""][1] for u in units} == {"AB": [calls["AB"]],
                                                             "BA": [calls["BA"]]}


def test_new_template_version_keeps_earlier_verdicts_and_boards_count_the_latest(server):
    m1, m2 = make_models("m1", "m2")
    comparisons = [make_comparison(m1, m2) for _ in range(3)]
    server.responder = _prefers("m1 answer", "m2 answer")
    judge = make_judge(server, name="tv-judge")
    _run(judge, comparisons)
    assert leaderboard_build("tv-judge", bootstrap_rounds=0).rows[0]["model"] == "m1"
    judge.template_overrides = _override("pairwise_reference_free")
    judge.save()
    _run(judge, comparisons)

    stored = Judgment.objects.filter(source="tv-judge")
    assert stored.count() == 6  # both template versions kept
    versions = sorted(set(stored.values_list("template_version", flat=True)))
    assert versions[0].startswith("pairwise_reference_free@override-")
    assert versions[1] == "pairwise_reference_free@v1"
    board = leaderboard_build("tv-judge", bootstrap_rounds=0)
    assert board.judgments == 3 and board.rows[0]["model"] == "m2"  # only the latest count
    assert len(pairwise_judgments(judge="tv-judge")) == 3
    assert board.rows[0]["matches"] == 3
    assert {(m["winner_model"], m["n"]) for m in comparison_majorities(judge="tv-judge")} == {
        ("m2", 1)}

    calls = server.call_count
    _run(judge, comparisons)  # same judge, same template version: replaced, not added
    assert server.call_count == calls and stored.count() == 6
    assert leaderboard_build("tv-judge", bootstrap_rounds=0).judgments == 3


def test_new_judge_version_supersedes_the_old_on_the_boards(server):
    m1, m2 = make_models("m1", "m2")
    comparisons = [make_comparison(m1, m2) for _ in range(2)]

    def responder(body):  # the new version runs another model with the same template
        marker = "m2 answer" if body["model"] == "stand-in-2" else "m1 answer"
        return _prefers(marker, marker)(body)

    server.responder = responder
    _run(make_judge(server, name="ver-judge"), comparisons)
    _run(make_judge(server, name="ver-judge", version="2", model_name="stand-in-2"), comparisons)
    assert Judgment.objects.filter(source="ver-judge").count() == 4
    board = leaderboard_build("ver-judge", bootstrap_rounds=0)
    assert board.judgments == 2 and board.rows[0]["model"] == "m2"


def test_grader_under_a_new_template_version_counts_once(server):
    (model,) = make_models("m1")
    responses = [Response.objects.create(instance=make_instance(), model=model, text="Red.")
                 for _ in range(2)]

    def responder(body):
        return "Fine.\nRating: 3" if STRICT in prompt_text(body) else "Fine.\nRating: 9"

    server.responder = responder
    judge = make_judge(server, kind="direct", name="grader")
    _run(judge, responses)
    judge.template_overrides = _override("direct_grade")
    judge.save()
    _run(judge, responses)
    assert Judgment.objects.filter(source="grader").count() == 4
    board = score_leaderboard_build("grader", bootstrap_rounds=0)
    assert (board.judgments, board.rows[0]["mean"], board.rows[0]["n"]) == (2, 3.0, 2)


# ---------------------------------------------------------------- shared extraction call


def test_identical_unparseable_outputs_share_one_paid_extraction(server):
    m1, m2 = make_models("m1", "m2")
    comparisons = [make_comparison(m1, m2) for _ in range(3)]

    def responder(body):
        if "FinalAnswerExtractionGPT" in prompt_text(body):
            return "Final Answer: A"
        return "Both responses have their merits; it is hard to choose."

    server.responder = responder
    run = _run(make_judge(server), comparisons)
    assert (run.status, run.units_done, run.units_failed) == ("done", 6, 0)
    assert server.call_count == run.calls_made == 7  # six judge calls, one extraction
    judge_calls = JudgeCall.objects.filter(purpose="judge")
    assert {(c.parse_path, c.verdict) for c in judge_calls} == {("extraction", "A")}
    extraction = JudgeCall.objects.get(purpose="extraction")
    assert {c.extraction_id for c in judge_calls} == {extraction.pk}
    assert extraction.extracted_for.count() == 6
    # 'A' in both orderings names each response once: a tie on every comparison
    assert list(Judgment.objects.values_list("choice", flat=True)) == ["tie"] * 3


def test_identical_unparseable_grades_all_get_the_extracted_score(server):
    (model,) = make_models("m1")
    responses = []
    for _ in range(3):
        instance = make_instance()
        make_rubric(instance)
        responses.append(Response.objects.create(instance=instance, model=model, text="Red."))

    def responder(body):
        if "Final Rating" in prompt_text(body) and "[RESULT]" not in prompt_text(body):
            return "Final Rating: 4"
        return "Feedback: decent, I would say four out of five."

    server.responder = responder
    run = _run(make_judge(server, kind="rubric"), responses)
    assert (run.units_done, run.units_failed, server.call_count) == (3, 0, 4)
    assert sorted(Judgment.objects.values_list("kind", "score")) == [("score", 4.0)] * 3


def test_grading_judges_appear_on_the_leaderboard_pages(server, analyst_client):
    m1, m2 = make_models("m1", "m2")
    responses = [Response.objects.create(instance=make_instance(), model=m, text=f"{m} says red")
                 for m in (m1, m2, m2)]
    server.responder = lambda body: ("Good.\nRating: 9" if "m1 says" in prompt_text(body)
                                     else "Weak.\nRating: 2")
    _run(make_judge(server, kind="direct", name="convbench-grader"), responses)
    html = analyst_client.get(reverse("judging:judges:leaderboards")).content.decode()
    assert "convbench-grader" in html and "scale 0–10" in html
    assert html.index("9.00") < html.index("2.00")  # m1 first
    page = analyst_client.get(reverse("judging:leaderboard") + "?judge=convbench-grader")
    html = page.content.decode()
    assert '<option value="convbench-grader" selected>' in html
    assert 'id="score-leaderboard"' in html and "scale 0–10" in html
    assert 'id="leaderboard"' not in html  # no pairwise verdicts: no empty ratings table
