"""Celery tasks of the pipeline: ids in, one service, safe to run twice (queued on commit)."""
from __future__ import annotations

import random

from celery import shared_task

from annotation.content.imports.images import image_fetch_pending
from annotation.core.clients.llm import LlmError
from annotation.pipeline.services import reference_generate

MAX_RETRIES = 5


def retry_countdown(retries: int, rnd: random.Random | None = None) -> float:
    """Exponential backoff with full jitter: up to 30 s, 60 s, 120 s … capped at 15 minutes."""
    ceiling = min(900.0, 30.0 * 2 ** retries)
    return (rnd or random).uniform(ceiling / 2, ceiling)


@shared_task(bind=True, name="annotation.pipeline.generate_reference", max_retries=MAX_RETRIES,
             acks_late=True)
def generate_reference(self, instance_id: int) -> str:
    try:
        return reference_generate(instance_id)
    except LlmError as exc:  # only retryable ones reach here
        if self.request.is_eager:
            # Eager mode (no broker, laptop) propagates Retry instead of re-running; re-run here,
            # without the countdown, as a worker would after it.
            if self.request.retries >= self.max_retries:
                raise
            return self.apply(args=(instance_id,), retries=self.request.retries + 1).get()
        raise self.retry(exc=exc, countdown=retry_countdown(self.request.retries)) from exc


@shared_task(name="annotation.pipeline.fetch_image")
def fetch_image(image_id: int) -> str:
    return image_fetch_pending(image_id)
