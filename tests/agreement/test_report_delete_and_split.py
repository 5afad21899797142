"""Reports over a split that names nothing are refused (page and API) and nothing is recorded;
analysts delete finished reports from the page (after a confirmation) or the API, files and all;
a report still building cannot be deleted."""
from rest_framework.test import APIClient

from agreement.models import Report, ReportFile
from agreement.services.reports import report_create, report_generate

PARAMS = {"metrics": ["length"], "bootstrap_rounds": 20, "seed": 0}


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_page_refuses_a_category_no_instance_has(analyst_client, study):
    resp = analyst_client.post("/reports/new/", {"split": "category:Nope", "metrics": ["length"],
                                                 "seed": 0, "bootstrap_rounds": 20},
                               follow=True)
    page = resp.content.decode()
    assert "Report not started: unknown split &#x27;category:Nope&#x27;" in page
    assert "no instance is in category" in page
    assert not Report.objects.exists()


def test_api_refuses_a_category_no_instance_has(analyst, study):
    resp = _api(analyst).post("/api/agreement/reports/", {**PARAMS, "split": "category:Nope"},
                              format="json")
    assert resp.status_code == 400
    assert "no instance is in category 'Nope'" in resp.json()["detail"]
    assert not Report.objects.exists()


def test_delete_from_the_page_after_confirmation(analyst_client, alice_client, study):
    report = report_generate(PARAMS)
    other = report_generate({**PARAMS, "seed": 1})
    assert ReportFile.objects.filter(report=report).count() > 3
    detail = analyst_client.get(f"/reports/{report.uuid}/").content.decode()
    assert f'href="/reports/{report.uuid}/delete/"' in detail

    assert alice_client.get(f"/reports/{report.uuid}/delete/").status_code == 403
    assert alice_client.post(f"/reports/{report.uuid}/delete/").status_code == 403
    confirm = analyst_client.get(f"/reports/{report.uuid}/delete/")
    assert confirm.status_code == 200 and 'id="confirm-delete-button"' in confirm.content.decode()
    assert Report.objects.filter(pk=report.pk).exists()  # asking deletes nothing

    resp = analyst_client.post(f"/reports/{report.uuid}/delete/", follow=True)
    assert resp.redirect_chain[-1][0] == "/reports/"
    assert "and its files were deleted" in resp.content.decode()
    assert not Report.objects.filter(pk=report.pk).exists()
    assert not ReportFile.objects.filter(report_id=report.pk).exists()
    assert list(Report.objects.values_list("pk", flat=True)) == [other.pk]
    assert analyst_client.get(f"/reports/{report.uuid}/").status_code == 404
    assert analyst_client.post(f"/reports/{report.uuid}/delete/").status_code == 404


def test_a_report_still_building_is_not_deleted(analyst, analyst_client, study):
    pending = report_create(PARAMS, title="queued")
    resp = analyst_client.post(f"/reports/{pending.uuid}/delete/", follow=True)
    assert "still being built" in resp.content.decode()
    assert Report.objects.filter(pk=pending.pk).exists()
    api = _api(analyst).delete(f"/api/agreement/reports/{pending.uuid}/")
    assert api.status_code == 409 and "still being built" in api.json()["detail"]
    assert Report.objects.filter(pk=pending.pk).exists()


def test_delete_through_the_api(analyst, alice, study):
    report = report_generate(PARAMS)
    assert _api(alice).delete(f"/api/agreement/reports/{report.uuid}/").status_code == 403
    assert _api(analyst).delete(f"/api/agreement/reports/{report.uuid}/").status_code == 204
    assert not Report.objects.exists() and not ReportFile.objects.exists()
