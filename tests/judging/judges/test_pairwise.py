"""Pairwise judges end to end against a real loopback OpenAI server: both orderings and their
combination, extraction fallback, ties, refusals, retries, self-consistency, VLM image parts."""
import pytest

from judging.judges.models import JudgeCall, JudgeRun
from judging.judges.services import judge_run_execute, judge_run_start
from judging.models import Judgment
from tests.judging.judges.conftest import make_comparison, make_judge, make_models
from tests.support.fake_openai import Reply, prompt_text

pytestmark = pytest.mark.django_db

VERDICT = "Step 1: compared.\nOverall, Response {} is better."


def _run(judge, comparisons, **kw):
    run = judge_run_start(judge=judge, item_uuids=[c.uuid for c in comparisons],
                          dispatch=False, **kw)
    return judge_run_execute(run)


def _prefers(text_marker):
    """A judge that always prefers the response containing ``text_marker``."""
    def responder(body):
        prompt = prompt_text(body)
        a = prompt.split("Response A: ")[-1].split("Response B: ")[0]
        return VERDICT.format("A" if text_marker in a else "B")
    return responder


def test_both_orderings_are_sent_and_combined(server):
    good, weak = make_models("good", "weak")
    comparison = make_comparison(weak, good)
    server.responder = _prefers("good answer")
    run = _run(make_judge(server), [comparison])
    assert run.status == JudgeRun.Status.DONE and server.call_count == 2
    shown_a = [prompt_text(r.body).split("Response A: ")[-1].split("\n")[0]
               for r in server.requests]
    assert shown_a[0].startswith("weak answer") and shown_a[1].startswith("good answer")
    calls = JudgeCall.objects.order_by("pk")
    assert [(c.ordering, c.verdict, c.parse_path) for c in calls] == [
        ("AB", "B", "strict"), ("BA", "A", "strict")]
    judgment = Judgment.objects.get(comparison=comparison)
    assert judgment.choice == "B"  # the comparison's response_b (good) won both orderings
    assert (judgment.source, judgment.turn) == (run.judge.name, "")
    assert judgment.annotator == f"{run.judge.name}@1"


def test_position_bias_becomes_a_tie(server):
    m1, m2 = make_models("m1", "m2")
    comparison = make_comparison(m1, m2)
    server.responder = lambda body: VERDICT.format("A")
    _run(make_judge(server), [comparison])
    assert Judgment.objects.get(comparison=comparison).choice == "tie"


def test_out_of_format_answer_goes_through_extraction(server):
    m1, m2 = make_models("m1", "m2")
    comparison = make_comparison(m1, m2)
    server.enqueue(
        Reply.ok("Both are weak, but I would say Response B is slightly better overall."),
        Reply.ok("Final Answer: B"),
        Reply.ok(VERDICT.format("A")),
    )
    judge = make_judge(server)
    _run(judge, [comparison])
    assert server.call_count == 3
    extraction_prompt = prompt_text(server.requests[1].body)
    assert "FinalAnswerExtractionGPT" in extraction_prompt
    assert "Response B is slightly better overall" in extraction_prompt
    assert "Final Answer: Unknown" in extraction_prompt  # the two worked examples are sent
    main = JudgeCall.objects.get(ordering="AB", purpose="judge")
    assert (main.parse_path, main.verdict) == ("extraction", "B")
    assert main.raw_output.startswith("Both are weak")
    assert main.extraction.raw_output == "Final Answer: B"
    assert main.extraction.template_version == "extract_verdict@v1"
    assert main.template_version == "pairwise_reference_free@v1" and len(main.prompt_hash) == 64
    # AB says B (= response_b), BA says A (= response_b): response_b wins
    assert Judgment.objects.get(comparison=comparison).choice == "B"


def test_unknown_extraction_and_refusal_are_ties(server):
    m1, m2 = make_models("m1", "m2")
    comparison = make_comparison(m1, m2)
    server.enqueue(
        Reply.ok("Neither response is acceptable, I cannot choose."),
        Reply.ok("Final Answer: Unknown"),
        Reply.refusal_reply("refusal"),
    )
    _run(make_judge(server), [comparison])
    assert server.call_count == 3  # no extraction call for an empty refusal
    ab, ba = (JudgeCall.objects.get(ordering=o, purpose="judge") for o in ("AB", "BA"))
    assert (ab.parse_path, ab.verdict) == ("failed", "unknown")
    assert (ba.parse_path, ba.verdict, ba.refused) == ("failed", "unknown", True)
    assert ba.raw_output == "I can't help with that."
    assert Judgment.objects.get(comparison=comparison).choice == "tie"


def test_429_and_500_are_retried_with_backoff(server):
    m1, m2 = make_models("m1", "m2")
    comparison = make_comparison(m1, m2)
    server.enqueue(Reply.error(429, retry_after=0), Reply.error(500), Reply.error(503),
                   VERDICT.format("A"), VERDICT.format("B"))
    run = _run(make_judge(server), [comparison])
    assert run.status == JudgeRun.Status.DONE and run.units_done == 2
    assert server.call_count == 5
    assert JudgeCall.objects.get(ordering="AB").attempts == 4
    assert run.calls_made == 2 and run.calls_failed == 0
    assert Judgment.objects.get(comparison=comparison).choice == "A"


def test_exhausted_retries_fail_the_unit_and_resume_finishes_it(server):
    from judging.judges.services import judge_run_resume

    m1, m2 = make_models("m1", "m2")
    comparison = make_comparison(m1, m2)
    judge = make_judge(server, max_retries=1)
    server.enqueue(Reply.error(500), Reply.error(502))
    run = _run(judge, [comparison])
    assert (run.status, run.units_failed, run.units_done) == (JudgeRun.Status.DONE, 1, 1)
    assert not Judgment.objects.exists()  # one ordering is missing: no verdict yet
    failed = JudgeCall.objects.get(status="failed")
    assert "502" in failed.error and failed.attempts == 2
    before = server.call_count
    server.responder = lambda body: VERDICT.format("A")
    run = judge_run_execute(judge_run_resume(run, dispatch=False))
    assert (run.status, run.units_failed, run.units_done) == (JudgeRun.Status.DONE, 0, 2)
    assert server.call_count == before + 1  # only the failed call is made again
    assert Judgment.objects.get(comparison=comparison).choice in ("A", "B", "tie")


def test_self_consistency_samples_k_times_with_distinct_seeds(server):
    m1, m2 = make_models("m1", "m2")
    comparison = make_comparison(m1, m2)
    # AB samples: A, A, B -> A ; BA samples: B, B, B -> B ; both mean response_a.
    server.enqueue(*(VERDICT.format(v) for v in "AABBBB"))
    judge = make_judge(server, k=3, temperature=0.7, seed=100)
    _run(judge, [comparison])
    assert server.call_count == 6
    assert [r.body["seed"] for r in server.requests] == [100, 101, 102, 100, 101, 102]
    assert {c.sample_index for c in JudgeCall.objects.all()} == {0, 1, 2}
    assert Judgment.objects.get(comparison=comparison).choice == "A"


def test_vlm_judge_sends_the_images_as_image_parts(server):
    m1, m2 = make_models("m1", "m2")
    comparison = make_comparison(m1, m2, with_file=True, caption="SECRET CAPTION")
    server.responder = lambda body: VERDICT.format("A")
    _run(make_judge(server, kind="pairwise_vlm"), [comparison])
    assert server.call_count == 2
    for request in server.requests:
        urls = request.image_urls()
        assert len(urls) == 1 and urls[0].startswith("data:image/png;base64,")
        assert "SECRET CAPTION" not in prompt_text(request.body)
        assert request.body["messages"][-1]["content"][-1]["type"] == "text"


def test_reference_backed_judge_shows_the_reference(server):
    m1, m2 = make_models("m1", "m2")
    comparison = make_comparison(m1, m2, reference="THE HUMAN REFERENCE")
    server.responder = lambda body: VERDICT.format("B")
    _run(make_judge(server, kind="pairwise_reference"), [comparison])
    prompt = prompt_text(server.requests[0].body)
    assert "High quality reference: THE HUMAN REFERENCE" in prompt
    assert "A red square on white." in prompt  # captions are the image context


def test_template_override_changes_prompt_and_version(server):
    m1, m2 = make_models("m1", "m2")
    comparison = make_comparison(m1, m2)
    override = ("version: 9\n=== user ===\nCUSTOM {{ instruction }}\nResponse A: {{ response_a }}"
                "\nResponse B: {{ response_b }}\nEnd with 'Overall, Response X is better.'")
    judge = make_judge(server, template_overrides={"pairwise_reference_free": override})
    server.responder = lambda body: VERDICT.format("A")
    _run(judge, [comparison])
    assert prompt_text(server.requests[0].body).startswith("CUSTOM What colour")
    version = JudgeCall.objects.first().template_version
    assert version.startswith("pairwise_reference_free@override-")


def test_api_key_comes_from_the_named_env_var(server, monkeypatch):
    m1, m2 = make_models("m1", "m2")
    comparison = make_comparison(m1, m2)
    monkeypatch.setenv("JUDGE_TEST_API_KEY", "sk-test-123")
    server.responder = lambda body: VERDICT.format("A")
    _run(make_judge(server, api_key_env="JUDGE_TEST_API_KEY"), [comparison])
    assert server.requests[0].headers["authorization"] == "Bearer sk-test-123"
    assert server.requests[0].headers["idempotency-key"] == JudgeCall.objects.get(
        ordering="AB").idempotency_key


def test_missing_api_key_env_fails_units_without_calling(server):
    m1, m2 = make_models("m1", "m2")
    comparison = make_comparison(m1, m2)
    run = _run(make_judge(server, api_key_env="JUDGE_TEST_MISSING_API_KEY"), [comparison])
    assert run.units_failed == 2 and server.call_count == 0
    assert "JUDGE_TEST_MISSING_API_KEY" in run.units.first().error


def test_other_process_secrets_are_never_sent_as_an_api_key(server, monkeypatch):
    """A judge may only name a *_API_KEY variable: SECRET_KEY & co. never leave the process."""
    from django.core.exceptions import ValidationError

    from judging.judges.models import validate_api_key_env

    m1, m2 = make_models("m1", "m2")
    comparison = make_comparison(m1, m2)
    monkeypatch.setenv("SECRET_KEY", "django-secret")
    run = _run(make_judge(server, api_key_env="SECRET_KEY"), [comparison])
    assert run.units_failed == 2 and server.call_count == 0
    with pytest.raises(ValidationError):
        validate_api_key_env("AWS_SECRET_ACCESS_KEY")
    validate_api_key_env("OPENAI_API_KEY")
