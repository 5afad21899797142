"""Builders that go through the real services (no hand-made rows where a service exists)."""
import itertools
from decimal import Decimal

from annotation.models import Batch
from annotation.services.batches import batch_create_from_rows, batch_set_status
from annotation.services.workers import worker_for_external

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
        reward=options.pop("reward", Decimal("0.10")), **options,
    )
    if activate:
        batch_set_status(batch, Batch.Status.ACTIVE)
    return batch


def make_workers(count: int, provider: str = "local"):
    return [worker_for_external(provider, f"w{next(_ids)}") for _ in range(count)]
