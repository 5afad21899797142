"""Prolific provider against a real loopback HTTP server speaking its REST API."""
from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

import pytest
from django.urls import reverse

from annotation.core.clients.errors import MarketplaceError
from annotation.models import Assignment, Bonus, ProviderHit, ProviderSubmission
from annotation.providers import services
from annotation.providers.prolific.provider import study_token
from tests.factories import make_batch

pytestmark = pytest.mark.django_db(transaction=True)


def prolific_batch(n_tasks=2, n=2, budget="50.00"):
    batch = make_batch(n_tasks, n=n, activate=False, provider="prolific", budget=Decimal(budget),
                       reward=Decimal("0.80"))
    config = services.config_for(batch)
    config.review_policy = "auto"
    config.save()
    return batch


def arrive(client, batch, pid, session, study):
    url = reverse("annotation:prolific_batch", args=[batch.uuid])
    return client.get(url, {"PROLIFIC_PID": pid, "STUDY_ID": study, "SESSION_ID": session})


def submit_via_pages(client, arrival, choice="A"):
    """Follow the arrival redirect, post the answer with the token, post the completion form."""
    page_url = arrival["Location"]
    token = parse_qs(urlsplit(page_url).query)["t"][0]
    done = client.post(page_url.split("?")[0], {"choice": choice, "t": token})
    assert done.status_code == 200
    html = done.content.decode()
    action = html.split('action="', 1)[1].split('"', 1)[0]
    session = html.split('name="assignmentId" value="', 1)[1].split('"', 1)[0]
    return client.post(action, {"assignmentId": session})


def test_launch_creates_and_publishes_one_study_and_relaunch_reuses_it(prolific):
    batch = prolific_batch()
    report = services.batch_launch(batch)
    assert (report.total, report.created) == (1, 1)
    (study,) = prolific.studies.values()
    assert study["status"] == "ACTIVE" and study["internal_name"] == study_token(batch.uuid)
    assert study["external_study_url"] == (
        f"https://eval.example.org/ext/prolific/batch/{batch.uuid}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
        "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")
    assert study["total_available_places"] == 4 and study["reward"] == 80
    assert study["completion_codes"][0]["code"] == batch.provider_config.completion_code
    # Lost answer: our row has no study id yet; the re-run finds the study by its name.
    ProviderHit.objects.filter(batch=batch).update(external_id="", status="creating")
    again = services.batch_launch(batch)
    assert (again.created, again.reused) == (0, 1) and len(prolific.studies) == 1
    assert len(prolific.calls("POST", "/api/v1/studies/")) == 2  # one create + one publish


def test_arrival_claims_one_task_per_session_and_redirects_with_the_code(prolific, client):
    batch = prolific_batch()
    services.batch_launch(batch)
    study = ProviderHit.objects.get(batch=batch).external_id
    arrival = arrive(client, batch, "PID1", "SESS1", study)
    assert arrival.status_code == 302
    again = arrive(client, batch, "PID1", "SESS1", study)
    # same assignment page (the signed token carries a timestamp, so compare the path)
    assert again["Location"].split("?")[0] == arrival["Location"].split("?")[0]
    assert arrive(client, batch, "PID2", "SESS1", study).status_code == 403  # someone else's
    assert arrive(client, batch, "PID2", "SESS2", "otherstudy").status_code == 400
    done = submit_via_pages(client, arrival)
    code = batch.provider_config.completion_code
    assert f"https://app.prolific.com/submissions/complete?cc={code}" in done.content.decode()
    a = Assignment.objects.get(provider_assignment_id="SESS1")
    assert a.status == "submitted" and a.worker.external_id == "PID1" and a.counted
    # The completion view answers only for saved work.
    assert client.post(reverse("annotation:prolific_done", args=[batch.uuid]),
                       {"assignmentId": "SESS-NOPE"}).status_code == 400


def test_sync_pages_through_submissions_and_approves_or_flags(prolific, client):
    batch = prolific_batch()
    services.batch_launch(batch)
    study = ProviderHit.objects.get(batch=batch).external_id
    for pid, session in (("PID1", "SESS1"), ("PID2", "SESS2")):
        submit_via_pages(client, arrive(client, batch, pid, session, study))
    prolific.add_submission(study, "SESS1", "PID1")
    prolific.add_submission(study, "SESS2", "PIDX")  # Prolific disagrees about the participant
    prolific.add_submission(study, "SESS3", "PID3", status="RETURNED")  # never came here
    prolific.add_submission(study, "SESS4", "PID4")  # "done" there, unknown here
    report = services.batch_sync(batch)
    assert (report.seen, report.flagged, report.approved) == (4, 2, 1)
    assert ProviderSubmission.objects.get(external_id="SESS3").flag == ""  # a place given back
    assert ProviderSubmission.objects.get(external_id="SESS4").flag == "unknown"
    assert [r[1] for r in prolific.calls("GET", f"/api/v1/studies/{study}/submissions/")] == [
        f"/api/v1/studies/{study}/submissions/"] * 2  # page 1, then the next link
    assert prolific.submissions[study][0]["status"] == "APPROVED"
    assert prolific.submissions[study][1]["status"] == "AWAITING REVIEW"
    assert ProviderSubmission.objects.get(external_id="SESS2").flag == "worker_mismatch"


def test_reject_sends_a_long_enough_message(prolific, client):
    batch = prolific_batch()
    services.batch_launch(batch)
    study = ProviderHit.objects.get(batch=batch).external_id
    submit_via_pages(client, arrive(client, batch, "PID1", "SESS1", study))
    prolific.add_submission(study, "SESS1", "PID1")
    a = Assignment.objects.select_related("batch", "worker").get()
    assert services.assignment_reject(a, reason="Wrong on the check items.") is True
    assert prolific.submissions[study][0]["status"] == "REJECTED"
    assert Assignment.objects.get().review_note == "Wrong on the check items."


def test_bonus_pays_once_and_an_unanswered_pay_is_never_repeated(prolific, client):
    batch = prolific_batch()
    services.batch_launch(batch)
    study = ProviderHit.objects.get(batch=batch).external_id
    for pid, session in (("PID1", "SESS1"), ("PID2", "SESS2")):
        submit_via_pages(client, arrive(client, batch, pid, session, study))
    a1, a2 = Assignment.objects.select_related("batch", "worker").order_by("provider_assignment_id")
    bonus = services.worker_bonus(a1, amount="1.00", reason="Thorough")
    assert bonus.status == "paid" and len(prolific.pays) == 1
    (setup,) = prolific.bonus_setups.values()
    assert setup == {"id": bonus.external_id, "study_id": study, "csv_bonuses": "SESS1,1.00\n"}
    services.worker_bonus(a1, amount="1.00", reason="Thorough")
    assert len(prolific.pays) == 1
    prolific.drop_next_pay = True  # the pay goes through, the answer is lost
    with pytest.raises(MarketplaceError):
        services.worker_bonus(a2, amount="1.00", reason="Thorough")
    assert Bonus.objects.get(assignment=a2).status == Bonus.Status.UNCERTAIN
    with pytest.raises(MarketplaceError, match="may have been paid"):
        services.worker_bonus(a2, amount="1.00", reason="Thorough")
    assert len(prolific.pays) == 2  # never a third


def test_pause_resume_and_stop_transition_the_study(prolific):
    batch = prolific_batch()
    services.batch_launch(batch)
    (study,) = prolific.studies.values()
    services.batch_pause(batch)
    assert study["status"] == "PAUSED"
    services.batch_resume(batch)
    assert study["status"] == "ACTIVE"
    services.batch_expire(batch)
    assert study["status"] == "COMPLETED"
    batch.refresh_from_db()
    assert batch.status == "finished"
