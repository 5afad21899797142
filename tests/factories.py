"""Builders that go through the real services (no hand-made rows where a service exists)."""
import itertools
from decimal import Decimal

from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
from annotation.engine.services.workers import worker_for_external
from annotation.models import Batch

_ids = itertools.count(1)


def pairwise_rows(n: int, *, gold_every: int = 0):
    rows = []
    for i in range(1, n + 1):
        row = {
            "instruction": f"Describe what is unusual in image {i}.",
            "image_urls": [f"https://example.org/img{i}.png"],
            "response_a": f"Answer A for item {i}.",
            "response_b": f"Answer B for item {i}.",
        }
        if gold_every and i % gold_every == 0:
            row["_gold_answer"] = {"choice": "A"}
        rows.append(row)
    return rows


def make_batch(n_tasks=3, *, n=5, activate=True, gold_every=0, **options) -> Batch:
    batch = batch_create_from_rows(
        hit_type="pairwise_ab", title=f"Batch {next(_ids)}",
        rows=pairwise_rows(n_tasks, gold_every=gold_every), assignments_per_task=n,
        reward=options.pop("reward", Decimal("0.10")),
        min_seconds=options.pop("min_seconds", 0), **options,
    )
    if activate:
        batch_set_status(batch, Batch.Status.ACTIVE)
    return batch


def make_workers(count: int, provider: str = "local"):
    return [worker_for_external(provider, f"w{next(_ids)}") for _ in range(count)]


def publish_on_mturk(batch: Batch, prefix: str = "3HIT") -> list[str]:
    """Record ``batch`` as launched on MTurk the way ``batch_launch`` does — a live HIT per
    task, ids ``3HIT1``, ``3HIT2``, … in task order (HIT ids are unique: give another batch
    another ``prefix``) — without the marketplace call; returns the
    HIT ids. Arrivals are accepted only for HITs recorded like this."""
    from django.utils import timezone

    from annotation.models import ProviderHit, Task

    Batch.objects.filter(pk=batch.pk).update(provider="mturk")
    batch.provider = "mturk"
    now, hits = timezone.now(), []
    for n, task in enumerate(batch.tasks.order_by("position"), start=1):
        hit_id = f"{prefix}{n}"
        ProviderHit.objects.create(batch=batch, task=task, provider="mturk",
                                   token=f"test-{task.uuid}", external_id=hit_id,
                                   max_assignments=task.max_assignments,
                                   status=ProviderHit.Status.LIVE, created_at=now,
                                   updated_at=now)
        Task.objects.filter(pk=task.pk).update(provider_hit_id=hit_id)
        hits.append(hit_id)
    return hits


def publish_on_prolific(batch: Batch, study: str = "study1") -> str:
    """Record ``batch`` as published as Prolific study ``study`` (as ``batch_launch`` does)."""
    from django.utils import timezone

    from annotation.models import ProviderHit

    Batch.objects.filter(pk=batch.pk).update(provider="prolific")
    batch.provider = "prolific"
    now = timezone.now()
    ProviderHit.objects.create(batch=batch, provider="prolific", token=f"test-{batch.uuid}",
                               external_id=study, max_assignments=batch.tasks.count(),
                               status=ProviderHit.Status.LIVE, created_at=now, updated_at=now)
    return study
