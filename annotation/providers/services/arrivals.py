"""A marketplace worker's arrival at a task we published: what this deployment published is
checked, then the worker row and the claim are written in one transaction, so a refusal or a
failure leaves no lease and no worker row. Any marketplace whose unit is one task (MTurk's HIT,
a test's toy marketplace) arrives through ``task_arrival_claim``; a marketplace that sends
workers to a batch keeps its own arrival service (``prolific.arrival``)."""
from datetime import datetime

from django.db import transaction

from annotation.engine.services.claims import task_claim_specific
from annotation.engine.services.errors import EngineError
from annotation.engine.services.workers import worker_for_external
from annotation.models import Assignment, Task
from annotation.providers.selectors import published_hit


class HitNotPublished(EngineError):
    """An arrival for a unit (HIT) this deployment did not publish for the task."""


def task_arrival_claim(*, provider: str, task: Task, worker_id: str, assignment_id: str,
                       hit_id: str, submit_to: str,
                       now: datetime | None = None) -> Assignment | None:
    """The ``provider`` worker's lease of ``task`` under ``assignment_id``
    (``task_claim_specific``: idempotent per task and worker); ``None`` when the task has no
    slot left.

    Raises ``HitNotPublished`` unless ``hit_id`` is the unit this deployment created for the
    task on ``provider``; ``AssignmentConflict`` / ``NotEligible`` from the claim, writing
    nothing.
    """
    if not published_hit(task, provider, hit_id):
        raise HitNotPublished("This HIT was not published for this task.")
    with transaction.atomic():
        worker = worker_for_external(provider, worker_id)
        return task_claim_specific(task=task, worker=worker, provider_assignment_id=assignment_id,
                                   provider_hit_id=hit_id, submit_to=submit_to, now=now)
