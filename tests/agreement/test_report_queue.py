"""Report builds and metric runs pass the job caps (``annotation.core.jobs``): 20 parallel
POSTs by one analyst admit exactly the per-person cap and the rest get 429 with Retry-After; an
identical request gets the queued report back; another analyst still gets in until the global
cap; the page says why; a finished job frees its slot."""
import threading
import uuid

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from agreement.models import MetricRun, Report
from agreement.services.metric_scores import metric_run_start
from annotation.core.background import wait_for_jobs
from annotation.core.jobs import JobsBusy

CAPS = override_settings(JOBS_MAX_PER_USER=2, JOBS_MAX_GLOBAL=4, JOBS_RETRY_AFTER=45)
URL = "/api/agreement/reports/"


def _body(seed: int) -> dict:
    return {"metrics": ["length"], "bootstrap_rounds": 20, "seed": seed}


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _post_at_once(user, bodies: list[dict]) -> list:
    """Every body POSTed by its own thread (its own database connection), released together."""
    from django.db import connections

    start, answers = threading.Barrier(len(bodies)), [None] * len(bodies)

    def post(i):
        try:
            client = _api(user)
            start.wait(30)
            answers[i] = client.post(URL, bodies[i], format="json")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=post, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return answers


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@CAPS
def test_twenty_parallel_posts_admit_the_cap_and_refuse_the_rest(analyst, study,
                                                                 held_report_builds,
                                                                 django_user_model):
    answers = _post_at_once(analyst, [_body(seed) for seed in range(20)])
    codes = sorted(a.status_code for a in answers)
    assert codes == [202] * 2 + [429] * 18
    refused = [a for a in answers if a.status_code == 429]
    assert {a["Retry-After"] for a in refused} == {"45"}
    assert "you already have 2 jobs queued or running" in refused[0].json()["detail"]
    admitted = {a.json()["uuid"] for a in answers if a.status_code == 202}
    assert set(Report.objects.values_list("uuid", flat=True)) == {uuid.UUID(u) for u in admitted}

    # The same request again: the queued report, not a new one (even at the cap).
    seed = next(a.json()["params"]["seed"] for a in answers if a.status_code == 202)
    again = _api(analyst).post(URL, _body(seed), format="json")
    assert again.status_code == 202 and again.json()["uuid"] in admitted
    assert Report.objects.count() == 2

    # Another analyst still gets in, until the global cap (4) is reached.
    other = django_user_model.objects.create_user(username="other_analyst", password="pw")
    other.groups.add(analyst.groups.get())
    assert [_api(other).post(URL, _body(100 + i), format="json").status_code
            for i in range(2)] == [202, 202]
    third = django_user_model.objects.create_user(username="third_analyst", password="pw")
    third.groups.add(analyst.groups.get())
    busy = _api(third).post(URL, _body(200), format="json")
    assert busy.status_code == 429 and busy["Retry-After"] == "45"
    assert "the server is busy with 4 jobs" in busy.json()["detail"]
    assert Report.objects.count() == 4

    # Finished jobs free their slots.
    held_report_builds.set()
    assert wait_for_jobs(120)
    assert set(Report.objects.values_list("status", flat=True)) == {"done"}
    assert _api(third).post(URL, _body(200), format="json").status_code == 202


@pytest.mark.django_db(transaction=True)
@CAPS
def test_the_page_says_why_a_report_was_not_started(analyst, analyst_client, study,
                                                    held_report_builds):
    for seed in (1, 2):
        assert _api(analyst).post(URL, _body(seed), format="json").status_code == 202
    form = {"split": "all", "metrics": ["length"], "seed": 3, "bootstrap_rounds": 20}
    page = analyst_client.post("/reports/new/", form, follow=True)
    html = page.content.decode()
    assert page.status_code == 200 and "you already have 2 jobs queued or running" in html
    assert Report.objects.count() == 2


@pytest.mark.django_db
@CAPS
def test_metric_runs_are_admitted_deduplicated_and_capped(study):
    first = metric_run_start(["length"], options={"seed": 1}, queue=True, created_by="ann")
    assert metric_run_start(["length"], options={"seed": 1}, queue=True,
                            created_by="ann").pk == first.pk
    metric_run_start(["length"], options={"seed": 2}, queue=True, created_by="ann")
    with pytest.raises(JobsBusy) as refused:
        metric_run_start(["length"], options={"seed": 3}, queue=True, created_by="ann")
    assert refused.value.retry_after == 45
    assert MetricRun.objects.count() == 2
    # A run its caller works in its own process (the command) is not queued, so not refused.
    assert metric_run_start(["length"], options={"seed": 3}, created_by="ann").pk
