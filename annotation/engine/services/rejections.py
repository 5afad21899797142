"""What a rejection changes besides the assignment's status, in the transaction that flips it.

- The slot: rejected work gives back the task slot it held, so another worker can take it (the
  rejected worker keeps their assignment row, and ``one_assignment_per_worker`` never offers
  them that task again): a task's N distinct workers are reached by accepted work only.
  ``counted`` stays as it was (the work held a slot); done, spent and completion count
  ``Assignment.COUNTS_AS_DONE`` work (counted and not rejected).
- What the work produced: the HIT type's ``on_review_changed`` hook (a rating HIT's votes
  leave every count).

A finished local batch is reopened (active) for the freed slot, as for more votes
(``more_votes``): rejecting work is the decision that the batch's work is not done; the
completion sweep finishes it again once the slot is filled. On a marketplace the slot is free
here, but a new worker arrives only if the marketplace offers the unit again (MTurk: more
assignments on the HIT, bought there; not done here).

Reversing a rejection (MTurk's ``OverrideRejection``, within 30 days) puts both back. If
another worker took the freed slot meanwhile, the task is full: the reinstated work is kept
as an extra submission, uncounted like late work, but it was accepted, so its votes count
again (the task then has N + 1 votes).
"""
from django.db.models import F

from annotation.engine.hit_types import get_hit_type
from annotation.engine.services.claims import take_slot
from annotation.models import Assignment, Batch, Task, Worker


def rejection_applied(assignment: Assignment) -> None:
    """Call inside the transaction that flipped ``assignment`` to rejected."""
    assignment.refresh_from_db(fields=["counted", "status"])
    if assignment.counted:
        Task.objects.filter(pk=assignment.task_id).update(slots_taken=F("slots_taken") - 1)
        Batch.objects.filter(pk=assignment.batch_id, status=Batch.Status.FINISHED,
                             provider=Worker.Provider.LOCAL).update(status=Batch.Status.ACTIVE)
    get_hit_type(assignment.batch.hit_type).on_review_changed(assignment, rejected=True)


def rejection_reversed(assignment: Assignment) -> None:
    """Call inside the transaction that flipped ``assignment`` from rejected to approved."""
    assignment.refresh_from_db(fields=["counted", "status"])
    if assignment.counted and not take_slot(assignment.task_id):
        Assignment.objects.filter(pk=assignment.pk).update(counted=False)
        assignment.counted = False
    get_hit_type(assignment.batch.hit_type).on_review_changed(assignment, rejected=False)
