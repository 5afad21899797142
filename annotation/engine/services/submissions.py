"""Submitting and returning assignments.

Submit is atomic and idempotent: the assignment row is locked, an already-submitted assignment
returns its stored answer unchanged, and the HIT type's hook (e.g. recording a judgment) runs in
the same transaction, so an answer is either fully recorded once or not at all.

Late rule: a submission after the lease expired is accepted and counted only if the task still
has a free slot; otherwise it is kept, marked late and not counted.

The page's telemetry (``_telemetry``) is taken out of the data before the HIT's form sees it,
checked, and stored with the answer, with the quality flags computed in the same transaction
(``services/quality.py``); neither ever refuses an answer.
"""
from copy import copy
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation.core.db_text import storage_problem
from annotation.core.sql import save_if
from annotation.engine.hit_types import get_hit_type
from annotation.engine.services.claims import take_slot
from annotation.engine.services.errors import AnswerInvalid, NotSubmittable, TooFast
from annotation.engine.services.qualifications import qualification_evaluate
from annotation.engine.services.quality import submit_flags, telemetry_clean, telemetry_split
from annotation.engine.services.workers import worker_block
from annotation.models import Assignment, Task


@dataclass(frozen=True)
class SubmitOutcome:
    assignment: Assignment
    duplicate: bool  # True when this was a repeat of an earlier, stored submission


def assignment_submit(
    *, assignment: Assignment, data, telemetry=None, now: datetime | None = None
) -> SubmitOutcome:
    """Validate ``data`` with the HIT type's form and store it as the assignment's answer.
    ``telemetry`` (an API client's) wins over a ``_telemetry`` field in ``data`` (a page's)."""
    now = now or timezone.now()
    data, posted = telemetry_split(data)
    measured = telemetry_clean(posted if telemetry is None else telemetry)
    batch = assignment.batch
    hit = get_hit_type(batch.hit_type)
    if assignment.status in _DONE:
        return SubmitOutcome(assignment, duplicate=True)
    # The cheap check first: cleaning may fetch an image (instruction generation).
    spent = (now - assignment.claimed_at).total_seconds()
    if spent < batch.min_seconds:
        raise TooFast(
            f"Please take at least {batch.min_seconds} seconds to read the task "
            f"({batch.min_seconds - int(spent)} s to go)."
        )
    # Nothing a column cannot hold goes further: cleaning may already write (an instruction's
    # image is fetched and stored), and a refused answer must leave no row behind.
    if (problem := storage_problem(data)) is not None:
        raise AnswerInvalid(f"The answer cannot be stored: {problem}.")
    try:
        answer = hit.clean_answer(data, task=assignment.task)
    except ValidationError as exc:
        # The form's message may echo the input: say what is unstorable instead of echoing it.
        problem = storage_problem(data)
        raise AnswerInvalid(f"The answer cannot be stored: {problem}." if problem
                            else "; ".join(exc.messages)) from exc
    if (problem := storage_problem(answer)) is not None:  # e.g. "\ud800" in an API answer
        raise AnswerInvalid(f"The answer cannot be stored: {problem}.")
    with transaction.atomic():
        quality = {"telemetry": measured, "flags": submit_flags(
            assignment=assignment, hit=hit, answer=answer, telemetry=measured, spent=spent)}
        locked = _submit_if_leased(assignment, hit, answer, now, spent, quality)
        if locked is None:  # expired, returned or already submitted meanwhile: read and decide
            locked = Assignment.objects.select_for_update().select_related("task").get(
                pk=assignment.pk
            )
            if locked.status in _DONE:
                return SubmitOutcome(locked, duplicate=True)
            if locked.status == Assignment.Status.RETURNED:
                raise NotSubmittable("You returned this task; it can no longer be submitted.")
            # A lease past its deadline still holds its slot; an expired one must find a free one.
            counted = locked.status == Assignment.Status.LEASED or take_slot(locked.task_id)
            _record_answer(locked, hit, answer, now, spent, quality, counted=counted)
            locked.save(update_fields=_ANSWER_FIELDS)
        if locked.counted:
            hit.on_submitted(locked)
        if locked.gold_correct is not None:
            _auto_block(locked)
        if batch.grants_qualification_id:
            qualification_evaluate(batch=batch, worker=locked.worker, now=now)
    return SubmitOutcome(locked, duplicate=False)


_ANSWER_FIELDS = ["status", "answer", "submitted_at", "seconds_spent", "counted", "late",
                  "gold_correct", "telemetry", "flags"]


def _submit_if_leased(assignment, hit, answer, now, spent, quality):
    """The common case in one compare-and-set UPDATE: the row is still the lease this request
    read (status and deadline unchanged), so it becomes a counted submission. None otherwise."""
    if assignment.status != Assignment.Status.LEASED:
        return None
    submitted = copy(assignment)  # the caller's instance stays as read if this rolls back
    _record_answer(submitted, hit, answer, now, spent, quality, counted=True)
    where = {"status": Assignment.Status.LEASED, "expires_at": assignment.expires_at}
    return submitted if save_if(submitted, _ANSWER_FIELDS, where) else None


def _record_answer(assignment, hit, answer, now, spent, quality, *, counted: bool) -> None:
    assignment.late = assignment.status == Assignment.Status.EXPIRED or assignment.expires_at <= now
    assignment.status = Assignment.Status.SUBMITTED
    assignment.answer = answer
    assignment.submitted_at = now
    assignment.seconds_spent = spent
    assignment.counted = counted
    assignment.telemetry = quality["telemetry"]
    assignment.flags = quality["flags"]
    task = assignment.task
    if task.is_gold and task.gold_answer is not None:
        assignment.gold_correct = hit.is_correct(answer, task.gold_answer)


def assignment_return(*, assignment: Assignment, now: datetime | None = None) -> bool:
    """Give a leased task back (skip). The worker is never offered it again."""
    with transaction.atomic():
        flipped = Assignment.objects.filter(
            pk=assignment.pk, status=Assignment.Status.LEASED
        ).update(status=Assignment.Status.RETURNED)
        if flipped:
            Task.objects.filter(pk=assignment.task_id).update(slots_taken=F("slots_taken") - 1)
    return bool(flipped)


_DONE = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED, Assignment.Status.REJECTED)


def _auto_block(assignment: Assignment) -> None:
    threshold = assignment.batch.auto_block_below
    if threshold is None:
        return
    from annotation.engine.selectors import worker_gold_accuracy

    correct, total = worker_gold_accuracy(assignment.worker)
    if total >= settings.AUTO_BLOCK_MIN_GOLD and correct / total < threshold:
        worker_block(
            assignment.worker,
            f"Gold accuracy {correct}/{total} below {threshold:.0%} (batch {assignment.batch.title})",
        )
