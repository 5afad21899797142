"""MTurk provider through botocore's Stubber on the real client model: every request below is
validated against MTurk's service model, and an unexpected call fails the test."""
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from botocore.stub import ANY

from annotation.core.clients.errors import MarketplaceError, ProductionNotConfirmed
from annotation.engine.services.claims import task_claim_specific
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_for_external
from annotation.models import Assignment, Batch, Bonus, ProviderHit, ProviderSubmission, Worker
from annotation.providers import services
from annotation.providers.costs import BudgetExceeded
from annotation.providers.mturk.provider import external_question, hit_token
from tests.factories import make_batch

pytestmark = pytest.mark.django_db(transaction=True)  # external calls must be outside transactions

HIT_TYPE = "3HITTYPE000000000000000000000"
EXPIRES = datetime(2026, 12, 1, tzinfo=UTC)


def hit_id(i):
    return f"3HIT{i:026d}"


def mturk_batch(n_tasks=3, n=3, budget="100.00", **kw):
    return make_batch(n_tasks, n=n, activate=False, provider="mturk", budget=Decimal(budget),
                      description="Pick the better answer", **kw)


def expect_hit_type(mturk, batch):
    mturk.add_response("create_hit_type", {"HITTypeId": HIT_TYPE}, {
        "AutoApprovalDelayInSeconds": 3 * 24 * 3600,
        "AssignmentDurationInSeconds": batch.lease_seconds,
        "Reward": "0.10", "Title": batch.title, "Keywords": "image, evaluation, labeling",
        "Description": "Pick the better answer",
        "QualificationRequirements": [
            {"QualificationTypeId": "000000000000000000L0", "Comparator": "GreaterThanOrEqualTo",
             "IntegerValues": [95], "ActionsGuarded": "Accept"},
            {"QualificationTypeId": "00000000000000000071", "Comparator": "In",
             "LocaleValues": [{"Country": "US"}], "ActionsGuarded": "Accept"},
        ],
    })


def hit_params(task, n=3):
    url = f"https://eval.example.org/ext/mturk/task/{task.uuid}/"
    return {"HITTypeId": HIT_TYPE, "MaxAssignments": n, "LifetimeInSeconds": 7 * 24 * 3600,
            "Question": external_question(url), "RequesterAnnotation": f"task:{task.uuid}",
            "UniqueRequestToken": hit_token(task.uuid)}


def expect_hit(mturk, task, i, n=3):
    mturk.add_response("create_hit_with_hit_type", {"HIT": {
        "HITId": hit_id(i), "HITTypeId": HIT_TYPE, "Expiration": EXPIRES}}, hit_params(task, n))


def launch(mturk, batch):
    expect_hit_type(mturk, batch)
    for i, task in enumerate(batch.tasks.order_by("position"), start=1):
        expect_hit(mturk, task, i, batch.assignments_per_task)
    return services.batch_launch(batch, actor="test")


def work(task, worker_id, assignment_id, choice="A"):
    """A worker arrives from MTurk and submits on our site (the real services)."""
    worker = worker_for_external("mturk", worker_id)
    a = task_claim_specific(task=task, worker=worker, provider_assignment_id=assignment_id,
                            provider_hit_id=task.provider_hit_id,
                            submit_to="https://workersandbox.mturk.com")
    assignment_submit(assignment=a, data={"choice": choice})
    return Assignment.objects.select_related("worker", "batch").get(pk=a.pk)


def remote(assignment_id, worker_id, hit, status="Submitted"):
    return {"AssignmentId": assignment_id, "WorkerId": worker_id, "HITId": hit,
            "AssignmentStatus": status, "SubmitTime": EXPIRES}


# --- launch ----------------------------------------------------------------------------------
def test_launch_publishes_one_external_question_hit_per_task(mturk):
    batch = mturk_batch()
    report = launch(mturk, batch)
    assert (report.total, report.created, report.reused) == (3, 3, 0)
    batch.refresh_from_db()
    assert batch.status == Batch.Status.ACTIVE
    tasks = list(batch.tasks.order_by("position"))
    assert [t.provider_hit_id for t in tasks] == [hit_id(1), hit_id(2), hit_id(3)]
    hits = ProviderHit.objects.filter(batch=batch)
    assert {h.status for h in hits} == {"live"} and {h.hit_type_id for h in hits} == {HIT_TYPE}
    assert '<ExternalURL>https://eval.example.org/ext/mturk/task/' in hit_params(tasks[0])["Question"]


def test_relaunch_creates_no_duplicates(mturk):
    batch = mturk_batch()
    launch(mturk, batch)
    again = services.batch_launch(batch)  # no stubbed responses: any MTurk call would fail
    assert (again.created, again.reused) == (0, 3)
    assert ProviderHit.objects.filter(batch=batch).count() == 3


def test_interrupted_launch_resumes_without_duplicates(mturk):
    batch = mturk_batch()
    t1, t2, t3 = batch.tasks.order_by("position")
    expect_hit_type(mturk, batch)
    expect_hit(mturk, t1, 1)
    # The second HIT's request still faults after botocore's last retry: outcome unknown.
    mturk.add_client_error("create_hit_with_hit_type", "ServiceFault", "Internal error",
                           http_status_code=500, expected_params=hit_params(t2))
    with pytest.raises(services.LaunchIncomplete, match="Published 1 of 3"):
        services.batch_launch(batch)
    assert ProviderHit.objects.get(task=t2).status == ProviderHit.Status.CREATING
    # MTurk did create it; the re-run sends the same token and gets the HIT id back.
    expect_hit_type(mturk, batch)
    mturk.add_client_error(
        "create_hit_with_hit_type", "RequestError",
        f'The HIT with ID "{hit_id(2)}" already exists. (1700000000000)', http_status_code=400,
        expected_params=hit_params(t2),
        modeled_fields={"TurkErrorCode": "AWS.MechanicalTurk.HitAlreadyExists"})
    mturk.add_response("get_hit", {"HIT": {"HITId": hit_id(2), "HITTypeId": HIT_TYPE,
                                            "Expiration": EXPIRES}}, {"HITId": hit_id(2)})
    expect_hit(mturk, t3, 3)
    report = services.batch_launch(batch)
    assert (report.created, report.reused) == (1, 2)
    assert [t.provider_hit_id for t in batch.tasks.order_by("position")] == [
        hit_id(1), hit_id(2), hit_id(3)]
    assert ProviderHit.objects.filter(batch=batch, status="live").count() == 3


def test_launch_needs_https_and_production_confirmation(mturk, settings):
    batch = mturk_batch()
    settings.PUBLIC_BASE_URL = "http://eval.example.org"
    with pytest.raises(MarketplaceError, match="https"):
        services.batch_launch(batch)
    settings.PUBLIC_BASE_URL = "https://eval.example.org"
    settings.MTURK_PRODUCTION = True
    with pytest.raises(ProductionNotConfirmed):
        services.batch_launch(batch)
    batch.refresh_from_db()
    assert batch.status == Batch.Status.DRAFT and not ProviderHit.objects.exists()


def test_real_client_factory_refuses_unconfirmed_production(settings):
    from annotation.providers.mturk import client as mturk_client

    settings.MTURK_PRODUCTION = False
    assert mturk_client.make_client()._endpoint.host == mturk_client.SANDBOX_ENDPOINT
    settings.MTURK_PRODUCTION = True
    with pytest.raises(ProductionNotConfirmed):
        mturk_client.make_client(launch=True)
    confirmed = mturk_client.make_client(launch=True, production_confirmed=True)
    assert confirmed._endpoint.host == mturk_client.PRODUCTION_ENDPOINT


# --- budget guard ------------------------------------------------------------------------------
def test_budget_guard_refuses_launch_before_any_call(mturk):
    # 3 tasks × 3 = 9 assignments × ($0.10 + $0.02 fee) = $1.08 > $1.00
    batch = mturk_batch(budget="1.00")
    with pytest.raises(BudgetExceeded, match=r"\$1\.08.*\$1\.00"):
        services.batch_launch(batch)
    batch.refresh_from_db()
    assert batch.status == Batch.Status.DRAFT and not ProviderHit.objects.exists()


def test_launch_without_budget_is_refused_on_a_paid_marketplace(mturk):
    batch = make_batch(1, n=1, activate=False, provider="mturk")
    with pytest.raises(BudgetExceeded, match="Set a budget"):
        services.batch_launch(batch)


def test_bonus_past_budget_is_refused_and_nothing_recorded(mturk):
    batch = mturk_batch(n_tasks=1, n=1, budget="1.00")
    launch(mturk, batch)  # committed $0.12
    a = work(batch.tasks.get(), "W1", "ASG1")
    with pytest.raises(BudgetExceeded):
        services.worker_bonus(a, amount="0.75", reason="Great work")  # 0.12 + 0.75 + 0.15 > 1
    assert not Bonus.objects.exists()


# --- sync and review -------------------------------------------------------------------------
def test_sync_follows_next_token_matches_and_flags_worker_mismatch(mturk):
    batch = mturk_batch(n_tasks=1)
    services.config_for(batch)
    batch.provider_config.review_policy = "auto"
    batch.provider_config.save()
    launch(mturk, batch)
    task = batch.tasks.get()
    good = work(task, "W1", "ASG1")
    stolen = work(task, "W2", "ASG2")
    mturk.add_response("list_assignments_for_hit", {
        "NextToken": "page2", "NumResults": 1,
        "Assignments": [remote("ASG1", "W1", hit_id(1))]},
        {"HITId": hit_id(1), "MaxResults": 100,
         "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]})
    mturk.add_response("list_assignments_for_hit", {
        "NumResults": 2,
        "Assignments": [remote("ASG2", "WX", hit_id(1)), remote("ASG9", "W9", hit_id(1))]},
        {"HITId": hit_id(1), "MaxResults": 100, "NextToken": "page2",
         "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]})
    mturk.add_response("approve_assignment", {}, {"AssignmentId": "ASG1"})
    report = services.batch_sync(batch)
    assert (report.seen, report.matched, report.flagged, report.approved) == (3, 1, 2, 1)
    flags = dict(ProviderSubmission.objects.values_list("external_id", "flag"))
    assert flags == {"ASG1": "", "ASG2": "worker_mismatch", "ASG9": "unknown"}
    good.refresh_from_db()
    stolen.refresh_from_db()
    assert good.status == "approved"
    assert stolen.status == "submitted" and "WX" in stolen.review_note


def test_gold_policy_rejects_with_reason_and_mirrors_remote_decisions(mturk):
    batch = mturk_batch(n_tasks=2, n=2, gold_every=1)  # every task is gold, answer "A"
    services.config_for(batch)
    batch.provider_config.review_policy = "gold"
    batch.provider_config.save()
    launch(mturk, batch)
    t1, t2 = batch.tasks.order_by("position")
    careless = work(t1, "W1", "ASG1", choice="B")
    careful = work(t1, "W2", "ASG2", choice="A")
    approved_elsewhere = work(t2, "W2", "ASG3", choice="A")
    statuses = ["Submitted", "Approved", "Rejected"]
    mturk.add_response("list_assignments_for_hit", {"Assignments": [
        remote("ASG1", "W1", hit_id(1)), remote("ASG2", "W2", hit_id(1))]},
        {"HITId": hit_id(1), "MaxResults": 100, "AssignmentStatuses": statuses})
    mturk.add_response("list_assignments_for_hit", {"Assignments": [
        remote("ASG3", "W2", hit_id(2), status="Approved")]},
        {"HITId": hit_id(2), "MaxResults": 100, "AssignmentStatuses": statuses})
    mturk.add_response("reject_assignment", {}, {"AssignmentId": "ASG1", "RequesterFeedback": ANY})
    mturk.add_response("approve_assignment", {}, {"AssignmentId": "ASG2"})
    report = services.batch_sync(batch)
    assert (report.approved, report.rejected) == (1, 1)
    for a in (careless, careful, approved_elsewhere):
        a.refresh_from_db()
    assert careless.status == "rejected" and "0 of 1 check items" in careless.review_note
    assert careful.status == "approved"
    assert approved_elsewhere.status == "approved"  # decided on MTurk, mirrored here


def test_approving_twice_calls_once_and_already_approved_counts_as_success(mturk):
    batch = mturk_batch(n_tasks=1, n=2)
    launch(mturk, batch)
    a = work(batch.tasks.get(), "W1", "ASG1")
    b = work(batch.tasks.get(), "W2", "ASG2")
    mturk.add_response("approve_assignment", {}, {"AssignmentId": "ASG1",
                                                  "RequesterFeedback": "Thanks"})
    assert services.assignment_approve(a, feedback="Thanks") is True
    assert services.assignment_approve(a) is False  # no second call
    # approved on MTurk's site meanwhile: the call errors, a look-up shows it is approved
    mturk.add_client_error("approve_assignment", "RequestError",
                           "This operation can be called with a status of: Submitted",
                           expected_params={"AssignmentId": "ASG2"})
    mturk.add_response("get_assignment", {"Assignment": {"AssignmentId": "ASG2",
                                                         "AssignmentStatus": "Approved"}},
                       {"AssignmentId": "ASG2"})
    assert services.assignment_approve(b) is True
    assert Assignment.objects.filter(status="approved").count() == 2


# --- money: bonuses ----------------------------------------------------------------------------
def test_bonus_token_is_deterministic_and_a_retried_bonus_never_pays_twice(mturk):
    batch = mturk_batch(n_tasks=1)
    launch(mturk, batch)
    a = work(batch.tasks.get(), "W1", "ASG1")
    token = services.bonus_token(a, "q1")
    assert token == services.bonus_token(a, "q1") != services.bonus_token(a, "q2")
    params = {"WorkerId": "W1", "BonusAmount": "0.50", "AssignmentId": "ASG1",
              "Reason": "Careful work", "UniqueRequestToken": token}
    # First try: the answer is lost (a fault after MTurk may have paid).
    mturk.add_client_error("send_bonus", "ServiceFault", "Internal", http_status_code=500,
                           expected_params=params)
    with pytest.raises(MarketplaceError):
        services.worker_bonus(a, amount="0.50", reason="Careful work", key="q1")
    assert Bonus.objects.get().status == Bonus.Status.UNCERTAIN
    # The retry sends the same token; MTurk says it was already processed: paid once.
    mturk.add_client_error(
        "send_bonus", "RequestError",
        f'The idempotency token "{token}" has already been processed. (1700000000000)',
        expected_params=params)
    bonus = services.worker_bonus(a, amount="0.50", reason="Careful work", key="q1")
    assert bonus.status == Bonus.Status.PAID and bonus.token == token
    # A third call (double click, re-run command) sends nothing.
    assert services.worker_bonus(a, amount="0.50", reason="Careful work", key="q1").pk == bonus.pk
    assert Bonus.objects.count() == 1


def test_throttling_past_the_attempt_limit_is_reported_not_hidden(mturk):
    batch = mturk_batch(n_tasks=1)
    launch(mturk, batch)
    # what botocore raises once its attempts are used up
    mturk.add_client_error("list_assignments_for_hit", "ThrottlingException", "Rate exceeded")
    report = services.batch_sync(batch)
    assert len(report.errors) == 1 and "ThrottlingException" in report.errors[0]


# --- life cycle, qualifications, workers -----------------------------------------------------
def test_pause_resume_expire_move_hit_expiration(mturk):
    batch = mturk_batch(n_tasks=1)
    launch(mturk, batch)
    past = {"HITId": hit_id(1), "ExpireAt": datetime(2015, 1, 1, tzinfo=UTC)}
    mturk.add_response("update_expiration_for_hit", {}, past)
    assert services.batch_pause(batch) == []
    batch.refresh_from_db()
    assert batch.status == "paused" and ProviderHit.objects.get().status == "paused"
    mturk.add_response("update_expiration_for_hit", {}, {"HITId": hit_id(1), "ExpireAt": ANY})
    services.batch_resume(batch)
    batch.refresh_from_db()
    assert batch.status == "active" and ProviderHit.objects.get().status == "live"
    mturk.add_response("update_expiration_for_hit", {}, past)
    services.batch_expire(batch)
    batch.refresh_from_db()
    assert batch.status == "finished" and ProviderHit.objects.get().status == "expired"


def test_onsite_qualification_is_pushed_to_mturk_once(mturk):
    from django.utils import timezone

    from annotation.engine.services.qualifications import qualification_grant, qualification_revoke
    from annotation.models import Qualification

    qual = Qualification.objects.create(name="VisIT raters", description="Passed the test")
    worker = worker_for_external("mturk", "W1")
    qualification_grant(qualification=qual, worker=worker, now=timezone.now())
    worker_for_external("local", "user-1")
    mturk.add_response("create_qualification_type", {"QualificationType": {
        "QualificationTypeId": "3QUAL0000000000000000000000000"}},
        {"Name": "VisIT raters", "Description": "Passed the test",
         "QualificationTypeStatus": "Active"})
    mturk.add_response("associate_qualification_with_worker", {}, {
        "QualificationTypeId": "3QUAL0000000000000000000000000", "WorkerId": "W1",
        "IntegerValue": 1, "SendNotification": False})
    assert services.qualification_push() == 1
    assert services.qualification_push() == 0  # nothing new: no call
    qual.refresh_from_db()
    assert qual.provider_ids == {"mturk": "3QUAL0000000000000000000000000"}
    qualification_revoke(qualification=qual, worker=worker)
    mturk.add_response("disassociate_qualification_from_worker", {}, {
        "QualificationTypeId": "3QUAL0000000000000000000000000", "WorkerId": "W1",
        "Reason": "Qualification revoked"})
    assert services.qualification_push() == 1


def test_block_notify_and_required_qualification_on_hit_type(mturk):
    from annotation.models import Qualification

    worker = worker_for_external("mturk", "W7")
    mturk.add_response("create_worker_block", {}, {"WorkerId": "W7", "Reason": "Spam"})
    services.provider_worker_block(worker, reason="Spam")
    assert Worker.objects.get(pk=worker.pk).blocked
    qual = Qualification.objects.create(name="Q", provider_ids={"mturk": "3QUALX"})
    batch = mturk_batch(n_tasks=1, n=1, required_qualification=qual)
    mturk.add_response("create_hit_type", {"HITTypeId": HIT_TYPE}, {
        "AutoApprovalDelayInSeconds": ANY, "AssignmentDurationInSeconds": ANY, "Reward": "0.10",
        "Title": ANY, "Keywords": ANY, "Description": ANY, "QualificationRequirements": [
            {"QualificationTypeId": "3QUALX", "Comparator": "Exists",
             "ActionsGuarded": "DiscoverPreviewAndAccept"}, ANY, ANY]})
    expect_hit(mturk, batch.tasks.get(), 1, n=1)
    services.batch_launch(batch)
    from django.utils import timezone

    from annotation.engine.services.qualifications import qualification_grant

    qualification_grant(qualification=qual, worker=worker_for_external("mturk", "W8"),
                        now=timezone.now())  # claiming needs the grant here too
    work(batch.tasks.get(), "W8", "ASG8")
    mturk.add_response("notify_workers", {"NotifyWorkersFailureStatuses": []},
                       {"Subject": "New batch", "MessageText": "Hello", "WorkerIds": ["W8"]})
    assert services.workers_notify(batch, subject="New batch", message="Hello") == []


def test_calls_inside_a_transaction_are_refused(mturk):
    from django.db import transaction

    batch = mturk_batch(n_tasks=1)
    with transaction.atomic(), pytest.raises(RuntimeError, match="transaction"):
        services.batch_launch(batch)


def test_beat_task_syncs_every_launched_batch(mturk):
    from annotation.providers.tasks import sync_all

    batch = mturk_batch(n_tasks=1)
    launch(mturk, batch)
    make_batch(1, n=1, provider="local")  # nothing to sync
    mturk.add_response("list_assignments_for_hit", {"Assignments": [
        remote("ASG5", "W5", hit_id(1))]}, {"HITId": hit_id(1), "MaxResults": 100,
                                             "AssignmentStatuses": ANY})
    assert sync_all.delay().get() == 1
    assert ProviderSubmission.objects.get().flag == "unknown"
