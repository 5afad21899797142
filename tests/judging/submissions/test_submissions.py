"""Public submission of a new model, through the service, the page and the API, against a real
loopback OpenAI-protocol judge: validation that writes nothing, one in flight, versions, the
cost cap, the run to the end, withdrawal and the approved human batch."""
import json
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group, User
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.core.background import wait_for_jobs
from judging.judges.models import JudgeRun
from judging.models import Comparison, EvalModel, Judgment, Response
from judging.submissions.models import Submission
from judging.submissions.services import (
    SubmissionRefused,
    submission_create,
    submission_human_batch_create,
    submission_withdraw,
)
from tests.judging.judges.conftest import make_instance, make_judge, reference_model

VERDICT = "Step 1: compared.\nOverall, Response A is better."


@pytest.fixture
def bench(server, settings):
    """Twelve instances with reference answers and an anchor model's answers; the deployment's
    submission judge is a real HTTP judge."""
    reference, anchor = reference_model(), EvalModel.objects.create(name="Anchor-7B")
    instances = [make_instance() for _ in range(12)]
    for inst in instances:
        Response.objects.create(instance=inst, model=reference, text=inst.reference_output)
        Response.objects.create(instance=inst, model=anchor, text=f"anchor says {inst.pk}")
    judge = make_judge(server, name="sub-judge", concurrency=2)
    server.responder = lambda body: VERDICT
    settings.SUBMISSION_JUDGE = judge.name
    settings.SUBMISSION_BUDGET_CAP = 5.0
    return {"instances": instances, "judge": judge, "anchor": anchor}


def _submitter(name="sam"):
    user = User.objects.create_user(name, password="pw-long-enough-1")
    user.groups.add(Group.objects.get_or_create(name="submitter")[0])  # flushed by transactional tests
    return user


def _jsonl(instances, extra=()) -> bytes:
    rows = [{"item_id": str(i.uuid), "prediction": f"My model's answer about {i.pk}."}
            for i in instances]
    rows += list(extra)
    return "\n".join(json.dumps(r) for r in rows).encode()


def _counts():
    return (EvalModel.objects.count(), Response.objects.count(), Comparison.objects.count(),
            JudgeRun.objects.count(), Submission.objects.count())


@pytest.mark.django_db(transaction=True)
def test_a_submission_is_judged_to_the_end_against_the_reference(bench):
    user = _submitter()
    unmatched = {"item_id": "no-such-item", "instruction": "Nothing like this",
                 "prediction": "x"}
    sub = submission_create(submitter=user, name="NewVLM", file_name="preds.jsonl",
                            data=_jsonl(bench["instances"], [unmatched]))
    assert (sub.version, sub.model.name, sub.rows, sub.responses) == (1, "NewVLM v1", 13, 12)
    assert len(sub.unmatched) == 1 and "row 13" in sub.unmatched[0]
    comparisons = Comparison.objects.filter(sampling="submission")
    assert comparisons.count() == 12
    assert {c.swapped for c in comparisons} == {True, False}  # sides randomised
    for c in comparisons.select_related("response_a__model", "response_b__model"):
        assert {c.response_a.model.name, c.response_b.model.name} == \
            {"NewVLM v1", reference_model().name}
    assert wait_for_jobs(60)
    sub.refresh_from_db()
    assert sub.status == Submission.Status.DONE and sub.finished_at is not None
    assert sub.run.status == JudgeRun.Status.DONE
    assert Judgment.objects.filter(source="sub-judge", comparison__in=comparisons).count() == 12


@pytest.mark.django_db
def test_bad_files_are_refused_and_write_nothing(bench):
    user = _submitter()
    before = _counts()
    two_columns = (b"instruction,image,A prediction,B prediction\n"
                   b"What colour?,https://example.org/1.png,red,blue\n")
    with pytest.raises(SubmissionRefused, match="Row 1: give exactly one prediction"):
        submission_create(submitter=user, name="X", file_name="p.csv", data=two_columns)
    with pytest.raises(SubmissionRefused, match="No row matched"):
        submission_create(submitter=user, name="X", file_name="p.jsonl",
                          data=b'{"item_id": "nope", "instruction": "?", "prediction": "y"}')
    with pytest.raises(SubmissionRefused, match="reserved"):
        submission_create(submitter=user, name="Human", file_name="p.jsonl",
                          data=_jsonl(bench["instances"]))
    with pytest.raises(SubmissionRefused):
        submission_create(submitter=user, name="X", file_name="p.jsonl", data=b"{not json")
    assert _counts() == before


@pytest.mark.django_db
def test_the_cost_cap_refuses_before_anything_is_stored(bench, settings):
    settings.SUBMISSION_BUDGET_CAP = 0.000001
    before = _counts()
    with pytest.raises(SubmissionRefused, match=r"over this study's cap of \$0\.00"):
        submission_create(submitter=_submitter(), name="Pricey", file_name="p.jsonl",
                          data=_jsonl(bench["instances"]))
    assert _counts() == before


@pytest.mark.django_db
def test_one_in_flight_per_submitter_a_daily_quota_and_versions(bench, settings):
    user = _submitter()
    first = submission_create(submitter=user, name="NewVLM", file_name="p.jsonl",
                              data=_jsonl(bench["instances"][:4]))
    with pytest.raises(SubmissionRefused, match="already have a submission being judged"):
        submission_create(submitter=user, name="NewVLM", file_name="p.jsonl",
                          data=_jsonl(bench["instances"][:4]))
    Submission.objects.filter(pk=first.pk).update(status=Submission.Status.DONE)
    second = submission_create(submitter=user, name="NewVLM", file_name="p.jsonl",
                               data=_jsonl(bench["instances"][:4]))
    assert (second.version, second.model.name) == (2, "NewVLM v2")
    assert EvalModel.objects.filter(name__startswith="NewVLM").count() == 2
    Submission.objects.filter(pk=second.pk).update(status=Submission.Status.DONE)
    settings.SUBMISSIONS_PER_DAY = 2
    with pytest.raises(SubmissionRefused, match="At most 2 submissions per day"):
        submission_create(submitter=user, name="NewVLM", file_name="p.jsonl",
                          data=_jsonl(bench["instances"][:4]))


@pytest.mark.django_db
def test_withdrawal_keeps_everything_and_cancels_a_pending_run(bench):
    sub = submission_create(submitter=_submitter(), name="NewVLM", file_name="p.jsonl",
                            data=_jsonl(bench["instances"]))
    responses = Response.objects.count()
    withdrawn = submission_withdraw(sub, reason="asked by the authors")
    assert withdrawn.status == Submission.Status.WITHDRAWN and withdrawn.withdrawn_at
    assert Response.objects.count() == responses  # nothing deleted
    assert JudgeRun.objects.get(pk=sub.run_id).status == JudgeRun.Status.CANCELLED
    assert submission_withdraw(sub).withdrawn_at == withdrawn.withdrawn_at  # idempotent


@pytest.mark.django_db
def test_the_approved_human_batch_pits_it_against_existing_models(bench):
    sub = submission_create(submitter=_submitter(), name="NewVLM", file_name="p.jsonl",
                            data=_jsonl(bench["instances"]), human_eval=True)
    batch = submission_human_batch_create(sub)
    assert batch.tasks.count() == 12 and batch.assignments_per_task == 5
    assert batch.status == "draft"  # the admin activates it
    pairs = Comparison.objects.filter(sampling="submission-human").select_related(
        "response_a__model", "response_b__model")
    for c in pairs:
        assert {c.response_a.model.name, c.response_b.model.name} == {"NewVLM v1", "Anchor-7B"}
    with pytest.raises(SubmissionRefused, match="already has its human batch"):
        submission_human_batch_create(sub)


@pytest.mark.django_db
def test_page_and_api_permissions_and_ownership(bench, client, settings):
    sam, other = _submitter("sam"), _submitter("other")
    annotator = User.objects.create_user("anna", password="pw-long-enough-1")
    annotator.groups.add(Group.objects.get_or_create(name="annotator")[0])
    client.force_login(annotator)
    assert client.get("/eval/submit/").status_code == 403
    assert client.get("/api/eval/submissions/").status_code == 403

    client.force_login(sam)
    page = client.get("/eval/submit/")
    assert page.status_code == 200 and b"sub-judge" in page.content
    upload = SimpleUploadedFile("p.jsonl", _jsonl(bench["instances"][:3]))
    response = client.post("/eval/submit/", {"name": "<b>Bold</b>", "file": upload})
    assert response.status_code == 302
    sub = Submission.objects.get(submitter=sam)
    status = client.get(response["Location"])
    assert b"&lt;b&gt;Bold&lt;/b&gt; v1" in status.content and b"<b>Bold" not in status.content
    progress = client.get(f"/eval/submit/{sub.uuid}/status.json").json()
    assert progress["units_total"] == 2 * 3  # both orderings of each comparison

    client.force_login(other)
    assert client.get(f"/eval/submit/{sub.uuid}/").status_code == 404
    assert client.get(f"/api/eval/submissions/{sub.uuid}/").status_code == 404
    refused = client.post("/api/eval/submissions/", {
        "name": "Y", "file": SimpleUploadedFile("p.jsonl", b'{"item_id": "z", "prediction": "q"}')})
    assert refused.status_code == 400 and "No row matched" in refused.json()["detail"]
    settings.SUBMISSION_MAX_BYTES = 10
    big = client.post("/api/eval/submissions/", {
        "name": "Y", "file": SimpleUploadedFile("p.jsonl", _jsonl(bench["instances"][:2]))})
    assert big.status_code == 400 and "larger than 10 bytes" in big.json()["detail"]
    settings.SUBMISSION_MAX_BYTES = 1_000_000
    made = client.post("/api/eval/submissions/", {
        "name": "Y", "file": SimpleUploadedFile("p.jsonl", _jsonl(bench["instances"][:2]))})
    assert made.status_code == 201 and made.json()["model"] == "Y v1"
    assert made.json()["estimated_cost"] and Decimal(made.json()["estimated_cost"]) > 0


@pytest.mark.django_db
def test_closed_without_a_configured_judge(bench, settings, client):
    settings.SUBMISSION_JUDGE = ""
    client.force_login(_submitter())
    page = client.get("/eval/submit/")
    assert b"Submissions are closed" in page.content and b"submit-form" not in page.content
    with pytest.raises(SubmissionRefused, match="closed"):
        submission_create(submitter=User.objects.get(username="sam"), name="Z",
                          file_name="p.jsonl", data=_jsonl(bench["instances"]))


@pytest.mark.django_db(transaction=True)
def test_a_run_stopped_by_its_budget_fails_the_submission_and_tells_subscribers(
        bench, receiver_factory, monkeypatch):
    from annotation.webhooks.models import WebhookDelivery, WebhookEndpoint
    from judging.judges.services import judge_run_execute
    from judging.submissions import services

    receiver = receiver_factory()
    WebhookEndpoint.objects.create(name="ops", url=receiver.url, events=["budget.reached"],
                                   secret_env="WEBHOOK_SECRET_TEST")
    start = services.judge_run_start
    monkeypatch.setattr(services, "judge_run_start",
                        lambda **kw: start(**{**kw, "dispatch": False}))  # run it ourselves
    sub = submission_create(submitter=_submitter(), name="NewVLM", file_name="p.jsonl",
                            data=_jsonl(bench["instances"]))
    JudgeRun.objects.filter(pk=sub.run_id).update(budget=Decimal("0.000001"))
    run = judge_run_execute(JudgeRun.objects.get(pk=sub.run_id))
    assert run.status == JudgeRun.Status.BUDGET_STOPPED
    sub.refresh_from_db()
    assert sub.status == Submission.Status.FAILED and "budget" in sub.error
    assert wait_for_jobs(30)
    delivery = WebhookDelivery.objects.get(event="budget.reached")
    assert delivery.payload["run"] == str(run.uuid) and delivery.status == "delivered"
    # The failed submission no longer holds the submitter's place in flight.
    submission_create(submitter=sub.submitter, name="NewVLM", file_name="p.jsonl",
                      data=_jsonl(bench["instances"][:2]))


@pytest.mark.django_db(transaction=True)
def test_on_the_leaderboard_marked_submitted_and_gone_once_withdrawn(bench, client):
    from judging import rating_cache

    sub = submission_create(submitter=_submitter(), name="NewVLM", file_name="p.jsonl",
                            data=_jsonl(bench["instances"]))
    assert wait_for_jobs(60)
    board = rating_cache.leaderboard(judge="sub-judge")
    assert "NewVLM v1" in {row["model"] for row in board.rows}
    analyst = User.objects.create_user("ann", password="pw-long-enough-1")
    analyst.groups.add(Group.objects.get_or_create(name="analyst")[0])
    client.force_login(analyst)
    page = client.get("/eval/leaderboard/?judge=sub-judge").content.decode()
    assert "NewVLM v1" in page and "submitted, automatic judge" in page
    judgments = Judgment.objects.count()
    submission_withdraw(sub)
    assert Judgment.objects.count() == judgments  # nothing deleted
    board = rating_cache.leaderboard(judge="sub-judge")  # recomputed: the cache was told
    assert "NewVLM v1" not in {row["model"] for row in board.rows}
    assert "NewVLM v1" not in client.get("/eval/leaderboard/?judge=sub-judge").content.decode()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_simultaneous_submissions_of_one_submitter_take_one(bench):
    """Four uploads at the same moment (page and API racing): the partial unique constraint
    lets one through; the others are refused cleanly and leave nothing behind."""
    import threading

    from django.db import connection

    user = _submitter()
    data = _jsonl(bench["instances"][:3])
    barrier, outcomes = threading.Barrier(4), []

    def submit(k):
        barrier.wait()
        try:
            outcomes.append(submission_create(submitter=user, name=f"Race{k}",
                                              file_name="p.jsonl", data=data))
        except SubmissionRefused as exc:
            outcomes.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=submit, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wait_for_jobs(60)
    taken = [o for o in outcomes if isinstance(o, Submission)]
    assert len(taken) == 1 and len(outcomes) == 4
    assert Submission.objects.count() == 1
    assert EvalModel.objects.filter(name__startswith="Race").count() == 1  # losers rolled back


@pytest.mark.django_db
def test_a_submission_past_the_job_cap_is_refused_and_writes_nothing(bench, settings, client):
    """A submission queues a judge run, so it passes the job caps (annotation.core.jobs)."""
    from django.utils import timezone

    settings.JOBS_MAX_GLOBAL, settings.JOBS_RETRY_AFTER = 1, 15
    JudgeRun.objects.create(judge=bench["judge"], scope=JudgeRun.Scope.COMPARISONS,
                            created_by="ann", created_at=timezone.now())  # queued: the 1 job
    before = _counts()
    client.force_login(_submitter())
    page = client.post("/eval/submit/", {"name": "Busy", "file": SimpleUploadedFile(
        "p.jsonl", _jsonl(bench["instances"][:2]))})
    assert page.status_code == 400 and "the server is busy with 1 jobs" in page.content.decode()
    answer = client.post("/api/eval/submissions/", {"name": "Busy", "file": SimpleUploadedFile(
        "p.jsonl", _jsonl(bench["instances"][:2]))})
    assert answer.status_code == 429 and answer["Retry-After"] == "15"
    assert _counts() == before
