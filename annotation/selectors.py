"""Reads of the engine: progress, cost, worker statistics. No writes here."""
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, Q, Sum

from .models import Assignment, Batch, Task, Worker


@dataclass(frozen=True)
class BatchProgress:
    tasks: int
    slots: int  # tasks × N
    done: int  # counted submissions
    leased: int  # live leases
    remaining: int
    late_uncounted: int

    @property
    def percent(self) -> float:
        return 100.0 * self.done / self.slots if self.slots else 0.0


def batch_progress(batch: Batch) -> BatchProgress:
    tasks = Task.objects.filter(batch=batch).aggregate(
        n=Count("id"), slots=Sum("max_assignments")
    )
    counts = Assignment.objects.filter(batch=batch).aggregate(
        done=Count("id", filter=Q(counted=True)),
        leased=Count("id", filter=Q(status=Assignment.Status.LEASED)),
        late=Count("id", filter=Q(counted=False, late=True)),
    )
    slots = tasks["slots"] or 0
    return BatchProgress(
        tasks=tasks["n"],
        slots=slots,
        done=counts["done"],
        leased=counts["leased"],
        remaining=max(slots - counts["done"] - counts["leased"], 0),
        late_uncounted=counts["late"],
    )


def batch_cost(batch: Batch) -> dict[str, Decimal]:
    """Reward owed for counted work so far and the full-batch estimate (before provider fees)."""
    progress = batch_progress(batch)
    return {
        "spent": batch.reward * progress.done,
        "estimate": batch.reward * progress.slots,
    }


def worker_gold_accuracy(worker: Worker) -> tuple[int, int]:
    """(correct, total) over every gold task the worker answered."""
    row = Assignment.objects.filter(worker=worker, gold_correct__isnull=False).aggregate(
        total=Count("id"), correct=Count("id", filter=Q(gold_correct=True))
    )
    return row["correct"], row["total"]


def worker_position(batch: Batch, worker: Worker) -> tuple[int, int]:
    """("Task k of n") — k counts this worker's submitted tasks plus the current one.
    Two plain counts: folding them into one query of subqueries took more CPU to build."""
    submitted = Assignment.objects.filter(
        batch=batch, worker=worker, submitted_at__isnull=False
    ).count()
    total = Task.objects.filter(batch=batch).count()
    return min(submitted + 1, total), total


def batches_open_to(worker: Worker):
    return Batch.objects.filter(status=Batch.Status.ACTIVE).order_by("-created_at")
