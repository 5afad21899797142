"""Rejections on MTurk reach the votes as local ones do: the reason goes out as
RequesterFeedback, the override as ApproveAssignment(OverrideRejection=True), and a rejection
made on MTurk's own site and mirrored by the sync takes the votes out too (and one overridden
there puts them back)."""
from decimal import Decimal

import pytest
from botocore.stub import ANY

from annotation.engine.services.batches import batch_set_status
from annotation.models import Assignment, Batch, Task
from annotation.providers import services
from judging.models import Comparison, Judgment
from judging.services.comparisons import comparison_batch_create
from tests.factories import publish_on_mturk
from tests.judging import builders

from .test_mturk import remote, work

pytestmark = pytest.mark.django_db(transaction=True)


def _mturk_votes():
    """One comparison on MTurk, N=2, two workers' votes (A and B)."""
    ms = builders.models("alpha", "beta")
    inst = builders.instance()
    comparison = Comparison.objects.create(instance=inst,
                                           response_a=builders.respond(inst, ms["alpha"]),
                                           response_b=builders.respond(inst, ms["beta"]))
    batch = comparison_batch_create(comparisons=[comparison], title="On MTurk",
                                    judgments_per_comparison=2, reward=Decimal("0.10"),
                                    budget=Decimal("5"), min_seconds=0)
    batch_set_status(batch, Batch.Status.ACTIVE)
    hit, = publish_on_mturk(batch)
    task = batch.tasks.get()
    return hit, task, work(task, "W1", "ASG1", "A"), work(task, "W2", "ASG2", "B")


def _counted_choices() -> list[str]:
    return sorted(Judgment.objects.values_list("choice", flat=True))


def test_the_reason_is_requester_feedback_and_the_override_puts_the_vote_back(mturk):
    _, task, _, b = _mturk_votes()
    mturk.add_response("reject_assignment", {}, {"AssignmentId": "ASG2",
                                                 "RequesterFeedback": "Did not read it."})
    assert services.assignment_reject(b, reason="Did not read it.") is True
    assert _counted_choices() == ["A"]
    assert Task.objects.get(pk=task.pk).slots_taken == 1  # open for a third worker

    mturk.add_response("approve_assignment", {}, {"AssignmentId": "ASG2",
                                                  "RequesterFeedback": "Our mistake, sorry.",
                                                  "OverrideRejection": True})
    assert services.assignment_approve(b, feedback="Our mistake, sorry.",
                                       override_rejection=True) is True
    assert _counted_choices() == ["A", "B"]
    assert Task.objects.get(pk=task.pk).slots_taken == 2
    row = Assignment.objects.get(pk=b.pk)
    assert (row.status, row.counted, row.review_note) == ("approved", True, "Our mistake, sorry.")


def test_a_rejection_made_on_mturk_and_synced_takes_the_vote_out(mturk):
    hit, task, _, b = _mturk_votes()
    mturk.add_response("list_assignments_for_hit", {"Assignments": [
        remote("ASG1", "W1", hit), remote("ASG2", "W2", hit, status="Rejected")]},
        {"HITId": hit, "MaxResults": 100, "AssignmentStatuses": ANY})
    services.batch_sync(Batch.objects.get(pk=task.batch_id))
    assert Assignment.objects.get(pk=b.pk).status == "rejected"
    assert _counted_choices() == ["A"]
    assert Task.objects.get(pk=task.pk).slots_taken == 1


def test_a_rejection_overridden_on_mturk_and_synced_puts_the_vote_back(mturk):
    hit, task, _, b = _mturk_votes()
    mturk.add_response("reject_assignment", {}, {"AssignmentId": "ASG2",
                                                 "RequesterFeedback": "Did not read it."})
    services.assignment_reject(b, reason="Did not read it.")
    mturk.add_response("list_assignments_for_hit", {"Assignments": [
        remote("ASG1", "W1", hit), remote("ASG2", "W2", hit, status="Approved")]},
        {"HITId": hit, "MaxResults": 100, "AssignmentStatuses": ANY})
    services.batch_sync(Batch.objects.get(pk=task.batch_id))
    assert Assignment.objects.get(pk=b.pk).status == "approved"
    assert _counted_choices() == ["A", "B"]
    assert Task.objects.get(pk=task.pk).slots_taken == 2
