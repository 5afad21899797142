"""A finished judge run tells webhook subscribers once, even when many lanes finish together."""
import pytest

from annotation.core.background import wait_for_jobs
from annotation.webhooks.models import WebhookDelivery, WebhookEndpoint
from judging.judges.services import judge_run_execute, judge_run_start
from tests.judging.judges.conftest import make_comparison, make_judge, make_models
from tests.support.webhook_receiver import signature_of

VERDICT = "Step 1: compared.\nOverall, Response A is better."


@pytest.mark.django_db(transaction=True)
def test_a_finished_run_is_announced_once(server, receiver_factory):
    receiver = receiver_factory()
    WebhookEndpoint.objects.create(name="ci", url=receiver.url, events=["judge_run.done"],
                                   secret_env="WEBHOOK_SECRET_TEST")
    m1, m2 = make_models("m1", "m2")
    comparisons = [make_comparison(m1, m2) for _ in range(6)]
    judge = make_judge(server)
    server.responder = lambda body: VERDICT
    run = judge_run_start(judge=judge, item_uuids=[c.uuid for c in comparisons], dispatch=False)
    judge_run_execute(run, concurrency=4)
    assert wait_for_jobs(10)
    delivery = WebhookDelivery.objects.get(event="judge_run.done")
    assert delivery.status == "delivered"
    assert delivery.payload["run"] == str(run.uuid)
    assert delivery.payload["units_done"] == delivery.payload["units_total"] == 12
    assert len(receiver.requests) == 1 and signature_of(receiver.requests[0])
