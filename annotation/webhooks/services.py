"""Emitting webhook events and delivering them: one service per operation.

``webhook_emit`` writes one delivery row per subscribed endpoint inside the caller's
transaction (an event whose cause rolls back is never sent) and queues the first attempt once
it commits. ``delivery_attempt`` claims a due delivery with a conditional update (two
retriers never send the same attempt twice), posts the signed body outside any transaction,
and records the outcome: delivered on 2xx, otherwise another attempt after a growing delay
until ``WEBHOOK_MAX_ATTEMPTS``. Receivers deduplicate on ``X-VLMEval-Delivery`` — a delivery
can arrive twice if the process dies between the receiver's answer and our record of it.
"""
from __future__ import annotations

import json
import os
from datetime import timedelta

import httpx
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.core.image_fetch import ImageFetchError, tls_context, vetted_target
from annotation.webhooks import signing
from annotation.webhooks.models import EVENTS, WebhookDelivery, WebhookEndpoint
from studies.models import study_pk

USER_AGENT = "vlmeval-webhooks/1.0"
FIRST_DELAY = 30  # seconds before the second attempt; ×4 per attempt after that
MAX_DELAY = 6 * 3600
CLAIM_GRACE = 60  # a claimed attempt is due again this long after its timeout (process died)


def retry_delay(attempts: int) -> timedelta:
    """Delay after the ``attempts``-th failed attempt: 30 s, 2 min, 8 min, 32 min, … ≤ 6 h."""
    return timedelta(seconds=min(FIRST_DELAY * 4 ** max(attempts - 1, 0), MAX_DELAY))


def webhook_emit(event: str, payload: dict, *, study) -> list[WebhookDelivery]:
    """Record ``event`` of ``study`` (a Study or its id; None: the default study) for every
    active endpoint of that study that subscribes to it — another study's endpoint never hears
    of it; the first attempts start after the surrounding transaction commits."""
    if event not in EVENTS:
        raise ValueError(f"unknown webhook event {event!r}; known: {', '.join(sorted(EVENTS))}")
    body = json.loads(json.dumps(payload, cls=DjangoJSONEncoder))  # UUIDs, dates → JSON now
    endpoints = [e for e in WebhookEndpoint.objects.filter(active=True, study_id=study_pk(study))
                 if event in e.events]
    deliveries = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(endpoint=e, event=event, payload=body) for e in endpoints)
    if deliveries:
        ids = [d.pk for d in deliveries]
        transaction.on_commit(lambda: _queue(ids))
    return deliveries


def _queue(delivery_ids: list[int]) -> None:
    from annotation.core.background import run_each_outside_request
    from annotation.webhooks.tasks import deliver

    run_each_outside_request(deliver, [[pk] for pk in delivery_ids])


def delivery_attempt(delivery_id: int) -> WebhookDelivery | None:
    """Send one due delivery once; None when it is not due (delivered, failed, or another
    process holds this attempt)."""
    now = timezone.now()
    hold = now + timedelta(seconds=settings.WEBHOOK_TIMEOUT + CLAIM_GRACE)
    due = Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now)
    claimed = (WebhookDelivery.objects
               .filter(due, pk=delivery_id, status=WebhookDelivery.Status.PENDING)
               .update(next_attempt_at=hold))
    if not claimed:
        return None
    delivery = WebhookDelivery.objects.select_related("endpoint").get(pk=delivery_id)
    code, error = _post(delivery)
    delivery.attempts += 1
    delivery.last_status_code = code
    delivery.last_error = error[:500]
    if code is not None and 200 <= code < 300:
        delivery.status = WebhookDelivery.Status.DELIVERED
        delivery.delivered_at = timezone.now()
        delivery.next_attempt_at = None
    elif delivery.attempts >= settings.WEBHOOK_MAX_ATTEMPTS:
        delivery.status = WebhookDelivery.Status.FAILED
        delivery.next_attempt_at = None
    else:
        delivery.next_attempt_at = timezone.now() + retry_delay(delivery.attempts)
    delivery.save(update_fields=["attempts", "last_status_code", "last_error", "status",
                                 "delivered_at", "next_attempt_at"])
    return delivery


def deliveries_retry_due(limit: int = 100) -> int:
    """Attempt every pending delivery whose time has come (the beat task and the
    ``webhooks_retry`` command call this); returns how many were attempted."""
    now = timezone.now()
    ids = list(WebhookDelivery.objects
               .filter(status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now)
               .order_by("next_attempt_at").values_list("pk", flat=True)[:limit])
    return sum(delivery_attempt(pk) is not None for pk in ids)


def delivery_retry_now(delivery: WebhookDelivery) -> bool:
    """An admin's "retry now": a failed or waiting delivery becomes due at once (a failed one
    gets one more attempt) and is queued; False for one already delivered."""
    made_due = WebhookDelivery.objects.filter(pk=delivery.pk).exclude(
        status=WebhookDelivery.Status.DELIVERED).update(
        status=WebhookDelivery.Status.PENDING, next_attempt_at=timezone.now(),
        attempts=min(delivery.attempts, settings.WEBHOOK_MAX_ATTEMPTS - 1))
    if made_due:
        transaction.on_commit(lambda: _queue([delivery.pk]))
    return bool(made_due)


def webhook_send_test(endpoint: WebhookEndpoint) -> WebhookDelivery:
    """A ``ping`` to one endpoint (whatever it subscribes to), queued at once."""
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint, event="ping", payload={"endpoint": endpoint.name})
    transaction.on_commit(lambda: _queue([delivery.pk]))
    return delivery


def _post(delivery: WebhookDelivery) -> tuple[int | None, str]:
    """(HTTP status or None, error text). Redirects are not followed; the address rule is
    the image fetch's (no loopback, private or link-local address)."""
    endpoint = delivery.endpoint
    secret = os.environ.get(endpoint.secret_env, "")
    if not secret:
        return None, f"environment variable {endpoint.secret_env} is not set"
    body = json.dumps({"id": str(delivery.uuid), "event": delivery.event,
                       "created_at": delivery.created_at.isoformat(),
                       "data": delivery.payload}, sort_keys=True).encode()
    try:
        target, addresses = vetted_target(endpoint.url,
                                          allow_loopback=settings.WEBHOOK_ALLOW_LOOPBACK)
    except ImageFetchError as exc:
        return None, f"refused: {exc.message}"
    headers = {"Host": target.host_header, "User-Agent": USER_AGENT,
               "Content-Type": "application/json", "X-VLMEval-Event": delivery.event,
               "X-VLMEval-Delivery": str(delivery.uuid),
               signing.HEADER: signing.signature_header(secret, body)}
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    error = "no address answered"
    with httpx.Client(timeout=settings.WEBHOOK_TIMEOUT, follow_redirects=False,
                      trust_env=False, verify=tls_context()) as client:
        for ip in addresses:
            try:
                response = client.post(target.pinned_url(ip), content=body, headers=headers,
                                       extensions=extensions)
            except httpx.ConnectError as exc:
                error = f"cannot connect: {exc}"
                continue
            except httpx.HTTPError as exc:
                return None, f"{type(exc).__name__}: {exc}"
            note = "" if response.is_success else f"HTTP {response.status_code}" + (
                " (redirects are not followed)" if response.is_redirect else "")
            return response.status_code, note
    return None, error
