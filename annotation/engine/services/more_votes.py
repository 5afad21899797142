"""Sending one task out for more votes (an analyst found its item disputed).

The task itself takes ``extra`` more assignments: its ``max_assignments`` rises by ``extra`` and
nothing else changes. So the invariants hold as they are: ``Assignment(task, worker)`` is unique,
hence the new votes come from workers who have not done this task (no one votes twice on the
item); the claim (``engine.statements.claim_next_task``) finds the task again because it looks for
``slots_taken < max_assignments``, and the slot count stays within the new N. A task in a new
follow-up batch would break the first rule: the same worker could claim the item there again.

A finished batch is reopened (active) for it, the one exception to "finished is final": the
analyst asking for more votes is the decision that the batch's work is not done. A paused or
draft batch stays as it is (its owner decides when it runs). Only local batches: on a
marketplace the extra assignments must be bought there, which this does not do.
"""
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F

from annotation.models import Batch, Task, Worker

MAX_EXTRA = 20
_N_LIMIT = 32767  # max_assignments is a PositiveSmallIntegerField


@transaction.atomic
def task_add_assignments(task: Task, extra: int) -> Task:
    """Raise ``task``'s N by ``extra`` (1..``MAX_EXTRA``), reopening its batch if finished.
    Returns the task as stored; ValidationError (nothing written) when it cannot be done."""
    if isinstance(extra, bool) or not isinstance(extra, int) or not 1 <= extra <= MAX_EXTRA:
        raise ValidationError(f"Ask for 1 to {MAX_EXTRA} more votes.")
    task = Task.objects.select_for_update().select_related("batch").get(pk=task.pk)
    batch = task.batch
    if task.is_gold:
        raise ValidationError("A gold task is an attention check; its answers are not votes.")
    if batch.provider != Worker.Provider.LOCAL:
        raise ValidationError(f"“{batch.title}” runs on {batch.get_provider_display()}: extra "
                              "assignments must be bought there.")
    if task.max_assignments + extra > _N_LIMIT:
        raise ValidationError(f"A task takes at most {_N_LIMIT} assignments.")
    Task.objects.filter(pk=task.pk).update(max_assignments=F("max_assignments") + extra)
    if batch.status == Batch.Status.FINISHED:
        Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.ACTIVE)
    return Task.objects.select_related("batch").get(pk=task.pk)
