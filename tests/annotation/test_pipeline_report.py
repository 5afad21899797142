"""Verification report (VisIT-Bench Table 2) from the database, and the admin pipeline pages."""
import csv
import io
import json

import pytest
from django.core.management import call_command

from annotation.content.imports.visitbench import import_visitbench
from annotation.models import Batch, Image, Instance
from annotation.pipeline.report import table2
from annotation.pipeline.selectors import verification_report
from tests.support.shared_data import SHARED_DATA

MULTI = SHARED_DATA / "visit_bench" / "visit_bench_multi_images.csv"
pytestmark = pytest.mark.django_db


def _import_multi():
    if not MULTI.exists():
        pytest.skip("shared data not available")
    import_visitbench(MULTI)


def test_multi_image_file_gives_the_papers_multi_column(capsys):
    _import_multi()
    report = verification_report()
    assert report["multi"] == {"n": 100, "correct": 63.0, "problem_in_caption": 6.0,
                               "problem_in_response": 30.0}
    assert report["single"]["n"] == 0 and report["overall"] == report["multi"]
    call_command("verification_report", "--format", "json")
    assert json.loads(capsys.readouterr().out)["multi"]["correct"] == 63.0
    call_command("verification_report", "--format", "csv")
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[1][1:] == ["63.0", "", "63.0"] and rows[2][3] == "6.0" and rows[3][3] == "30.0"


def test_table2_pure_core_mixes_columns():
    table = table2({"single": {"verified": 9, "rejected": 1, "caption": 1, "response": 0},
                    "multi": {"verified": 1, "rejected": 1, "caption": 0, "response": 1}})
    assert table["overall"] == {"n": 12, "correct": 83.3, "problem_in_caption": 8.3,
                                "problem_in_response": 8.3}
    assert table2({})["multi"]["correct"] is None


def test_report_pages_are_admin_only(admin_client_, alice_client):
    _import_multi()
    assert alice_client.get("/pipeline/report/").status_code == 403
    assert alice_client.get("/pipeline/report.json").status_code == 403
    page = admin_client_.get("/pipeline/report/")
    assert page.status_code == 200 and b"63.0" in page.content and b"30.0" in page.content
    assert admin_client_.get("/pipeline/report.json").json()["multi"]["problem_in_caption"] == 6.0
    download = admin_client_.get("/pipeline/report.csv")
    assert download["Content-Type"] == "text/csv" and b"Problem in caption" in download.content


def test_dashboard_counts_and_bulk_push(admin_client_, alice_client):
    for n in range(3):
        instance = Instance.objects.create(instruction=f"Task {n}", stage="captioning")
        image = Image.objects.create(source_url=f"https://example.org/{n}.png")
        instance.instance_images.create(image=image, position=0)
    Instance.objects.create(instruction="waiting for the LLM", stage="reference")
    assert alice_client.get("/pipeline/").status_code == 403
    page = admin_client_.get("/pipeline/")
    rows = {r["stage"]: r for r in page.context["stages"]}
    assert rows["captioning"]["waiting"] == 3 and rows["captioning"]["queued"] == 0
    assert rows["reference"]["waiting"] == 1
    assert alice_client.post("/pipeline/push/", {"stage": "captioning"}).status_code == 403
    response = admin_client_.post("/pipeline/push/", {"stage": "captioning"})
    assert response.status_code == 302
    batch = Batch.objects.get(hit_type="instruction_caption")
    assert batch.tasks.count() == 3
    rows = {r["stage"]: r for r in admin_client_.get("/pipeline/").context["stages"]}
    assert rows["captioning"]["queued"] == 3 and rows["captioning"]["waiting"] == 0
    admin_client_.post("/pipeline/push/", {"stage": "captioning"})  # safe to press twice
    assert batch.tasks.count() == 3
    bad = admin_client_.post("/pipeline/push/", {"stage": "done"}, follow=True)
    assert b"stage must be one of" in bad.content


def test_pipeline_advance_command(capsys):
    _import_multi()
    Instance.objects.filter(pk=Instance.objects.order_by("pk").first().pk).update(
        stage="verification", reference_status="pending", rejection_reason="")
    call_command("pipeline_advance", "--stage", "verification")
    assert "verification: queued 1" in capsys.readouterr().out
    assert Batch.objects.get(hit_type="reference_verification").tasks.count() == 1
