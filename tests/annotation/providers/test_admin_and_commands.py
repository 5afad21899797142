"""Admin launch page (estimate + confirmation), admin actions, and the thin commands."""
from datetime import timedelta
from decimal import Decimal

import pytest
from botocore.stub import ANY
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from annotation.engine.services.qualifications import qualification_grant
from annotation.engine.services.workers import worker_for_external
from annotation.models import (
    Bonus,
    ProviderAction,
    ProviderHit,
    Qualification,
    QualificationGrant,
    Worker,
)
from annotation.providers import services
from tests.factories import make_batch

from .test_mturk import expect_hit, expect_hit_type, hit_id, launch, mturk_batch, remote, work

pytestmark = pytest.mark.django_db(transaction=True)


def test_launch_page_shows_the_estimate_and_needs_confirmation(mturk, admin_client_):
    batch = make_batch(2, n=3, activate=False, provider="mturk", budget=Decimal("5"),
                       description="Pick the better answer")
    url = reverse("admin:annotation_marketplacebatch_launch", args=[batch.pk])
    page = admin_client_.get(url)
    html = page.content.decode()
    assert page.status_code == 200 and "$0.72" in html  # 6 × (0.10 + 0.02)
    refused = admin_client_.post(url, {})
    assert refused.status_code == 200 and not ProviderHit.objects.exists()
    expect_hit_type(mturk, batch)
    for i, task in enumerate(batch.tasks.order_by("position"), start=1):
        expect_hit(mturk, task, i)
    done = admin_client_.post(url, {"confirm": "on"})
    assert done.status_code == 302 and ProviderHit.objects.filter(status="live").count() == 2
    listing = admin_client_.get(reverse("admin:annotation_marketplacebatch_changelist"))
    assert "hits: live 2" in listing.content.decode()


def test_launch_page_requires_the_production_box_in_production(mturk, admin_client_, settings):
    settings.MTURK_PRODUCTION = True
    batch = make_batch(1, n=1, activate=False, provider="mturk", budget=Decimal("5"))
    url = reverse("admin:annotation_marketplacebatch_launch", args=[batch.pk])
    assert "PRODUCTION" in admin_client_.get(url).content.decode()
    admin_client_.post(url, {"confirm": "on"})  # no production box: nothing is sent
    assert not ProviderHit.objects.exists()


def test_sync_now_action_and_commands(mturk, admin_client_, tmp_path, capsys):
    batch = make_batch(1, n=2, activate=False, provider="mturk", budget=Decimal("5"),
                       description="Pick the better answer")
    expect_hit_type(mturk, batch)
    expect_hit(mturk, batch.tasks.get(), 1, n=2)
    call_command("provider_launch", str(batch.uuid))
    out = capsys.readouterr().out
    assert "= $0.24" in out and "Published 1 new" in out
    batch.refresh_from_db()
    a = work(batch.tasks.get(), "W1", "ASG1")
    mturk.add_response("list_assignments_for_hit", {"Assignments": [remote("ASG1", "W1",
                                                                           hit_id(1))]})
    admin_client_.post(reverse("admin:annotation_marketplacebatch_changelist"),
                       {"action": "sync_now", "_selected_action": [batch.pk]})
    assert a.__class__.objects.get(pk=a.pk).status == "submitted"  # manual policy by default
    # Bonuses from a CSV: a bad row stops everything before anything is paid.
    bad = tmp_path / "bad.csv"
    bad.write_text("assignment,amount,reason\nASG1,0.20,Good\nNOPE,0.20,Good\n")
    with pytest.raises(CommandError, match="Row 2"):
        call_command("provider_pay", str(batch.uuid), str(bad))
    assert not Bonus.objects.exists()
    good = tmp_path / "good.csv"
    good.write_text(f"assignment,amount,reason\n{a.uuid},0.20,Good\n")
    mturk.add_response("send_bonus", {}, {"WorkerId": "W1", "BonusAmount": "0.20",
                                          "AssignmentId": "ASG1", "Reason": "Good",
                                          "UniqueRequestToken": ANY})
    call_command("provider_pay", str(batch.uuid), str(good))
    call_command("provider_pay", str(batch.uuid), str(good))  # re-run: nothing sent again
    assert Bonus.objects.get().status == "paid"
    mturk.add_response("list_assignments_for_hit", {"Assignments": []})
    call_command("provider_sync", str(batch.uuid))
    assert "seen 0" in capsys.readouterr().out


def run_action(client, changelist: str, action: str, objects) -> list[str]:
    """Post an admin action on the changelist as the logged-in user; the messages it left."""
    response = client.post(reverse(f"admin:annotation_{changelist}_changelist"),
                           {"action": action, "_selected_action": [o.pk for o in objects]},
                           follow=True)  # the changelist shows (and so consumes) the messages
    assert response.redirect_chain and response.status_code == 200
    return [str(m) for m in response.context["messages"]]


def test_extend_action_pushes_the_expiry_of_live_hits_by_the_batch_lifetime(mturk, admin_client_):
    batch = mturk_batch(n_tasks=2)
    launch(mturk, batch)
    lifetime = services.config_for(batch).lifetime_seconds
    for i in (1, 2):
        mturk.add_response("update_expiration_for_hit", {}, {"HITId": hit_id(i), "ExpireAt": ANY})
    before = timezone.now()
    notes = run_action(admin_client_, "marketplacebatch", "extend", [batch])
    assert notes == [f"{batch}: live units extended by its lifetime."]
    for hit in ProviderHit.objects.filter(batch=batch):
        assert hit.status == "live"
        assert before + timedelta(seconds=lifetime) <= hit.expires_at
        assert hit.expires_at <= timezone.now() + timedelta(seconds=lifetime)
    assert ProviderAction.objects.filter(action="extend", ok=True, actor="ada_admin").count() == 2
    # A paused batch has no live unit: nothing is sent (the Stubber fails on any call).
    mturk.add_response("update_expiration_for_hit", {}, {"HITId": hit_id(1), "ExpireAt": ANY})
    mturk.add_response("update_expiration_for_hit", {}, {"HITId": hit_id(2), "ExpireAt": ANY})
    services.batch_pause(batch)
    run_action(admin_client_, "marketplacebatch", "extend", [batch])


def test_worker_admin_blocks_and_unblocks_on_the_marketplace(mturk, admin_client_):
    turker, local = worker_for_external("mturk", "W7"), worker_for_external("local", "user-9")
    mturk.add_response("create_worker_block", {}, {"WorkerId": "W7",
                                                   "Reason": "Blocked by ada_admin"})
    notes = run_action(admin_client_, "worker", "block", [turker, local])
    assert notes == ["2 worker(s) blocked."]  # the local worker: our flag only, no call
    assert set(Worker.objects.values_list("blocked", flat=True)) == {True}
    assert ProviderAction.objects.get(action="block").target == "W7"
    mturk.add_response("delete_worker_block", {}, {"WorkerId": "W7"})
    assert run_action(admin_client_, "worker", "unblock", [turker, local]) == [
        "2 worker(s) unblocked."]
    assert set(Worker.objects.values_list("blocked", flat=True)) == {False}
    # A refused marketplace block is reported, and our own flag holds (the worker is refused
    # here either way).
    mturk.add_client_error("create_worker_block", "RequestError", "WorkerId is invalid.",
                           http_status_code=400)
    notes = run_action(admin_client_, "worker", "block", [turker])
    assert len(notes) == 1 and "not blocked on the marketplace" in notes[0]
    assert Worker.objects.get(pk=turker.pk).blocked
    assert ProviderAction.objects.filter(action="block", ok=False).count() == 1


def test_blocking_a_prolific_worker_puts_them_in_the_blocklist_group(admin_client_, prolific):
    participant = worker_for_external("prolific", "5f0c0ffee0c0ffee0c0ffee0")
    notes = run_action(admin_client_, "worker", "block", [participant])
    assert notes == ["1 worker(s) blocked."] and Worker.objects.get(pk=participant.pk).blocked
    assert prolific.group_named("vlmeval-blocklist")["members"] == {participant.external_id}
    assert ProviderAction.objects.get(action="block").ok


def test_qualification_grant_admin_revokes_and_the_push_takes_it_back(mturk, admin_client_):
    qual = Qualification.objects.create(name="Raters", provider_ids={"mturk": "3QUALX"})
    worker = worker_for_external("mturk", "W1")
    grant = qualification_grant(qualification=qual, worker=worker, now=timezone.now())
    mturk.add_response("associate_qualification_with_worker", {}, {
        "QualificationTypeId": "3QUALX", "WorkerId": "W1", "IntegerValue": 1,
        "SendNotification": False})
    assert services.qualification_push() == 1
    assert run_action(admin_client_, "qualificationgrant", "revoke", [grant]) == [
        "Revoked 1 grant(s)."]
    assert QualificationGrant.objects.get(pk=grant.pk).revoked
    assert run_action(admin_client_, "qualificationgrant", "revoke", [grant]) == [
        "Revoked 0 grant(s)."]
    mturk.add_response("disassociate_qualification_from_worker", {}, {
        "QualificationTypeId": "3QUALX", "WorkerId": "W1", "Reason": "Qualification revoked"})
    assert services.qualification_push() == 1


def test_notify_command_messages_the_batch_workers(mturk, capsys):
    batch = mturk_batch(n_tasks=1, n=2)
    launch(mturk, batch)
    task = batch.tasks.get()
    work(task, "W1", "ASG1")
    work(task, "W2", "ASG2")
    mturk.add_response("notify_workers", {"NotifyWorkersFailureStatuses": [
        {"NotifyWorkersFailureCode": "HardFailure", "NotifyWorkersFailureMessage": "gone",
         "WorkerId": "W2"}]},
        {"Subject": "Round 2", "MessageText": "A new batch is up.", "WorkerIds": ["W1", "W2"]})
    call_command("provider_notify", str(batch.uuid), "--subject", "Round 2",
                 "--message", "A new batch is up.")
    assert "not reached: W2" in capsys.readouterr().out
    assert ProviderAction.objects.get(action="notify").ok is False
    with pytest.raises(CommandError, match="No marketplace batch"):
        call_command("provider_notify", str(make_batch(1).uuid), "--subject", "s",
                     "--message", "m")
    with pytest.raises(CommandError, match="subject and a message"):
        call_command("provider_notify", str(batch.uuid), "--subject", " ", "--message", "m")


@pytest.mark.parametrize("command, extra", [("provider_launch", []),
                                            ("provider_pay", ["bonuses.csv"]),
                                            ("provider_notify", ["--subject", "s", "--message",
                                                                 "m"])])
def test_the_batch_commands_name_an_unknown_batch(command, extra):
    unknown = "00000000-0000-4000-8000-000000000000"
    kind = "marketplace batch" if command == "provider_notify" else "batch"
    with pytest.raises(CommandError, match=f"^No {kind} {unknown}$"):
        call_command(command, unknown, *extra)
    assert not ProviderAction.objects.exists()
