"""VisIT-Bench's reference convention and Table 2's denominator, on the released files.

In the released multi-image CSV ``reference_output`` is the source dataset's label; the
benchmark's reference is the GPT-4 answer people rated correct. Table 2 counts only LLM answers
people rated: importing human-written references (the single-image example, Prometheus-Vision)
never moves it.
"""
import csv
import io
import json

import pytest
from django.core.management import call_command

from annotation.content.exports import export_dataset
from annotation.content.formats import parse_visit_csv
from annotation.content.imports.prometheus import import_prometheus
from annotation.content.imports.visitbench import import_visitbench
from annotation.models import Instance
from annotation.pipeline.selectors import verification_report
from tests.support.shared_data import SHARED_DATA

MULTI = SHARED_DATA / "visit_bench" / "visit_bench_multi_images.csv"
SINGLE = SHARED_DATA / "visit_bench" / "visit_fully_annotated_example.csv"
PROM = SHARED_DATA / "prometheus_vision" / "sample_eval_data.jsonl"

pytestmark = pytest.mark.django_db


def _need(*paths):
    for path in paths:
        if not path.exists():
            pytest.skip(f"{path} not available")


def _released_rows() -> list[dict]:
    with MULTI.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_reference_is_the_verified_gpt4_answer_and_the_label_is_kept_apart():
    _need(MULTI)
    import_visitbench(MULTI)
    multi = Instance.objects.filter(source="visitbench", kind="multi")
    with_reference = multi.exclude(reference_output="")
    assert with_reference.count() == 63 and multi.filter(reference_output="").count() == 37
    for instance in with_reference:
        assert instance.reference_status == "verified"
        assert instance.reference_output == instance.candidate_reference
    assert not multi.exclude(reference_status="verified").exclude(reference_output="").exists()
    # The dataset's own label ("Yes", "Image 10", empty …) is kept, and never is the reference.
    labels = {(r["instruction"], r["reference_output"]) for r in _released_rows()}
    assert {(i.instruction, i.source_label) for i in multi} == labels
    assert multi.filter(source_label="Image 10").exists()
    assert set(multi.values_list("reference_rated_by", flat=True)) == {"imported"}


def test_export_writes_the_label_back_as_reference_output():
    _need(MULTI)
    import_visitbench(MULTI)
    exported = list(csv.DictReader(io.StringIO(export_dataset("visitbench").decode())))
    released = _released_rows()
    assert [r["reference_output"] for r in exported] == [r["reference_output"] for r in released]
    assert [r["gpt4_prediction"] for r in exported] == [r["gpt4_prediction"] for r in released]
    assert parse_visit_csv(export_dataset("visitbench")) == parse_visit_csv(MULTI)


def test_single_image_file_keeps_its_human_references_out_of_table_2():
    _need(MULTI, SINGLE, PROM)
    import_visitbench(MULTI)
    before = verification_report()
    import_visitbench(SINGLE)
    import_prometheus(PROM)
    after = verification_report()
    assert after == before
    assert after["single"] == {"n": 0, "correct": None, "problem_in_caption": None,
                               "problem_in_response": None}
    assert after["multi"]["correct"] == 63.0 and after["overall"]["n"] == 100
    singles = Instance.objects.filter(source="visitbench", kind="single")
    assert singles.count() == 10 and not singles.filter(reference_output="").exists()
    assert set(singles.values_list("reference_rated_by", flat=True)) == {""}


def test_unrated_rows_export_empty_ratings():
    _need(SINGLE)
    import_visitbench(SINGLE)
    rows = list(csv.DictReader(io.StringIO(
        export_dataset("visitbench", layout="multi", source="visitbench").decode())))
    assert len(rows) == 10
    for row in rows:
        assert (row["human_ratings_gpt4_correct"], row["human_ratings_problem_in_caption"],
                row["human_ratings_problem_in_gpt4"]) == ("", "", "")


def test_verification_report_by_source(capsys):
    _need(MULTI)
    import_visitbench(MULTI)
    Instance.objects.create(instruction="Crowd-built", kind="multi", source="crowd",
                            reference_status="rejected", rejection_reason="response_wrong",
                            reference_rated_by="crowd", stage="done")
    assert verification_report()["multi"]["n"] == 101
    assert verification_report("visitbench")["multi"]["correct"] == 63.0
    assert verification_report("crowd")["multi"] == {
        "n": 1, "correct": 0.0, "problem_in_caption": 0.0, "problem_in_response": 100.0}
    call_command("verification_report", "--source", "crowd", "--format", "json")
    assert json.loads(capsys.readouterr().out)["multi"]["n"] == 1


def test_report_page_by_source(admin_client_):
    _need(MULTI)
    import_visitbench(MULTI)
    assert admin_client_.get("/pipeline/report.json?source=nothing").json()["multi"]["n"] == 0
    page = admin_client_.get("/pipeline/report/?source=visitbench")
    assert page.status_code == 200 and b"63.0" in page.content


def test_jsonl_export_honours_source():
    _need(MULTI, PROM)
    import_visitbench(MULTI)
    import_prometheus(PROM)
    lines = export_dataset("jsonl", source="prometheus").decode().splitlines()
    assert len(lines) == 3 and {json.loads(line)["source"] for line in lines} == {"prometheus"}
    assert len(export_dataset("jsonl").decode().splitlines()) == 103


def test_export_dataset_command_honours_source(tmp_path):
    _need(MULTI, PROM)
    import_visitbench(MULTI)
    import_prometheus(PROM)
    out = tmp_path / "dump.jsonl"
    call_command("export_dataset", "--format", "jsonl", "--source", "visitbench",
                 "--out", str(out))
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 100 and {r["source"] for r in records} == {"visitbench"}
    verified = [r for r in records if r["reference_status"] == "verified"]
    assert all(r["reference_output"] == r["candidate_reference"] for r in verified)
