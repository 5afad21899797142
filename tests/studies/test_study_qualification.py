"""A study that requires a qualification: workers without it neither see its batches on their
home nor claim its tasks (page, API, direct URL); the worker pool stays the deployment's, so
the same worker still sees and claims another study's batches."""
import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.engine.services.qualifications import qualification_grant, qualification_revoke
from annotation.engine.services.workers import worker_for_user
from annotation.models import Assignment, Qualification
from tests.factories import make_batch
from tests.studies import builders

pytestmark = pytest.mark.django_db


@pytest.fixture
def gated():
    """A study requiring "Chart reader", with one active batch; and an open batch elsewhere."""
    study = builders.study("charts")
    study.required_qualification = Qualification.objects.create(name="Chart reader")
    study.save()
    return make_batch(2, n=1, study=study), make_batch(2, n=1)


def test_an_unqualified_worker_does_not_see_the_studys_batches(alice_client, gated):
    closed, open_ = gated
    html = alice_client.get(reverse("annotation:available")).content.decode()
    assert closed.title not in html
    assert reverse("annotation:batch_next", args=[open_.uuid]) in html


def test_the_direct_url_refuses_with_a_message_and_writes_nothing(alice_client, gated):
    closed, _ = gated
    response = alice_client.get(reverse("annotation:batch_next", args=[closed.uuid]))
    assert response.status_code == 403
    assert "This study requires the “Chart reader” qualification." in response.content.decode()
    assert not Assignment.objects.filter(batch=closed).exists()


def test_the_api_claim_is_refused_too(alice_client, gated):
    closed, open_ = gated
    response = alice_client.post(f"/api/my/assignments/claim/{closed.uuid}/")
    assert response.status_code == 403, response.content
    assert "Chart reader" in response.json()["detail"]
    assert not Assignment.objects.filter(batch=closed).exists()
    assert alice_client.post(f"/api/my/assignments/claim/{open_.uuid}/").status_code == 201


def test_a_granted_worker_sees_and_claims_and_a_revoked_one_no_longer_does(
        alice_client, alice, gated):
    closed, _ = gated
    worker = worker_for_user(alice)
    qualification = closed.study.required_qualification
    qualification_grant(qualification=qualification, worker=worker, now=timezone.now())
    html = alice_client.get(reverse("annotation:available")).content.decode()
    assert reverse("annotation:batch_next", args=[closed.uuid]) in html
    response = alice_client.get(reverse("annotation:batch_next", args=[closed.uuid]))
    assert response.status_code == 302
    assert Assignment.objects.filter(batch=closed, worker=worker).count() == 1
    qualification_revoke(qualification=qualification, worker=worker)
    assert closed.title not in alice_client.get(reverse("annotation:available")).content.decode()
