"""Celery tasks for webhooks: each takes ids, calls one service, is safe to run twice (a
delivery that is not due is left alone)."""
from celery import shared_task

from annotation.webhooks.services import deliveries_retry_due, delivery_attempt


@shared_task(name="annotation.webhooks.deliver")
def deliver(delivery_id: int) -> str:
    delivery = delivery_attempt(delivery_id)
    return "not due" if delivery is None else delivery.status


@shared_task(name="annotation.webhooks.retry_due")
def retry_due() -> int:
    return deliveries_retry_due()
