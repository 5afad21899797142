"""A worker reports a problem with a task instead of answering it.

The report is stored for the reviewer and the worker's lease is given back as a skip in the
same transaction: no vote is recorded, the slot reopens for someone else, and the worker is not
offered the task again. Only a task the worker still holds can be reported (one report per
assignment), so a report can never stand beside that assignment's answer.
"""
from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.core.db_text import storage_problem
from annotation.engine.services.submissions import assignment_return
from annotation.models import Assignment, TaskProblem

NOTE_MAX = 1000


def task_problem_report(*, assignment: Assignment, category: str, note: str = "") -> TaskProblem:
    """Record ``assignment``'s worker's report and give the task back. ValidationError, and
    nothing written, for an unknown category, an over-long or unstorable note, or a task the
    worker no longer holds."""
    if category not in TaskProblem.Category.values:
        raise ValidationError("Choose what is wrong with the task.")
    note = (note or "").strip()
    if len(note) > NOTE_MAX:
        raise ValidationError(f"The note is {len(note)} characters; at most {NOTE_MAX}.")
    if (problem := storage_problem(note)) is not None:
        raise ValidationError(f"The note cannot be stored: {problem}.")
    with transaction.atomic():
        if not assignment_return(assignment=assignment):
            raise ValidationError("This task is no longer yours to report (it was submitted, "
                                  "skipped or its time ran out).")
        return TaskProblem.objects.create(
            assignment=assignment, task_id=assignment.task_id, batch_id=assignment.batch_id,
            worker_id=assignment.worker_id, category=category, note=note)
