"""Votes of rejected work (``Judgment.rejected``): the readers that join to judgments from
another table, where ``Judgment.objects`` cannot leave them out, and the admin, which shows
them marked."""
import pytest
from django.urls import reverse
from django.utils import timezone

from judging.models import Comparison, Judgment
from judging.services.active_comparisons import _existing
from judging.services.comparisons import response_slots
from tests.judging import builders

pytestmark = pytest.mark.django_db


@pytest.fixture
def three_votes():
    ms = builders.models("m1", "m2")
    inst = builders.instance()
    comparison = Comparison.objects.create(
        instance=inst, response_a=builders.respond(inst, ms["m1"]),
        response_b=builders.respond(inst, ms["m2"]), sampling="uniform")
    for k in range(3):
        Judgment.objects.create(comparison=comparison, source=Judgment.HUMAN, annotator=f"w{k}",
                                choice="A", created_at=timezone.now())
    Judgment.objects.filter(annotator="w0").update(rejected=True)  # as its rejection would
    return comparison


def test_active_sampling_sees_only_the_votes_that_count(three_votes):
    assert [votes for *_, votes in _existing(response_slots(None))] == [2]


def test_the_admin_lists_rejected_votes_too(three_votes, admin_client_):
    html = admin_client_.get(reverse("admin:judging_judgment_changelist")).content.decode()
    assert "3 judgments" in html
    filtered = admin_client_.get(reverse("admin:judging_judgment_changelist") + "?rejected__exact=1")
    assert "1 judgment" in filtered.content.decode()


def test_a_feedback_task_still_shows_and_records_a_rejected_vote_s_feedback():
    from annotation.engine.hit_types import get_hit_type
    from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
    from annotation.engine.services.claims import task_claim_next
    from annotation.engine.services.submissions import assignment_submit
    from annotation.models import Batch
    from tests.factories import make_workers

    inst = builders.instance()
    response = builders.respond(inst, builders.models("LLaVA")["LLaVA"])
    scored = [Judgment.objects.create(response=response, kind="score", score=s, source="human",
                                      annotator=f"w{s}", feedback=f"Feedback scoring {s}.",
                                      created_at=timezone.now()) for s in (2, 4)]
    batch = batch_set_status(batch_create_from_rows(
        hit_type="feedback_ab", title="f", assignments_per_task=1, min_seconds=0,
        rows=[{"judgment_a": str(scored[0].uuid), "judgment_b": str(scored[1].uuid)}]),
        Batch.Status.ACTIVE)
    Judgment.objects.filter(pk=scored[0].pk).update(rejected=True)  # rejected after the batch
    task = batch.tasks.get()
    assert get_hit_type("feedback_ab").page_context(task)["feedback_a"] == "Feedback scoring 2."
    worker, = make_workers(1)
    assignment_submit(assignment=task_claim_next(batch=batch, worker=worker),
                      data={"choice": "B"})
    assert Judgment.objects.get(kind="feedback").meta["judgment_a"] == str(scored[0].uuid)
