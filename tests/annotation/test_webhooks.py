"""Webhooks against a real loopback receiver: signed bodies, retries with backoff, the delivery
log, refusals (private addresses, unset secrets), and events that roll back are never sent."""
import json
import threading
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone

from annotation.core.background import wait_for_jobs
from annotation.webhooks import signing
from annotation.webhooks.models import WebhookDelivery, WebhookEndpoint
from annotation.webhooks.services import (
    deliveries_retry_due,
    delivery_attempt,
    delivery_retry_now,
    retry_delay,
    webhook_emit,
    webhook_send_test,
)
from tests.support.webhook_receiver import SECRET, Receiver


def _endpoint(url, events=("batch.finished",), **kw):
    return WebhookEndpoint.objects.create(name=kw.pop("name", "ops"), url=url,
                                          events=list(events),
                                          secret_env=kw.pop("secret_env", "WEBHOOK_SECRET_TEST"),
                                          **kw)


def _make_due(delivery):
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        next_attempt_at=timezone.now() - timedelta(seconds=1))


@pytest.mark.django_db(transaction=True)
def test_an_emitted_event_arrives_signed_once_after_commit(receiver_factory):
    receiver = receiver_factory()
    _endpoint(receiver.url)
    _endpoint(receiver.url, events=["report.ready"], name="other")  # not subscribed
    with transaction.atomic():
        webhook_emit("batch.finished", {"batch": "b-1", "tasks": 3}, study=None)
        assert receiver.requests == []  # nothing leaves before the cause commits
    assert wait_for_jobs(10)
    assert len(receiver.requests) == 1
    request = receiver.requests[0]
    headers = {k.lower(): v for k, v in request["headers"].items()}
    assert signing.signature_valid(SECRET, headers["x-vlmeval-signature"], request["body"])
    assert not signing.signature_valid("wrong", headers["x-vlmeval-signature"], request["body"])
    assert not signing.signature_valid(SECRET, headers["x-vlmeval-signature"],
                                       request["body"] + b" ")
    body = json.loads(request["body"])
    assert body["event"] == "batch.finished" == headers["x-vlmeval-event"]
    assert body["data"] == {"batch": "b-1", "tasks": 3}
    delivery = WebhookDelivery.objects.get()
    assert body["id"] == str(delivery.uuid) == headers["x-vlmeval-delivery"]
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("delivered", 1, 200)


@pytest.mark.django_db(transaction=True)
def test_an_event_whose_cause_rolls_back_is_never_sent(receiver_factory):
    receiver = receiver_factory()
    _endpoint(receiver.url)
    with pytest.raises(RuntimeError):
        with transaction.atomic():
            webhook_emit("batch.finished", {"batch": "b-1"}, study=None)
            raise RuntimeError("the batch change failed")
    assert wait_for_jobs(10)
    assert receiver.requests == [] and not WebhookDelivery.objects.exists()


@pytest.mark.django_db
def test_failures_are_retried_with_growing_delays_then_given_up(receiver_factory):
    receiver = receiver_factory(statuses=(500, 503, 500))
    endpoint = _endpoint(receiver.url)
    delivery = WebhookDelivery.objects.create(endpoint=endpoint, event="batch.finished",
                                              payload={})
    before = timezone.now()
    first = delivery_attempt(delivery.pk)
    assert (first.status, first.attempts, first.last_status_code) == ("pending", 1, 500)
    assert first.next_attempt_at >= before + retry_delay(1)
    assert delivery_attempt(delivery.pk) is None  # not due yet: nothing sent
    assert deliveries_retry_due() == 0 and len(receiver.requests) == 1
    _make_due(delivery)
    assert deliveries_retry_due() == 1
    second = WebhookDelivery.objects.get(pk=delivery.pk)
    assert (second.attempts, second.last_status_code) == (2, 503)
    assert second.next_attempt_at - timezone.now() > retry_delay(1)  # the delay grew
    _make_due(delivery)
    deliveries_retry_due()
    last = WebhookDelivery.objects.get(pk=delivery.pk)
    assert (last.status, last.attempts, last.next_attempt_at) == ("failed", 3, None)
    assert len(receiver.requests) == 3
    # Every attempt carries the same delivery id, so a receiver can deduplicate.
    assert len({r["headers"]["X-VLMEval-Delivery"] for r in receiver.requests}) == 1


@pytest.mark.django_db
def test_a_failing_then_recovering_receiver_gets_it(receiver_factory):
    receiver = receiver_factory(statuses=(502, 204))
    delivery = WebhookDelivery.objects.create(endpoint=_endpoint(receiver.url),
                                              event="batch.finished", payload={"n": 1})
    delivery_attempt(delivery.pk)
    _make_due(delivery)
    call_command("webhooks_retry")
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("delivered", 2, 204)
    assert delivery.delivered_at is not None


def test_backoff_schedule():
    assert [retry_delay(n).total_seconds() for n in (1, 2, 3, 4)] == [30, 120, 480, 1920]
    assert retry_delay(30).total_seconds() == 6 * 3600


@pytest.mark.django_db
def test_redirects_are_not_followed(receiver_factory):
    receiver = receiver_factory(statuses=(302,))
    delivery = WebhookDelivery.objects.create(endpoint=_endpoint(receiver.url),
                                              event="batch.finished", payload={})
    result = delivery_attempt(delivery.pk)
    assert result.status == "pending" and "redirects are not followed" in result.last_error
    assert len(receiver.requests) == 1


@pytest.mark.django_db
def test_private_and_loopback_receivers_are_refused_by_default(settings, monkeypatch):
    monkeypatch.setenv("WEBHOOK_SECRET_TEST", SECRET)
    receiver = Receiver()
    try:
        for url in (receiver.url, "http://10.1.2.3/hook", "http://169.254.169.254/latest"):
            endpoint = _endpoint(url, name=url)
            delivery = WebhookDelivery.objects.create(endpoint=endpoint, event="batch.finished",
                                                      payload={})
            result = delivery_attempt(delivery.pk)
            assert result.last_status_code is None
            assert result.last_error.startswith("refused"), result.last_error
        assert receiver.requests == []
    finally:
        receiver.close()


@pytest.mark.django_db
def test_an_unset_secret_sends_nothing_and_says_so(receiver_factory, monkeypatch):
    receiver = receiver_factory()
    endpoint = _endpoint(receiver.url, secret_env="WEBHOOK_SECRET_MISSING")
    monkeypatch.delenv("WEBHOOK_SECRET_MISSING", raising=False)
    delivery = WebhookDelivery.objects.create(endpoint=endpoint, event="batch.finished",
                                              payload={})
    result = delivery_attempt(delivery.pk)
    assert "WEBHOOK_SECRET_MISSING is not set" in result.last_error
    assert receiver.requests == []


@pytest.mark.django_db
def test_endpoint_validation_refuses_other_secrets_and_unknown_events():
    bad = WebhookEndpoint(name="x", url="https://example.org/h", events=["batch.finished"],
                          secret_env="AWS_SECRET_ACCESS_KEY")
    with pytest.raises(ValidationError, match="WEBHOOK_SECRET_"):
        bad.full_clean()
    bad = WebhookEndpoint(name="x", url="https://example.org/h", events=["everything"],
                          secret_env="WEBHOOK_SECRET_X")
    with pytest.raises(ValidationError, match="events"):
        bad.full_clean()
    with pytest.raises(ValueError, match="unknown webhook event"):
        webhook_emit("batch.exploded", {}, study=None)


@pytest.mark.django_db(transaction=True)
def test_admin_ping_and_retry_now(receiver_factory, admin_client):
    receiver = receiver_factory(statuses=(500, 200))
    endpoint = _endpoint(receiver.url)
    webhook_send_test(endpoint)
    assert wait_for_jobs(10)
    delivery = WebhookDelivery.objects.get(event="ping")
    assert delivery.last_status_code == 500 and delivery.status == "pending"
    response = admin_client.post("/admin/annotation/webhookdelivery/",
                                 {"action": "retry_now", "_selected_action": [delivery.pk]})
    assert response.status_code == 302
    assert wait_for_jobs(10)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 2)
    assert admin_client.get("/admin/annotation/webhookdelivery/").status_code == 200
    assert delivery_retry_now(delivery) is False  # delivered stays delivered


@pytest.mark.django_db
def test_two_retriers_do_not_send_the_same_attempt_twice(receiver_factory):
    receiver = receiver_factory(statuses=(200,))
    delivery = WebhookDelivery.objects.create(endpoint=_endpoint(receiver.url),
                                              event="batch.finished", payload={})
    assert delivery_attempt(delivery.pk).status == "delivered"
    assert delivery_attempt(delivery.pk) is None
    assert len(receiver.requests) == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_retriers_send_each_attempt_once(receiver_factory):
    """Eight threads race for the same due deliveries: every delivery is sent exactly once."""
    from django.db import connection

    receiver = receiver_factory(statuses=(200,))
    endpoint = _endpoint(receiver.url)
    deliveries = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(endpoint=endpoint, event="batch.finished", payload={"i": i},
                        next_attempt_at=timezone.now() - timedelta(seconds=1))
        for i in range(10))
    barrier = threading.Barrier(8)

    def race():
        barrier.wait()
        try:
            deliveries_retry_due()
        finally:
            connection.close()

    threads = [threading.Thread(target=race) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(receiver.requests) == len(deliveries)
    assert set(WebhookDelivery.objects.values_list("status", "attempts")) == {("delivered", 1)}
