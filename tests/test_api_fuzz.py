"""Fuzz the whole REST API against its own OpenAPI schema: no input may cause a server error.

Schemathesis generates valid (positive) and invalid (negative) requests for every operation
of the schema served at /api/schema/, and sends them in process to the real WSGI app
(tests/support/api_fuzz.py) as an admin (the most reachable code) and as an annotator (who
must be refused everywhere but their own endpoints). Operations with path parameters are
fuzzed twice: with generated values (404s) and with seeded objects, so bodies and queries
reach the real services. Generation is derandomized: the same requests every run.

The plain tests at the end pin each server error the fuzzer found, one request each.
"""
import json
from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from tests.support.api_fuzz import (
    annotator_may,
    fuzz_schema,
    in_process_app,
    load_schema,
    loopback_only,
)

pytestmark = pytest.mark.django_db

EXAMPLES = 25  # per operation, generation mode and path variant
REFUSED_EXAMPLES = 5  # per operation an annotator must be refused
OPERATIONS = 69  # in the schema today; a new endpoint raises it (update the number)
# A multipart upload of a predictions file matching the benchmark: the fuzzer's files never do
# (tests/judging/submissions takes that path); refusals (400) are still fuzzed.
NO_2XX_EXPECTED = {"POST /api/eval/submissions/", "POST /api/studies/{study_slug}/submissions/",
                   "GET /api/studies/{study_slug}/judge-powered/"}
# judge-powered: a 2xx needs ?judge= naming a judge with verdicts in the study, which generated
# strings never do (its 200s are tested in tests/judging/test_powered_boards.py).


@pytest.fixture
def fuzz_world(admin, alice, settings):
    """Real objects behind every path parameter, and an API token per role."""
    from rest_framework.authtoken.models import Token

    from agreement.models import MetricRun, Report, ReportFile
    from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
    from annotation.engine.services.claims import task_claim_next
    from annotation.engine.services.submissions import assignment_submit
    from annotation.engine.services.workers import worker_for_user
    from annotation.models import Batch
    from judging.judges.models import Judge
    from judging.judges.services import judge_run_start
    from judging.models import Comparison
    from tests.factories import make_batch, make_workers
    from tests.judging import builders

    # No credentials for anything outside (loopback_only also refuses any outbound socket).
    # Queued work (judge run dispatch, report build) goes through on_commit, which never
    # fires inside the test transaction.
    settings.LLM_BASE_URL = settings.LLM_API_KEY = None

    ms = builders.models("llava", "blip", reference="reference")
    comparisons = []
    for a, b in ((ms["reference"], ms["llava"]), (ms["llava"], ms["blip"])):
        inst = builders.instance(category="Chart reading")
        comparisons.append(Comparison.objects.create(
            instance=inst, response_a=builders.respond(inst, a),
            response_b=builders.respond(inst, b)))
    votes = batch_create_from_rows(hit_type="pairwise_ab", title="crowd votes",
                                   rows=[{"comparison": str(c.uuid)} for c in comparisons],
                                   assignments_per_task=3, min_seconds=0)
    batch_set_status(votes, Batch.Status.ACTIVE)
    for k, worker in enumerate(make_workers(3)):
        while (a := task_claim_next(batch=votes, worker=worker)) is not None:
            assignment_submit(assignment=a, data={"choice": "AB"[(k + a.task.position) % 2]},
                              now=a.claimed_at + timedelta(seconds=5))

    batch = make_batch(3, n=2)
    make_batch(2, n=1, activate=False)  # a draft too
    assignment = task_claim_next(batch=batch, worker=worker_for_user(alice))
    now = timezone.now()
    report = Report.objects.create(title="done", created_at=now, status=Report.Status.DONE,
                                   data={"tables": {}})
    ReportFile.objects.create(report=report, name="table.csv", content=b"a,b\n",
                              content_type="text/csv")
    judge = Judge.objects.create(name="fuzz-judge", kind="pairwise",
                                 base_url="http://127.0.0.1:9/v1", model_name="stand-in",
                                 price_in_per_1k=Decimal("0.01"),
                                 price_out_per_1k=Decimal("0.03"))
    run = judge_run_start(judge=judge, item_uuids=[c.uuid for c in comparisons],
                          dispatch=False)
    metric_run = MetricRun.objects.create(metrics=["bleu4"], created_at=now)
    # The admin submits models too (the submitter role), and has one submission to read.
    from django.contrib.auth.models import Group

    from judging.models import EvalModel
    from judging.submissions.models import Submission

    admin.groups.add(Group.objects.get_or_create(name="submitter")[0])
    submission = Submission.objects.create(
        submitter=admin, name="fuzz-vlm", version=1, file_name="p.jsonl",
        model=EvalModel.objects.create(name="fuzz-vlm v1"), status=Submission.Status.DONE)

    by_prefix = {
        "/api/batches/{uuid}": {"uuid": str(batch.uuid)},
        "/api/tasks/{uuid}": {"uuid": str(assignment.task.uuid)},
        "/api/workers/{uuid}": {"uuid": str(assignment.worker.uuid)},
        "/api/assignments/{uuid}": {"uuid": str(assignment.uuid)},
        "/api/my/assignments/{uuid}": {"uuid": str(assignment.uuid)},
        "/api/my/assignments/claim/{batch_uuid}": {"batch_uuid": str(batch.uuid)},
        "/api/eval/models/{name}": {"name": "llava"},
        "/api/agreement/reports/{uuid}": {"uuid": str(report.uuid)},
        "/api/agreement/metric-runs/{uuid}": {"uuid": str(metric_run.uuid)},
        "/api/judges/runs/{uuid}": {"uuid": str(run.uuid)},
        "/api/eval/submissions/{submission_uuid}": {"submission_uuid": str(submission.uuid)},
        # A study's routes: the same objects (the default study's) under its slug.
        "/api/studies/{study_slug}/batches/{uuid}": {"study_slug": settings.DEFAULT_STUDY_SLUG,
                                                     "uuid": str(batch.uuid)},
        "/api/studies/{study_slug}/judge-runs/{uuid}": {
            "study_slug": settings.DEFAULT_STUDY_SLUG, "uuid": str(run.uuid)},
        "/api/studies/{study_slug}/reports/{uuid}": {"study_slug": settings.DEFAULT_STUDY_SLUG,
                                                     "uuid": str(report.uuid)},
        "/api/studies/{study_slug}/metric-runs/{uuid}": {
            "study_slug": settings.DEFAULT_STUDY_SLUG, "uuid": str(metric_run.uuid)},
        "/api/studies/{study_slug}": {"study_slug": settings.DEFAULT_STUDY_SLUG},
    }

    def path_values(path: str):
        return next((v for prefix, v in by_prefix.items() if path.startswith(prefix)), None)

    client = Client()
    client.force_login(admin)
    document = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    _narrow_to_pairwise(document)
    # A new judge run names a judge by uuid: let valid requests name the one there is.
    document["components"]["schemas"]["JudgeRunCreate"]["properties"]["judge"]["enum"] = [
        str(judge.uuid)]
    tokens = {"admin": Token.objects.create(user=admin).key,
              "annotator": Token.objects.create(user=alice).key}
    return {"schema": load_schema(document), "path_values": path_values, "tokens": tokens}


def _narrow_to_pairwise(document: dict) -> None:
    """Batch rows and answers are free-form in the schema (each HIT type has its own forms),
    so valid-looking requests would all stop at "unknown HIT type", a bad row or a bad answer.
    For fuzzing, describe the pairwise HIT's: valid requests then create batches and submit
    answers, reaching the services and the database with every other field fuzzed; invalid
    ones still cover the rest."""
    schemas = document["components"]["schemas"]
    schemas["Submit"]["properties"]["answer"] = {
        "type": "object", "required": ["choice"],
        "properties": {"choice": {"type": "string", "enum": ["A", "B"]}}}
    batch = schemas["BatchCreate"]["properties"]
    batch["hit_type"]["enum"] = ["pairwise_ab"]
    batch["title"]["minLength"] = 1  # DRF refuses blanks; the schema does not say so
    text = {"type": "string", "minLength": 1, "maxLength": 200}
    batch["rows"].update(minItems=1, maxItems=3, items={
        "type": "object", "required": ["instruction", "response_a", "response_b"],
        "properties": {"instruction": text, "response_a": text, "response_b": text},
        "additionalProperties": False})


def _examples(role: str):
    """Requests per operation, mode and path variant: the full budget where the role's code
    runs; a few where it must only be refused (the permission check comes before parsing);
    few for the schema document (slow to build, no input worth fuzzing)."""
    def examples(label: str) -> int:
        if label == "GET /api/schema/":
            return 5
        return EXAMPLES if role == "admin" or annotator_may(label) else REFUSED_EXAMPLES
    return examples


@pytest.mark.slow
@pytest.mark.parametrize("role", ["admin", "annotator"])
def test_fuzzing_the_api_finds_no_server_error(fuzz_world, role):
    with loopback_only() as outbound, in_process_app() as app:
        report = fuzz_schema(
            fuzz_world["schema"], app=app, role=role,
            headers={"Authorization": f"Token {fuzz_world['tokens'][role]}"},
            examples=_examples(role), path_values=fuzz_world["path_values"],
            checks=["not_a_server_error", "response_schema_conformance"])
    assert len(report.operations) == OPERATIONS, report.operations
    assert report.calls >= OPERATIONS * 5  # every operation really ran
    assert not report.failures, f"{len(report.failures)} failure(s):\n{report.summary()}"
    assert not outbound, f"outbound connections attempted: {outbound}"
    # The role's own operations really ran, not only 404s: each answered 2xx at least once.
    own = [label for label in report.operations
           if annotator_may(label) == (role == "annotator") or label == "GET /api/schema/"]
    unreached = [label for label in own if label not in NO_2XX_EXPECTED
                 and not any(200 <= code < 300 for code in report.statuses[label])]
    assert not unreached, unreached
    for label, counts in sorted(report.statuses.items()):
        print(role, label, dict(sorted(counts.items())))
    print(f"\n{role}: {report.calls} requests over {len(report.operations)} operations in "
          f"{sum(report.seconds.values()):.0f} s; slowest: "
          f"{max(report.seconds, key=report.seconds.get)}")


# ---------------------------------------------------------------- one test per bug fixed
# Each was a 500 (or a schema lie) before; the request that showed it, and the clean answer.


def _json(client, url, body):
    return client.post(url, json.dumps(body), content_type="application/json")


def test_metric_run_with_a_non_object_body_is_a_400(analyst_client):
    from agreement.models import MetricRun

    response = _json(analyst_client, "/api/agreement/metric-runs/", [{"metrics": ["bleu4"]}])
    assert response.status_code == 400 and "JSON object" in response.json()["detail"]
    assert not MetricRun.objects.exists()


@pytest.mark.parametrize("body,says", [
    ({"metrics": [{}]}, "list of names"),  # unhashable name → TypeError
    ({"metrics": ["bleu4"], "options": {"\x00": 1}}, "NUL"),  # jsonb refuses NUL
    ({"metrics": ["bleu4"], "options": {"note": "\x00"}}, "NUL"),
    ({"metrics": ["random"], "options": {"seed": []}}, "int()"),  # int([]) → TypeError
])
def test_metric_run_with_unusable_metrics_or_options_is_a_400(analyst_client, body, says):
    from agreement.models import MetricRun

    response = _json(analyst_client, "/api/agreement/metric-runs/", body)
    assert response.status_code == 400 and says in json.dumps(response.json())
    assert not MetricRun.objects.exists()


def test_report_with_a_nul_in_a_judge_family_name_is_a_400(analyst_client):
    from agreement.models import Report

    response = _json(analyst_client, "/api/agreement/reports/",
                     {"judge_families": {"gpt\x00": "openai"}})
    assert response.status_code == 400 and "NUL" in response.json()["detail"]
    assert not Report.objects.exists()


def test_report_json_of_a_malformed_uuid_is_a_404(analyst_client):
    assert analyst_client.get("/api/agreement/reports/paid/json/").status_code == 404


@pytest.mark.parametrize("url,param", [
    ("/api/eval/leaderboard/?judge=%00", "judge"),
    ("/api/eval/majorities/?split=category:%00", "split"),
])
def test_leaderboard_and_majorities_refuse_a_nul_parameter(analyst_client, url, param):
    response = analyst_client.get(url)
    assert response.status_code == 400 and "NUL" in response.json()[param][0]


def test_eval_model_name_with_a_nul_is_a_404(analyst_client):
    assert analyst_client.get("/api/eval/models/a%00b/").status_code == 404


@pytest.mark.parametrize("field", ["lease_seconds", "min_seconds"])
def test_batch_with_seconds_beyond_the_column_is_a_400(admin_client_, field):
    from annotation.models import Batch

    response = _json(admin_client_, "/api/batches/", {
        "hit_type": "pairwise_ab", "title": "t", field: 10**12,
        "rows": [{"instruction": "q", "response_a": "a", "response_b": "b"}]})
    assert response.status_code == 400 and field in response.json()
    assert not Batch.objects.exists()


def test_batch_schema_says_required_qualification_may_be_null(admin_client_):
    from tests.factories import make_batch

    make_batch(1, n=1)
    schema = admin_client_.get("/api/schema/",
                               HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    field = schema["components"]["schemas"]["Batch"]["properties"]["required_qualification"]
    assert field.get("nullable") is True
    assert admin_client_.get("/api/batches/").json()["results"][0]["required_qualification"] is None


@pytest.fixture
def alice_assignment(alice):
    from annotation.engine.services.claims import task_claim_next
    from annotation.engine.services.workers import worker_for_user
    from tests.factories import make_batch

    batch = make_batch(1, n=1)
    return task_claim_next(batch=batch, worker=worker_for_user(alice))


def test_claim_with_a_malformed_batch_uuid_is_a_404(alice_client):
    url = "/api/my/assignments/claim/000000000000000000000000000000000000/"
    assert alice_client.post(url).status_code == 404


def test_submit_to_a_malformed_assignment_uuid_is_a_404(alice_client, alice_assignment):
    response = _json(alice_client, "/api/my/assignments/not-a-uuid/submit/",
                     {"answer": {"choice": "A"}})
    assert response.status_code == 404


def test_submit_answer_with_a_lone_surrogate_is_a_400_not_an_echo(alice_client,
                                                                  alice_assignment):
    # The form's "not a valid choice" message echoed "\ud800", which no UTF-8 response holds.
    response = _json(alice_client, f"/api/my/assignments/{alice_assignment.uuid}/submit/",
                     {"answer": {"choice": "\ud800"}})
    assert response.status_code == 400
    assert "lone surrogate" in response.json()["answer"][0]
    alice_assignment.refresh_from_db()
    assert alice_assignment.answer in (None, {})
