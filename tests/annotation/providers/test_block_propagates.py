"""Blocking a worker reaches their marketplace on every path: the admin action, the worker
page, and the gold auto-block inside a submit (after its commit, in the background). A refused
marketplace block leaves our own block in place, says so, and can be retried."""
from decimal import Decimal

import pytest
from django.urls import reverse

from annotation.core.background import wait_for_jobs
from annotation.core.clients.errors import MarketplaceError
from annotation.engine.services.claims import task_claim_specific
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_block, worker_for_external
from annotation.models import ProviderAction, Worker
from annotation.providers import services
from annotation.providers.selectors import marketplace_block_state
from tests.factories import make_batch

from .test_admin_and_commands import run_action

pytestmark = pytest.mark.django_db(transaction=True)


def expect_block(mturk, worker_id, reason):
    mturk.add_response("create_worker_block", {}, {"WorkerId": worker_id, "Reason": reason})


def test_the_block_action_blocks_on_mturk_and_only_locally_for_local_workers(
        mturk, admin_client_):
    turker, local = worker_for_external("mturk", "W7"), worker_for_external("local", "user-9")
    expect_block(mturk, "W7", "Blocked by ada_admin")  # the Stubber fails on any other call
    notes = run_action(admin_client_, "worker", "block", [turker, local])
    assert notes == ["2 worker(s) blocked."]
    assert set(Worker.objects.values_list("blocked", flat=True)) == {True}
    log = ProviderAction.objects.get(action="block")
    assert (log.provider, log.target, log.ok, log.actor) == ("mturk", "W7", True, "ada_admin")
    assert marketplace_block_state(Worker.objects.get(pk=turker.pk)) == ("blocked", False)
    assert marketplace_block_state(local) == ("— (local account)", False)


def test_a_refused_marketplace_block_keeps_ours_is_reported_and_can_be_retried(
        mturk, admin_client_):
    turker = worker_for_external("mturk", "W8")
    mturk.add_client_error("create_worker_block", "ServiceUnavailable", "Try later.",
                           http_status_code=400)
    notes = run_action(admin_client_, "worker", "block", [turker])
    assert len(notes) == 1 and "not blocked on the marketplace" in notes[0]
    assert "Try later." in notes[0]
    turker.refresh_from_db()
    assert turker.blocked  # refused here whatever the marketplace said
    state, retry = marketplace_block_state(turker)
    assert state.startswith("block FAILED") and "Try later." in state and retry
    listing = admin_client_.get(reverse("admin:annotation_worker_changelist")).content.decode()
    assert "block FAILED" in listing
    # The retry sends the block again and the state follows the newest call.
    expect_block(mturk, "W8", "Blocked by ada_admin")
    assert run_action(admin_client_, "worker", "retry_marketplace_block", [turker]) == [
        "1 worker(s) blocked on their marketplace."]
    assert marketplace_block_state(Worker.objects.get(pk=turker.pk)) == ("blocked", False)
    assert list(ProviderAction.objects.filter(action="block").order_by("pk")
                .values_list("ok", flat=True)) == [False, True]


def test_the_worker_page_block_button_reaches_the_marketplace(mturk, admin_client_):
    turker = worker_for_external("mturk", "W9")
    url = reverse("admin:annotation_worker_overview", args=[turker.pk])
    expect_block(mturk, "W9", "Blocked by ada_admin")
    response = admin_client_.post(url, {"op": "block"}, follow=True)
    assert response.status_code == 200
    assert "1 worker(s) blocked." in [str(m) for m in response.context["messages"]]
    html = response.content.decode()
    assert 'id="worker-marketplace-block">blocked<' in html
    mturk.add_response("delete_worker_block", {}, {"WorkerId": "W9"})
    admin_client_.post(url, {"op": "unblock"})
    assert not Worker.objects.get(pk=turker.pk).blocked


def test_the_gold_auto_block_inside_a_submit_blocks_on_mturk_after_commit(mturk, settings):
    settings.AUTO_BLOCK_MIN_GOLD = 2
    batch = make_batch(2, n=1, provider="mturk", budget=Decimal("5"), gold_every=1,
                       auto_block_below=0.5)
    worker = worker_for_external("mturk", "WGOLD")
    reason = None
    for i, task in enumerate(batch.tasks.order_by("position")):
        wrong = "B" if task.gold_answer["choice"] == "A" else "A"
        lease = task_claim_specific(task=task, worker=worker, provider_assignment_id=f"A{i}",
                                    provider_hit_id="", submit_to="https://workersandbox.mturk.com")
        if i == 1:  # the second wrong gold answer blocks; only then is the call expected
            reason = "Gold accuracy 0/2 below 50% (batch " + batch.title + ")"
            expect_block(mturk, "WGOLD", reason)
        assignment_submit(assignment=lease, data={"choice": wrong})
    assert wait_for_jobs(timeout=30)
    worker.refresh_from_db()
    assert worker.blocked and worker.blocked_reason == reason
    log = ProviderAction.objects.get(action="block")
    assert (log.target, log.ok, log.actor) == ("WGOLD", True, "auto-block")


def test_an_auto_block_the_marketplace_refuses_is_logged_for_a_retry(mturk):
    worker = worker_for_external("mturk", "WX")
    mturk.add_client_error("create_worker_block", "RequestError", "Unknown worker.",
                           http_status_code=400)
    worker_block(worker, "Gold accuracy too low")  # outside a transaction: queued at once
    assert wait_for_jobs(timeout=30)
    assert Worker.objects.get(pk=worker.pk).blocked
    state, retry = marketplace_block_state(worker)
    assert "Unknown worker." in state and retry
    expect_block(mturk, "WX", "Gold accuracy too low")
    assert services.worker_marketplace_block(worker, actor="ops") is True


def test_prolific_block_and_unblock_keep_the_blocklist_group_in_sync(prolific):
    participant = worker_for_external("prolific", "P1")
    services.provider_worker_block(participant, reason="Spam", actor="ops")
    assert Worker.objects.get(pk=participant.pk).blocked
    assert prolific.group_named("vlmeval-blocklist")["members"] == {"P1"}
    assert marketplace_block_state(participant) == ("blocked", False)
    services.provider_worker_unblock(participant, actor="ops")
    assert prolific.group_named("vlmeval-blocklist")["members"] == set()
    assert len(prolific.groups) == 1  # one blocklist group per deployment, found again by name
    # An unblocked worker's queued block is not sent (unblocked before the job ran).
    assert services.worker_marketplace_block(participant) is False


def test_a_failed_prolific_block_is_visible_and_the_retry_fills_the_group(prolific):
    participant = worker_for_external("prolific", "P2")
    prolific.faults = [503] * 8  # the group look-up fails on every attempt
    with pytest.raises(MarketplaceError):
        services.provider_worker_block(participant, reason="Spam", actor="ops")
    assert Worker.objects.get(pk=participant.pk).blocked  # our own block holds
    state, needs_retry = marketplace_block_state(Worker.objects.get(pk=participant.pk))
    assert state.startswith("block FAILED") and needs_retry
    prolific.faults = []
    assert services.worker_marketplace_block(participant, actor="ops") is True
    assert prolific.group_named("vlmeval-blocklist")["members"] == {"P2"}
    assert marketplace_block_state(Worker.objects.get(pk=participant.pk)) == ("blocked", False)


def test_the_change_form_cannot_block_around_the_service(admin_client_):
    turker = worker_for_external("mturk", "WFORM")
    url = reverse("admin:annotation_worker_change", args=[turker.pk])
    saved = admin_client_.post(url, {"provider": "mturk", "external_id": "WFORM",
                                     "blocked": "on", "blocked_reason": "sneaky"})
    assert saved.status_code == 302  # the form was saved, without the read-only fields
    assert not Worker.objects.get(pk=turker.pk).blocked
