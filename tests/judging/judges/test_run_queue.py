"""Judge runs pass the job caps (``annotation.core.jobs``) when they are queued: an identical run
is handed back, a run past a cap is refused with nothing written, and a resume from the page or
the API is refused the same way (a 429 with Retry-After from the API). Runs a command works in
its own process (``dispatch=False``) are not queued, so not refused."""
import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.core.jobs import JobsBusy
from judging.judges.models import JudgeRun, JudgeUnit
from judging.judges.services import judge_run_execute, judge_run_start
from tests.judging.judges.conftest import make_comparison, make_judge, make_models

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _caps(settings):
    settings.JOBS_MAX_PER_USER, settings.JOBS_MAX_GLOBAL, settings.JOBS_RETRY_AFTER = 2, 3, 20


def _items(n=2):
    m1, m2 = make_models("m1", "m2")
    return [make_comparison(m1, m2).uuid for _ in range(n)]


def test_queued_runs_are_deduplicated_and_capped(server):
    # (The test's transaction never commits, so queued runs stay pending: nothing runs.)
    judge, items = make_judge(server), _items(3)
    first = judge_run_start(judge=judge, item_uuids=items, created_by="ann")
    same = judge_run_start(judge=judge, item_uuids=list(reversed(items)), created_by="ann")
    assert same.pk == first.pk and JudgeRun.objects.count() == 1
    judge_run_start(judge=judge, item_uuids=items[:1], created_by="ann")
    with pytest.raises(JobsBusy) as refused:
        judge_run_start(judge=judge, item_uuids=items[1:], created_by="ann")
    assert refused.value.retry_after == 20 and "you already have 2 jobs" in refused.value.message
    assert JudgeRun.objects.count() == 2 and JudgeUnit.objects.count() == 3 * 2 + 2
    judge_run_start(judge=judge, item_uuids=items[1:], created_by="bob")  # 3rd: global cap
    with pytest.raises(JobsBusy, match="the server is busy with 3 jobs"):
        judge_run_start(judge=judge, item_uuids=items[2:], created_by="cy")
    assert judge_run_start(judge=judge, item_uuids=items[2:], created_by="cy", dispatch=False)


def test_a_resume_past_the_cap_is_refused_on_the_page_and_the_api(server, admin,
                                                                   admin_client_):
    judge, items = make_judge(server), _items(3)
    server.responder = lambda body: "Overall, Response A is better."
    stopped = judge_run_execute(judge_run_start(judge=judge, item_uuids=items[:1],
                                                dispatch=False))
    assert stopped.status == JudgeRun.Status.DONE
    for who, item in (("ann", items[1]), ("bob", items[2]), ("cy", items[0])):
        judge_run_start(judge=judge, item_uuids=[item], created_by=who)

    api = APIClient()
    api.force_authenticate(admin)
    answer = api.post(f"/api/judges/runs/{stopped.uuid}/resume/")
    assert answer.status_code == 429 and answer["Retry-After"] == "20"
    assert "the server is busy with 3 jobs" in answer.json()["detail"]
    page = admin_client_.post(reverse("judging:judges:run_resume", args=[stopped.uuid]),
                              follow=True)
    assert "the server is busy with 3 jobs" in page.content.decode()
    stopped.refresh_from_db()
    assert stopped.status == JudgeRun.Status.DONE  # nothing was re-opened


def test_a_resume_under_the_cap_is_admitted(server, admin):
    judge, items = make_judge(server), _items(1)
    server.responder = lambda body: "Overall, Response A is better."
    run = judge_run_execute(judge_run_start(judge=judge, item_uuids=items, dispatch=False))
    api = APIClient()
    api.force_authenticate(admin)
    answer = api.post(f"/api/judges/runs/{run.uuid}/resume/")
    assert answer.status_code == 200 and answer.json()["status"] == "pending"
