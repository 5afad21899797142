"""A batch whose work is all done finishes by itself, once, and webhook subscribers hear of
it; an admin's finish is announced too."""
import pytest

from annotation.core.background import wait_for_jobs
from annotation.engine.services.batches import batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.completion import batches_finish_completed
from annotation.engine.services.submissions import assignment_submit
from annotation.models import Batch
from annotation.webhooks.models import WebhookDelivery, WebhookEndpoint
from tests.factories import make_batch, make_workers


def _work(batch, workers, *, leave_one_leased=False):
    for k, worker in enumerate(workers):
        while (a := task_claim_next(batch=batch, worker=worker)) is not None:
            if leave_one_leased and k == len(workers) - 1:
                return a
            assignment_submit(assignment=a, data={"choice": "A"})
    return None


@pytest.mark.django_db(transaction=True)
def test_a_completed_batch_finishes_once_and_is_announced(receiver_factory):
    receiver = receiver_factory()
    WebhookEndpoint.objects.create(name="ops", url=receiver.url, events=["batch.finished"],
                                   secret_env="WEBHOOK_SECRET_TEST")
    batch, busy = make_batch(2, n=2), make_batch(2, n=2)
    _work(batch, make_workers(2))
    _work(busy, make_workers(2), leave_one_leased=True)  # a lease still out: not done
    assert batches_finish_completed() == 1
    assert batches_finish_completed() == 0  # once
    assert Batch.objects.get(pk=batch.pk).status == Batch.Status.FINISHED
    assert Batch.objects.get(pk=busy.pk).status == Batch.Status.ACTIVE
    assert wait_for_jobs(10)
    delivery = WebhookDelivery.objects.get()
    assert delivery.payload["batch"] == str(batch.uuid) and delivery.payload["counted"] == 4
    assert delivery.payload["how"] == "completed" and delivery.status == "delivered"


@pytest.mark.django_db
def test_an_admin_finish_is_announced_and_a_stale_change_refused():
    WebhookEndpoint.objects.create(name="ops", url="https://hooks.example.org/x",
                                   events=["batch.finished"], secret_env="WEBHOOK_SECRET_TEST")
    batch = make_batch(1, n=1)
    stale = Batch.objects.get(pk=batch.pk)
    batch_set_status(batch, Batch.Status.FINISHED)
    assert WebhookDelivery.objects.get().payload["how"] == "finished by an admin"
    with pytest.raises(Exception, match="changed meanwhile"):
        batch_set_status(stale, Batch.Status.PAUSED)  # still "active" in memory
    assert Batch.objects.get(pk=batch.pk).status == Batch.Status.FINISHED


@pytest.mark.django_db
def test_the_pipeline_opens_a_new_batch_when_its_batch_finished_under_it(monkeypatch):
    """The sweep finishes the stage batch between the pipeline's lookup and its lock: the task
    goes to a new, active batch, never into the finished one."""
    from annotation.models import Instance
    from annotation.pipeline import services

    first = services.pipeline_batch("instruction_caption")
    real, calls = services.pipeline_batch, []

    def finished_under_it(hit_type, study=None):
        calls.append(hit_type)
        if len(calls) == 1:  # the lookup saw it active; the sweep finishes it now
            Batch.objects.filter(pk=first.pk).update(status=Batch.Status.FINISHED)
            return first
        return real(hit_type, study)

    monkeypatch.setattr(services, "pipeline_batch", finished_under_it)
    instance = Instance.objects.create(instruction="Count the squares.",
                                       stage=Instance.Stage.CAPTIONING)
    task = services._queue_stage_task(instance, Instance.Stage.CAPTIONING, "instruction_caption")
    assert task is not None and task.batch_id != first.pk and len(calls) == 2
    assert Batch.objects.get(pk=task.batch_id).status == Batch.Status.ACTIVE
