"""Reads of the engine: progress, cost, worker statistics. No writes here."""
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, Q, Sum

from annotation.core import sql
from annotation.models import Assignment, Batch, Task, Worker


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
    """("Task k of n") — k counts this worker's submitted tasks plus the current one."""
    submitted, total = sql.submitted_and_total(batch.pk, worker.pk)
    return min(submitted + 1, total), total


def assignment_with_context(assignment_uuid) -> Assignment | None:
    """The assignment with its task, batch and worker loaded — what every task page and submit
    starts from — in one hand-written statement (the hot path: see annotation.core.sql)."""
    return sql.assignment_with_context(assignment_uuid)


def batches_open_to(worker: Worker):
    return Batch.objects.filter(status=Batch.Status.ACTIVE).order_by("-created_at")
