"""A batch whose work is all done finishes by itself, and says so.

Done means: it has tasks, every task's slots are taken and no lease is outstanding (every
assignment is submitted, or returned/expired and its slot freed). The sweep runs on Celery beat
(or ``manage.py provider_sync``); finishing is a conditional update, so a batch is announced
once however many sweeps overlap. ``batch_announce_finished`` is also what an admin's
"finish" calls.
"""
from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q

from annotation.models import Assignment, Batch, Task
from annotation.webhooks.services import webhook_emit


def batch_announce_finished(batch: Batch, *, how: str) -> None:
    """Tell webhook subscribers that ``batch`` finished (inside the caller's transaction)."""
    counts = Assignment.objects.filter(batch=batch).aggregate(
        counted=Count("id", filter=Assignment.COUNTS_AS_DONE), late=Count("id", filter=Q(late=True)))
    webhook_emit("batch.finished", {
        "batch": batch.uuid, "title": batch.title, "hit_type": batch.hit_type,
        "provider": batch.provider, "how": how, "tasks": batch.tasks.count(), **counts},
        study=batch.study_id)


def _completed(batches):
    open_task = Task.objects.filter(batch=OuterRef("pk"), slots_taken__lt=F("max_assignments"))
    leased = Assignment.objects.filter(batch=OuterRef("pk"), status=Assignment.Status.LEASED)
    has_task = Task.objects.filter(batch=OuterRef("pk"))
    return (batches.filter(status=Batch.Status.ACTIVE).filter(Exists(has_task))
            .exclude(Exists(open_task)).exclude(Exists(leased)))


def batches_finish_completed() -> int:
    """Finish every active batch with no work left; returns how many finished.

    Each candidate is locked and checked again before it finishes: whoever adds tasks to a
    running batch (the pipeline) locks the batch row too, so a task added meanwhile is seen
    here, and a batch finished here is seen there (it then opens a new one)."""
    finished = 0
    for pk in _completed(Batch.objects.all()).values_list("pk", flat=True):
        with transaction.atomic():
            batch = Batch.objects.select_for_update().get(pk=pk)
            if not _completed(Batch.objects.filter(pk=pk)).exists():
                continue
            Batch.objects.filter(pk=pk).update(status=Batch.Status.FINISHED)
            batch.status = Batch.Status.FINISHED
            batch_announce_finished(batch, how="completed")
            finished += 1
    return finished
