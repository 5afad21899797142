"""API and analyst pages: permissions; creating a report or a metric run answers at once and
the job runs after commit out of the request (a thread without a broker), its status showing
progress and a failure recording why; the JSON served equals the stored report, downloads are
analyst-only."""
import csv
import io
import json
import threading

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import OperationalError
from rest_framework.test import APIClient

from agreement.models import MetricRun, Report

pytestmark = pytest.mark.django_db
BODY = {"metrics": ["length"], "bootstrap_rounds": 100, "seed": 4}
FINISHED = ("done", "failed")


@pytest.fixture
def held(monkeypatch):
    """Hold every background job at its start until ``held.set()``; at teardown release them
    and wait for their threads (a thread must not outlive the test's database)."""
    from agreement import tasks

    gate = threading.Event()
    for name in ("report_build", "metric_run_work"):
        real = getattr(tasks, name)
        monkeypatch.setattr(tasks, name, lambda pk, real=real: (gate.wait(20), real(pk))[1])
    yield gate
    gate.set()
    for thread in threading.enumerate():
        if thread.name.startswith("job "):
            thread.join(60)


def _finished(model, uuid, timeout=60.0):
    """Wait for the job's thread, then read its row (SQLite's shared in-memory test database
    refuses a read, "table is locked", while another connection writes; the poll covers a job
    that a broker's worker would run)."""
    import time

    from annotation.core.background import wait_for_jobs

    wait_for_jobs(timeout)

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            job = model.objects.get(uuid=uuid)
        except OperationalError:
            job = None
        if job is not None and job.status in FINISHED:
            return job
        time.sleep(0.05)
    raise AssertionError(f"{model.__name__} {uuid} did not finish in {timeout} s")


def _api(user=None):
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def test_api_permissions(alice, study):
    assert _api().get("/api/agreement/reports/").status_code in (401, 403)
    assert _api(alice).get("/api/agreement/reports/").status_code == 403
    assert _api(alice).post("/api/agreement/reports/", BODY, format="json").status_code == 403
    assert not Report.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_create_answers_at_once_and_builds_out_of_the_request(analyst, study, held):
    client = _api(analyst)
    resp = client.post("/api/agreement/reports/", BODY, format="json")  # the build is held
    assert resp.status_code == 202, resp.content
    assert resp.json()["status"] in ("pending", "running")
    uuid = resp.json()["uuid"]
    assert client.get(f"/api/agreement/reports/{uuid}/json/").status_code == 409
    held.set()
    assert _finished(Report, uuid).status == "done"
    detail = client.get(f"/api/agreement/reports/{uuid}/").json()
    assert detail["status"] == "done" and detail["snapshot"]["seed"] == 4
    assert detail["data"]["accuracy"]["J1"]["overall"]["successes"] == 3
    assert "report.json" in detail["files"]
    raw = client.get(f"/api/agreement/reports/{uuid}/json/")
    assert raw.status_code == 200 and raw.json() == detail["data"]
    listed = client.get("/api/agreement/reports/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [r["uuid"] for r in rows] == [uuid] and "data" not in rows[0]


def test_bad_parameters_are_rejected_with_the_reason(analyst, study):
    resp = _api(analyst).post("/api/agreement/reports/", {"split": "bogus"}, format="json")
    assert resp.status_code == 400 and "bogus" in resp.content.decode()
    resp = _api(analyst).post("/api/agreement/reports/", {"metrics": ["nope"]}, format="json")
    assert resp.status_code == 400 and "nope" in resp.content.decode()
    assert not Report.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_metric_run_api(analyst, study, held):
    resp = _api(analyst).post("/api/agreement/metric-runs/",
                              {"metrics": ["length", "bleu4"]}, format="json")
    assert resp.status_code == 202
    assert (resp.json()["status"], resp.json()["done"]) == ("pending", 0)
    held.set()
    _finished(MetricRun, resp.json()["uuid"])
    run = _api(analyst).get(f"/api/agreement/metric-runs/{resp.json()['uuid']}/").json()
    assert (run["status"], run["done"], run["total"]) == ("done", 16, 16)


@pytest.mark.django_db(transaction=True)
def test_a_failed_or_interrupted_job_records_why(analyst, study, held, monkeypatch):
    from agreement import tasks
    from annotation.core import background

    def boom(*args, **kwargs):
        raise RuntimeError("the metric server went away")

    held.set()
    monkeypatch.setattr("agreement.reports.assemble.build_report_data", boom)
    client = _api(analyst)
    failing = client.post("/api/agreement/reports/", BODY, format="json").json()["uuid"]
    report = _finished(Report, failing)
    assert (report.status, report.error) == ("failed", "RuntimeError: the metric server went away")
    assert client.get(f"/api/agreement/reports/{failing}/").json()["error"] == report.error
    # A job whose process exits under it (a restart) says so instead of running forever.
    stuck = threading.Event()
    monkeypatch.setattr(tasks, "metric_run_work",
                        lambda pk: (stuck.wait(20), MetricRun.objects.get(pk=pk))[1])
    cut = client.post("/api/agreement/metric-runs/", {"metrics": ["length"]},
                      format="json").json()["uuid"]
    background._interrupt_unfinished()  # what the process runs at exit
    stuck.set()
    run = MetricRun.objects.get(uuid=cut)
    assert run.status == "failed" and run.error.startswith("Interrupted") and run.finished_at


@pytest.mark.django_db(transaction=True)
def test_pages(analyst_client, alice_client, study, held):
    assert alice_client.get("/reports/").status_code == 403
    assert analyst_client.get("/reports/").status_code == 200
    resp = analyst_client.post("/reports/new/", {"split": "all", "metrics": ["length"],
                                                 "seed": 2, "bootstrap_rounds": 50,
                                                 "title": "<b>mine</b>"})
    assert resp.status_code == 302  # at once: the build is held
    waiting = analyst_client.get(resp["Location"]).content.decode()
    assert 'id="waiting"' in waiting and 'http-equiv="refresh"' in waiting
    report_uuid = Report.objects.get().uuid  # read before the build starts writing
    held.set()
    report = _finished(Report, report_uuid)
    page = analyst_client.get(resp["Location"]).content.decode()
    assert 'id="waiting"' not in page
    assert "&lt;b&gt;mine&lt;/b&gt;" in page and "<b>mine</b>" not in page
    assert f"/reports/{report.uuid}/files/accuracy_by_level.png" in page
    png = analyst_client.get(f"/reports/{report.uuid}/files/accuracy_by_level.png")
    assert png["Content-Type"] == "image/png" and png.content[:4] == b"\x89PNG"
    csv_resp = analyst_client.get(f"/reports/{report.uuid}/files/accuracy.csv")
    assert "attachment" in csv_resp["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(csv_resp.content.decode())))
    j1 = next(r for r in rows if r["source"] == "J1" and r["level"] == "all")
    assert j1["accuracy"] == "0.75"
    assert alice_client.get(f"/reports/{report.uuid}/files/accuracy.csv").status_code == 403
    assert analyst_client.get(f"/reports/{report.uuid}/files/nope.csv").status_code == 404


def test_command_writes_every_file(study, tmp_path):
    call_command("agreement_report", "--out", str(tmp_path), "--metrics", "length",
                 "--seed", "1", "--bootstrap", "50", "--judges", "J1")
    names = {p.name for p in tmp_path.iterdir()}
    assert {"report.html", "report.json", "accuracy.csv", "accuracy_by_level.png",
            "accuracy_by_level.svg", "agreement_main.svg"} <= names
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["snapshot"]["filters"]["judges_found"] == ["J1"]
    assert data["snapshot"]["seed"] == 1
    assert (tmp_path / "accuracy_by_level.svg").read_text().lstrip().startswith("<?xml")
    with pytest.raises(CommandError, match="unknown split"):
        call_command("agreement_report", "--out", str(tmp_path), "--split", "bogus")


def test_list_page_query_count_does_not_grow(analyst_client, study, django_assert_num_queries,
                                             django_assert_max_num_queries):
    from agreement.services.reports import report_generate

    report_generate(BODY)
    analyst_client.get("/reports/")  # warm the session / role caches
    # session, user (with roles), the study served, the categories (their counts: the trial
    # batches, the check of the counts kept and the votes since; the graded ones), judgment
    # sources (the list stored, then whether each judged in the study), reports
    with django_assert_max_num_queries(12) as one:
        analyst_client.get("/reports/")
    report_generate(BODY)
    report_generate(BODY)
    with django_assert_num_queries(len(one.captured_queries)):
        assert analyst_client.get("/reports/").status_code == 200
