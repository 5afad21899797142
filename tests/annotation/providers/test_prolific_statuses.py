"""Every Prolific submission status, through sync and through signed hooks, against the
loopback Prolific server: a returned, timed-out or screened-out place releases our lease and
slot at once; an active one keeps them; awaiting review drives the review; rejections keep
Prolific's rules before any call."""
import json
import time

import pytest
from django.urls import reverse

from annotation.core.clients.errors import MarketplaceError
from annotation.models import Assignment, ProlificHookEvent, ProviderHit, Task
from annotation.providers import services
from annotation.providers.prolific.provider import ProlificProvider
from annotation.providers.prolific.signing import sign

from .test_prolific import arrive, prolific_batch, submit_via_pages

pytestmark = pytest.mark.django_db(transaction=True)
SECRET = "hook-secret-for-tests"


def launched(prolific, client, sessions):
    batch = prolific_batch(n_tasks=3, n=2)
    services.batch_launch(batch)
    study = ProviderHit.objects.get(batch=batch).external_id
    for pid, session in sessions:
        assert arrive(client, batch, pid, session, study).status_code == 302
    return batch, study


def slots(batch) -> int:
    return sum(Task.objects.filter(batch=batch).values_list("slots_taken", flat=True))


def status_of(session) -> str:
    return Assignment.objects.get(provider_assignment_id=session).status


@pytest.mark.parametrize(("remote", "ours", "released"), [
    ("RETURNED", "returned", True), ("TIMED-OUT", "expired", True),
    ("SCREENED OUT", "returned", True), ("ACTIVE", "leased", False),
    ("RESERVED", "leased", False)])
def test_sync_releases_the_lease_exactly_when_prolific_gave_the_place_back(
        prolific, client, remote, ours, released):
    batch, study = launched(prolific, client, [("PID1", "SESS1")])
    assert slots(batch) == 1
    prolific.add_submission(study, "SESS1", "PID1", status=remote)
    report = services.batch_sync(batch)
    assert status_of("SESS1") == ours and slots(batch) == (0 if released else 1)
    assert report.flagged == 0  # a place in progress or given back is not "not submitted"
    services.batch_sync(batch)  # a second sync changes nothing more
    assert slots(batch) == (0 if released else 1)


def test_a_returned_place_after_the_work_was_saved_keeps_the_vote(prolific, client):
    batch, study = launched(prolific, client, [])
    submit_via_pages(client, arrive(client, batch, "PID1", "SESS1", study))
    prolific.add_submission(study, "SESS1", "PID1", status="RETURNED")
    services.batch_sync(batch)
    assert status_of("SESS1") == "submitted" and slots(batch) == 1


def test_a_rejection_prolific_would_refuse_is_stopped_before_the_call(prolific):
    provider = ProlificProvider()
    before = len(prolific.requests)
    with pytest.raises(MarketplaceError, match="Unknown Prolific rejection category"):
        provider.reject("SESS1", "Wrong answers on the checks.", category="BAD_VIBES")
    with pytest.raises(MarketplaceError, match="at most 2000"):
        provider.reject("SESS1", "x" * 2001)
    with pytest.raises(MarketplaceError, match="needs a message"):
        provider.reject("SESS1", "   ")
    assert len(prolific.requests) == before  # nothing was sent


def test_a_rejection_sends_the_category_and_a_message_of_at_least_100_characters(prolific,
                                                                                  client):
    batch, study = launched(prolific, client, [])
    submit_via_pages(client, arrive(client, batch, "PID1", "SESS1", study))
    prolific.add_submission(study, "SESS1", "PID1")
    ProlificProvider().reject("SESS1", "Too fast.", category="too_quickly")
    (_, _, body), = prolific.calls("POST", "/api/v1/submissions/SESS1/transition/")
    assert body["rejection_category"] == "TOO_QUICKLY" and len(body["message"]) >= 100
    assert body["message"].startswith("Too fast.")


# --- hooks -------------------------------------------------------------------------------
def post_hook(client, payload, *, secret=SECRET, event_id="evt-1", timestamp=None,
              signature=None):
    body = json.dumps(payload).encode()
    ts = str(int(time.time()) if timestamp is None else timestamp)
    headers = {"HTTP_X_PROLIFIC_REQUEST_TIMESTAMP": ts,
               "HTTP_X_PROLIFIC_REQUEST_SIGNATURE": signature or sign(secret, ts, body)}
    if event_id:
        headers["HTTP_X_EVENT_ID"] = event_id
    return client.post(reverse("annotation:prolific_hook"), body,
                       content_type="application/json", **headers)


def event(session, status, participant="PID1"):
    return {"event_type": "submission.status.change", "resource_id": session,
            "status": status, "participant_id": participant}


@pytest.fixture
def hook_secret(settings):
    settings.PROLIFIC_HOOK_SECRET = SECRET


@pytest.mark.parametrize(("remote", "ours"), [("RETURNED", "returned"),
                                              ("TIMED-OUT", "expired")])
def test_a_signed_hook_releases_the_lease_at_once_and_a_replay_changes_nothing(
        prolific, client, hook_secret, remote, ours):
    batch, _ = launched(prolific, client, [("PID1", "SESS1"), ("PID2", "SESS2")])
    answer = post_hook(client, event("SESS1", remote))
    assert answer.status_code == 200 and answer.content == b"Applied."
    assert status_of("SESS1") == ours and status_of("SESS2") == "leased" and slots(batch) == 1
    # The same event again (a redelivery, or a replay inside the window): acknowledged, ignored.
    again = post_hook(client, event("SESS1", remote))
    assert again.status_code == 200 and again.content == b"Already applied."
    assert ProlificHookEvent.objects.count() == 1 and slots(batch) == 1


@pytest.mark.parametrize("forgery", ["wrong secret", "stale", "future", "no timestamp",
                                     "tampered body"])
def test_a_forged_or_replayed_hook_is_refused_and_writes_nothing(prolific, client,
                                                                  hook_secret, forgery):
    batch, _ = launched(prolific, client, [("PID1", "SESS1")])
    payload = event("SESS1", "RETURNED")
    if forgery == "wrong secret":
        answer = post_hook(client, payload, secret="guessed")
    elif forgery == "stale":
        answer = post_hook(client, payload, timestamp=int(time.time()) - 301)
    elif forgery == "future":
        answer = post_hook(client, payload, timestamp=int(time.time()) + 301)
    elif forgery == "no timestamp":
        answer = post_hook(client, payload, timestamp="")
    else:
        ts = str(int(time.time()))
        signed_for = json.dumps(event("SESS1", "ACTIVE")).encode()
        answer = post_hook(client, payload, timestamp=ts,
                           signature=sign(SECRET, ts, signed_for))
    assert answer.status_code == 403
    assert status_of("SESS1") == "leased" and slots(batch) == 1
    assert not ProlificHookEvent.objects.exists()


def test_hooks_are_refused_while_no_secret_is_configured(prolific, client, settings):
    settings.PROLIFIC_HOOK_SECRET = ""
    launched(prolific, client, [("PID1", "SESS1")])
    assert post_hook(client, event("SESS1", "RETURNED"), secret="").status_code == 403
    assert status_of("SESS1") == "leased"


def test_a_hook_without_an_event_id_or_with_an_unknown_status_is_a_bad_request(
        prolific, client, hook_secret):
    launched(prolific, client, [("PID1", "SESS1")])
    assert post_hook(client, event("SESS1", "RETURNED"), event_id="").status_code == 400
    assert post_hook(client, event("SESS1", "LOST"), event_id="e2").status_code == 400
    assert post_hook(client, {"event_type": "study.status.change"},
                     event_id="e3").status_code == 200  # not ours to act on
    assert status_of("SESS1") == "leased" and not ProlificHookEvent.objects.exists()


def test_awaiting_review_by_hook_runs_the_review_now(prolific, client, hook_secret):
    batch, study = launched(prolific, client, [])  # review policy "auto"
    submit_via_pages(client, arrive(client, batch, "PID1", "SESS1", study))
    prolific.add_submission(study, "SESS1", "PID1")
    assert post_hook(client, event("SESS1", "AWAITING REVIEW")).status_code == 200
    assert prolific.submissions[study][0]["status"] == "APPROVED"  # no sync was run
    assert status_of("SESS1") == "approved"
