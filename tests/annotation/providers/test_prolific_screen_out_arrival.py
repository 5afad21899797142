"""Screen-out on arrival: a Prolific participant lacking the qualification a batch (or its study)
requires is sent back with the batch's screen-out code when the batch pays a screen-out, and
refused as before when it does not; local workers keep the plain refusal."""
from decimal import Decimal
from urllib.parse import urlencode

import pytest
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone

from annotation.engine.services.qualifications import qualification_grant
from annotation.engine.services.workers import worker_for_external
from annotation.models import Assignment, ProviderConfig, Qualification, ScreenOut, Task, Worker
from tests.factories import make_batch, publish_on_prolific
from tests.studies import builders

pytestmark = pytest.mark.django_db

QUALIFICATION = "<b>Chart</b> & reader"  # markup in a name must reach the page as text


def gated_batch(*, screen_out_reward: str | None = "0.50", on_study: bool = False):
    qualification = Qualification.objects.create(name=QUALIFICATION)
    if on_study:
        study = builders.study("charts")
        study.required_qualification = qualification
        study.save()
        batch = make_batch(2, n=1, study=study)
    else:
        batch = make_batch(2, n=1, required_qualification=qualification)
    publish_on_prolific(batch, "study1")
    ProviderConfig.objects.create(
        batch=batch, completion_code="C0DE1234",
        screen_out_reward=Decimal(screen_out_reward) if screen_out_reward else None)
    return batch, qualification


def arrive(batch, pid="PID1", session="SESS1"):
    url = reverse("annotation:prolific_batch", args=[batch.uuid])
    return Client().get(url, {"PROLIFIC_PID": pid, "STUDY_ID": "study1", "SESSION_ID": session})


def slots_taken(batch) -> int:
    return sum(Task.objects.filter(batch=batch).values_list("slots_taken", flat=True))


def screen_out_link(code: str) -> str:
    return f'href="https://app.prolific.com/submissions/complete?{urlencode({"cc": code})}"'


@pytest.mark.parametrize("on_study", [False, True])
@override_settings(PROLIFIC_COMPLETE_URL="https://app.prolific.com/submissions/complete",
                   PROLIFIC_CURRENCY="GBP")
def test_an_unqualified_participant_is_sent_back_with_the_screen_out_code(on_study):
    batch, _ = gated_batch(on_study=on_study)
    page = arrive(batch)
    html = page.content.decode()
    assert page.status_code == 200
    assert "You are not eligible for this study" in html
    assert "You will be paid £0.50 for your time." in html
    assert screen_out_link("SOC0DE1234") in html
    assert "&lt;b&gt;Chart&lt;/b&gt; &amp; reader" in html and "<b>Chart</b>" not in html
    # Recorded once, and no slot is held.
    record = ScreenOut.objects.get()
    assert (record.batch_id, record.session_id, record.study_id, record.reward) \
        == (batch.pk, "SESS1", "study1", Decimal("0.50"))
    assert record.worker.external_id == "PID1"
    assert slots_taken(batch) == 0 and not Assignment.objects.exists()
    # A reload shows the same page and records nothing new.
    again = arrive(batch)
    assert again.status_code == 200 and screen_out_link("SOC0DE1234") in again.content.decode()
    assert ScreenOut.objects.count() == 1


def test_a_qualified_participant_gets_the_task():
    batch, qualification = gated_batch()
    worker = worker_for_external(Worker.Provider.PROLIFIC, "PID1")
    qualification_grant(qualification=qualification, worker=worker, now=timezone.now())
    page = arrive(batch)
    assert page.status_code == 302
    assignment = Assignment.objects.get()
    assert page.url.startswith(reverse("annotation:assignment", args=[assignment.uuid]))
    assert assignment.worker_id == worker.pk and not ScreenOut.objects.exists()


def test_without_a_screen_out_reward_the_refusal_is_unchanged():
    batch, _ = gated_batch(screen_out_reward=None)
    page = arrive(batch)
    html = page.content.decode()
    assert page.status_code == 403
    assert "This batch requires the" in html and "SOC0DE1234" not in html
    assert not ScreenOut.objects.exists() and not Worker.objects.filter(provider="prolific")
    assert slots_taken(batch) == 0


def test_another_participant_cannot_reuse_a_screened_out_session():
    batch, _ = gated_batch()
    arrive(batch, pid="PID1", session="SESS1")
    page = arrive(batch, pid="PID2", session="SESS1")
    assert page.status_code == 403 and "SOC0DE1234" not in page.content.decode()
    assert ScreenOut.objects.get().worker.external_id == "PID1"


def test_a_local_worker_keeps_the_plain_refusal(alice_client):
    qualification = Qualification.objects.create(name=QUALIFICATION)
    batch = make_batch(2, n=1, required_qualification=qualification)
    ProviderConfig.objects.create(batch=batch, completion_code="C0DE1234",
                                  screen_out_reward=Decimal("0.50"))
    page = alice_client.get(reverse("annotation:batch_next", args=[batch.uuid]))
    html = page.content.decode()
    assert page.status_code == 403
    assert "This batch requires the" in html and "SOC0DE1234" not in html
    assert not ScreenOut.objects.exists() and not Assignment.objects.exists()
