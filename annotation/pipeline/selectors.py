"""Reads for the pipeline dashboard and the verification report."""
from __future__ import annotations

from django.db.models import Count, F, Q

from annotation.models import Batch, Instance, Task
from annotation.pipeline.report import table2
from annotation.pipeline.services import HIT_INSTRUCTION, PUSHABLE

Stage, Status, Reason = Instance.Stage, Instance.ReferenceStatus, Instance.RejectionReason


def verification_counts(source: str | None = None) -> dict[str, dict[str, int]]:
    """Outcomes of LLM references that people rated (imported ratings or verification HITs):
    a human-written or unrated reference is not an LLM answer anyone judged, so it stays out."""
    rows = Instance.objects.filter(
        kind__in=[Instance.Kind.SINGLE, Instance.Kind.MULTI],
        reference_status__in=[Status.VERIFIED, Status.REJECTED],
    ).exclude(reference_rated_by=Instance.RatedBy.NOBODY)
    if source:
        rows = rows.filter(source=source)
    rows = (
        rows.values("kind")
        .annotate(
            verified=Count("pk", filter=Q(reference_status=Status.VERIFIED)),
            rejected=Count("pk", filter=Q(reference_status=Status.REJECTED)),
            caption=Count("pk", filter=Q(reference_status=Status.REJECTED,
                                         rejection_reason=Reason.CAPTION)),
            response=Count("pk", filter=Q(reference_status=Status.REJECTED,
                                          rejection_reason=Reason.RESPONSE)),
        )
    )
    return {row.pop("kind"): row for row in rows}


def verification_report(source: str | None = None) -> dict:
    return table2(verification_counts(source))


def stage_counts() -> list[dict]:
    """One row per stage: instances, of which with a crowd task queued, and waiting."""
    base = Instance.objects.exclude(kind=Instance.Kind.CONVERSATION)
    by_stage = {row["stage"]: row for row in base.values("stage").annotate(
        total=Count("pk"), queued=Count("pk", filter=Q(stage_task__isnull=False)),
        verified=Count("pk", filter=Q(reference_status=Status.VERIFIED)),
        rejected=Count("pk", filter=Q(reference_status=Status.REJECTED)),
    )}
    open_instruction_tasks = Task.objects.filter(
        batch__hit_type=HIT_INSTRUCTION, batch__status=Batch.Status.ACTIVE,
        slots_taken__lt=F("max_assignments"),
    ).count()
    rows = [{"stage": "instruction", "label": "Instruction generation", "total":
             open_instruction_tasks, "queued": open_instruction_tasks, "waiting": 0,
             "pushable": False}]
    for stage, label in Stage.choices:
        row = by_stage.get(stage, {"total": 0, "queued": 0, "verified": 0, "rejected": 0})
        waiting = row["total"] if stage == Stage.REFERENCE else row["total"] - row["queued"]
        rows.append({"stage": stage, "label": label.capitalize(), "total": row["total"],
                     "queued": row["queued"] if stage != Stage.REFERENCE else 0,
                     "waiting": waiting if stage != Stage.DONE else 0,
                     "verified": row.get("verified", 0), "rejected": row.get("rejected", 0),
                     "pushable": stage in PUSHABLE})
    return rows
