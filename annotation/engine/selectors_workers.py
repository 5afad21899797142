"""Reads for one worker's record: what they submitted, per batch, how fast, how accurately on
gold, and how often they agree with the other workers on the same tasks. No writes.

A fixed number of queries whatever the worker's history (two for the summary), so the admin's
worker page stays cheap; the arithmetic is in the pure functions at the bottom.
"""
import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count

from annotation.models import Assignment, Worker

DONE = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED, Assignment.Status.REJECTED)


@dataclass(frozen=True)
class BatchLine:
    batch_id: int
    title: str
    submitted: int  # every submitted answer, reviewed or not
    by_status: dict[str, int]


@dataclass(frozen=True)
class Agreement:
    """Tasks where this worker's answer equals the most common answer of the *other* workers."""

    agreed: int = 0
    compared: int = 0
    ties: int = 0  # tasks left out: the others' most common answer was tied
    alone: int = 0  # tasks left out: nobody else answered

    @property
    def rate(self) -> float | None:
        return self.agreed / self.compared if self.compared else None


@dataclass(frozen=True)
class WorkerSummary:
    submitted: int
    batches: list[BatchLine]
    median_seconds: float | None
    gold_correct: int
    gold_total: int
    agreement: Agreement

    @property
    def gold_accuracy(self) -> float | None:
        return self.gold_correct / self.gold_total if self.gold_total else None


def worker_person(worker: Worker) -> str:
    """Who did the work, as people know them: a local account's username, else the
    marketplace's worker id (an account since deleted shows its stored id)."""
    if worker.provider == Worker.Provider.LOCAL and worker.user_id is not None:
        return worker.user.get_username()
    return worker.external_id


def worker_display(worker: Worker) -> str:
    """The person with their marketplace named (``anna``, ``A1B2C3 (Mechanical Turk)``)."""
    person = worker_person(worker)
    if worker.provider == Worker.Provider.LOCAL and worker.user_id is not None:
        return person
    return f"{person} ({worker.get_provider_display()})"


def worker_summary(worker: Worker) -> WorkerSummary:
    """Everything the worker page shows above the assignment list, in two queries."""
    rows = list(Assignment.objects.filter(worker=worker).values_list(
        "task_id", "batch_id", "batch__title", "status", "answer", "seconds_spent",
        "gold_correct"))
    done = [r for r in rows if r[3] in DONE]
    own_tasks = Assignment.objects.filter(worker=worker, status__in=DONE).values("task_id")
    others = Assignment.objects.filter(task_id__in=own_tasks, status__in=DONE).exclude(
        worker=worker).values_list("task_id", "answer") if done else []
    lines: dict[int, list] = {}
    for _task, batch_id, title, status, *_ in rows:
        line = lines.setdefault(batch_id, [title, Counter()])
        line[1][status] += 1
    gold = [r[6] for r in done if r[6] is not None]
    return WorkerSummary(
        submitted=len(done),
        batches=[BatchLine(batch_id, title, sum(counts[s] for s in DONE), dict(counts))
                 for batch_id, (title, counts) in sorted(lines.items())],
        median_seconds=median([r[5] for r in done]),
        gold_correct=sum(gold), gold_total=len(gold),
        agreement=majority_agreement({r[0]: r[4] for r in done}, others),
    )


def worker_assignments(worker: Worker):
    """The worker's assignments, newest first, with what a list row shows (no per-row query)."""
    return (Assignment.objects.filter(worker=worker).select_related("batch", "task")
            .order_by("-claimed_at", "-pk"))


def worker_batches_awaiting_review(worker: Worker) -> list[dict]:
    """The batches where the worker has work awaiting review (``uuid``, ``title``, ``n``): what
    blocking them can reject in the same step."""
    rows = (Assignment.objects.filter(worker=worker, status=Assignment.Status.SUBMITTED)
            .order_by("batch__title").values_list("batch__uuid", "batch__title")
            .annotate(n=Count("id")))
    return [{"uuid": uuid, "title": title, "n": n} for uuid, title, n in rows]


# --- pure ---------------------------------------------------------------------------------------

def median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _key(answer) -> str:
    return json.dumps(answer, sort_keys=True, separators=(",", ":"))


def majority_agreement(own: dict, others: Iterable[tuple]) -> Agreement:
    """``own``: task → this worker's answer; ``others``: (task, answer) of the other workers.

    Per task, the majority is the others' most common answer (answers equal as JSON values); a
    tie for most common, or a task nobody else answered, is left out of the rate.
    """
    votes: dict = defaultdict(Counter)
    for task, answer in others:
        votes[task][_key(answer)] += 1
    agreed = compared = ties = alone = 0
    for task, answer in own.items():
        counts = votes.get(task)
        if not counts:
            alone += 1
            continue
        top = counts.most_common(2)
        if len(top) == 2 and top[0][1] == top[1][1]:
            ties += 1
            continue
        compared += 1
        agreed += int(top[0][0] == _key(answer))
    return Agreement(agreed=agreed, compared=compared, ties=ties, alone=alone)
