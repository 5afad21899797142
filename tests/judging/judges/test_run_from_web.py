"""Starting a judge run from the web page and the API: items chosen by batch, split and
source, the estimate shown against the budget, a run above it refused with nothing written."""
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from annotation.engine.services.batches import batch_create_from_rows
from annotation.models import Instance
from judging.judges.models import JudgeRun
from judging.judges.services import judge_estimate
from tests.judging.judges.conftest import make_comparison, make_judge, make_models

pytestmark = pytest.mark.django_db
PAGE = "/eval/judges/new/"
API = "/api/judges/runs/"


def _comparisons(n, source=""):
    m1, m2 = make_models("m1", "m2")
    made = [make_comparison(m1, m2) for _ in range(n)]
    if source:
        Instance.objects.filter(pk__in=[c.instance_id for c in made]).update(source=source)
    return made


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_page_shows_the_estimate_and_budget_then_starts(server, analyst, analyst_client):
    comparisons = _comparisons(3)
    judge = make_judge(server)
    expected = judge_estimate(judge=judge, item_uuids=[c.uuid for c in comparisons])
    form = {"judge": judge.uuid, "split": "all", "source": "", "budget": "5"}
    page = analyst_client.post(PAGE, form).content.decode()
    assert f"${expected.cost:.2f}" in page and "$5.00" in page
    assert "both (A–B and B–A)" in page and 'id="start-run"' in page
    assert not JudgeRun.objects.exists()  # pricing writes nothing
    started = analyst_client.post(PAGE, {**form, "start": "1"})
    run = JudgeRun.objects.get()
    assert started["Location"] == f"/eval/judges/runs/{run.uuid}/"
    assert (run.units_total, run.budget, run.created_by) == (6, Decimal("5"), analyst.username)
    assert run.estimated_cost == expected.cost


def test_a_run_above_its_budget_is_refused(server, analyst, analyst_client):
    _comparisons(2)
    judge = make_judge(server, price_in_per_1k=Decimal("100"))
    form = {"judge": judge.uuid, "split": "all", "budget": "0.01"}
    page = analyst_client.post(PAGE, form).content.decode()
    assert 'id="over-budget"' in page and 'id="start-run"' not in page
    refused = analyst_client.post(PAGE, {**form, "start": "1"})
    assert refused.status_code == 200 and "is above the budget $0.01" in refused.content.decode()
    answer = _api(analyst).post(API, {"judge": str(judge.uuid), "budget": "0.01"},
                                format="json")
    assert answer.status_code == 400 and "above the budget" in str(answer.json())
    assert not JudgeRun.objects.exists()


def test_items_by_source_split_and_batch(server, analyst, analyst_client):
    mine = _comparisons(2, source="visitbench")
    _comparisons(3, source="other")
    judge = make_judge(server)
    analyst_client.post(PAGE, {"judge": judge.uuid, "split": "single", "source": "visitbench",
                               "start": "1"})
    run = JudgeRun.objects.get()
    assert set(run.units.values_list("item", flat=True)) == {c.uuid for c in mine}
    batch = batch_create_from_rows(
        hit_type="pairwise_ab", title="Judged batch", assignments_per_task=1,
        reward=Decimal("0.10"), min_seconds=0,
        rows=[{"comparison": str(mine[0].uuid), "instruction": "Which is better?",
               "image_urls": ["https://example.org/x.png"], "response_a": "a", "response_b": "b"}])
    answer = _api(analyst).post(
        API, {"judge": str(judge.uuid), "batch": str(batch.uuid)}, format="json")
    assert answer.status_code == 201, answer.json()
    second = JudgeRun.objects.get(uuid=answer.json()["run"])
    assert list(second.units.values_list("item", flat=True).distinct()) == [mine[0].uuid]
    nothing = analyst_client.post(PAGE, {"judge": judge.uuid, "split": "multi"})
    assert "No item of this judge" in nothing.content.decode()


def test_only_analysts_and_admins_start_runs(server, alice, alice_client, admin):
    _comparisons(1)
    judge = make_judge(server)
    assert alice_client.get(PAGE).status_code == 403
    assert _api(alice).post(API, {"judge": str(judge.uuid)}, format="json").status_code == 403
    assert APIClient().post(API, {"judge": str(judge.uuid)}, format="json").status_code == 401
    assert _api(admin).post(API, {"judge": "not-a-uuid"}, format="json").status_code == 400
    assert not JudgeRun.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_run_started_from_the_api_is_judged_by_the_loopback_server(server, analyst):
    import threading
    import time

    _comparisons(2)
    server.responder = lambda body: "Overall, Response A is better."
    judge = make_judge(server)
    answer = _api(analyst).post(API, {"judge": str(judge.uuid), "budget": "1"}, format="json")
    assert answer.status_code == 201 and answer.json()["units_total"] == 4
    deadline = time.monotonic() + 60
    while jobs := [t for t in threading.enumerate() if t.name.startswith("job ")]:
        assert time.monotonic() < deadline, "the run did not finish"
        for thread in jobs:
            thread.join(max(0.0, deadline - time.monotonic()))
    run = JudgeRun.objects.get(uuid=answer.json()["run"])
    assert (run.status, run.units_done, run.calls_made) == (JudgeRun.Status.DONE, 4, 4)
