"""The URLs from before studies serve the default study: another study's report, judge run,
comparison and models are not found there, and a model name used in two studies resolves."""
import pytest
from django.utils import timezone

from agreement.models import Report
from judging.judges.models import Judge, JudgeRun
from studies.models import default_study_id
from tests.studies import builders

pytestmark = pytest.mark.django_db


def test_another_studys_rows_are_not_found_under_the_old_urls(analyst_client):
    other = builders.study("other")
    now = timezone.now()
    report = Report.objects.create(title="theirs", created_at=now, study=other,
                                   status=Report.Status.DONE, data={})
    judge = Judge.objects.create(name="j", kind="pairwise", base_url="http://127.0.0.1:9/v1",
                                 model_name="stand-in")
    run = JudgeRun.objects.create(judge=judge, scope="comparisons", created_at=now, study=other)
    ms = builders.models(other, "llava", "blip")
    comparison = builders.voted(other, [(ms["llava"], ms["blip"], ["A", "B"])])[0]
    for path in (f"/reports/{report.uuid}/", f"/eval/judges/runs/{run.uuid}/",
                 f"/review/{comparison.uuid}/", f"/api/agreement/reports/{report.uuid}/",
                 f"/api/judges/runs/{run.uuid}/"):
        assert analyst_client.get(path).status_code == 404, path
    assert "theirs" not in analyst_client.get("/reports/").content.decode()
    assert analyst_client.get("/api/eval/models/blip/").status_code == 404


def test_a_name_in_two_studies_is_the_default_studys_in_the_old_api(analyst_client):
    builders.models(default_study_id(), "llava")
    builders.models(builders.study("other"), "llava")
    response = analyst_client.get("/api/eval/models/llava/")
    assert response.status_code == 200 and response.json()["name"] == "llava"
