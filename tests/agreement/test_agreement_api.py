"""API and analyst pages: permissions, creating a report runs the Celery task after commit,
the JSON served equals the stored report, downloads are analyst-only."""
import csv
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from agreement.models import Report

pytestmark = pytest.mark.django_db
BODY = {"metrics": ["length"], "bootstrap_rounds": 100, "seed": 4}


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


def test_create_runs_the_task_and_serves_the_json(analyst, study,
                                                  django_capture_on_commit_callbacks):
    client = _api(analyst)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        resp = client.post("/api/agreement/reports/", BODY, format="json")
    assert resp.status_code == 202, resp.content
    assert len(callbacks) == 1
    uuid = resp.json()["uuid"]
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


def test_metric_run_api(analyst, study, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        resp = _api(analyst).post("/api/agreement/metric-runs/",
                                  {"metrics": ["length", "bleu4"]}, format="json")
    assert resp.status_code == 202
    run = _api(analyst).get(f"/api/agreement/metric-runs/{resp.json()['uuid']}/").json()
    assert (run["status"], run["done"], run["total"]) == ("done", 16, 16)


def test_pages(analyst_client, alice_client, study, django_capture_on_commit_callbacks):
    assert alice_client.get("/reports/").status_code == 403
    assert analyst_client.get("/reports/").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        resp = analyst_client.post("/reports/new/", {"split": "all", "metrics": ["length"],
                                                     "seed": 2, "bootstrap_rounds": 50,
                                                     "title": "<b>mine</b>"})
    assert resp.status_code == 302
    report = Report.objects.get()
    page = analyst_client.get(resp["Location"]).content.decode()
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


def test_list_page_query_count_does_not_grow(analyst_client, study, django_assert_num_queries):
    from agreement.services.reports import report_generate

    report_generate(BODY)
    analyst_client.get("/reports/")  # warm the session / role caches
    # session, user (with roles), families, judgment sources, reports
    with django_assert_num_queries(5) as one:
        analyst_client.get("/reports/")
    report_generate(BODY)
    report_generate(BODY)
    with django_assert_num_queries(len(one.captured_queries)):
        assert analyst_client.get("/reports/").status_code == 200
