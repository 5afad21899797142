"""Importers on the real files in shared/data, malformed files, and export → import round trips."""
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.content.exports import export_dataset
from annotation.content.formats import (
    parse_convbench_xlsx,
    parse_prometheus_jsonl,
    parse_visit_csv,
)
from annotation.content.imports.common import ImportFailed
from annotation.content.imports.convbench import import_convbench
from annotation.content.imports.prometheus import import_prometheus
from annotation.content.imports.visitbench import import_visitbench
from annotation.models import ConversationTurn, Image, Instance, InstanceImage, ScoreRubric
from tests.support.shared_data import SHARED_DATA

DATA = SHARED_DATA
MULTI = DATA / "visit_bench" / "visit_bench_multi_images.csv"
SINGLE = DATA / "visit_bench" / "visit_fully_annotated_example.csv"
CONV = DATA / "convbench" / "ConvBench.xlsx"
CONV_IMAGES = DATA / "convbench" / "images"
PROM = DATA / "prometheus_vision" / "sample_eval_data.jsonl"

pytestmark = pytest.mark.django_db


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} not available")
    return path


def test_multi_image_csv_imports_with_verification_outcomes():
    summary = import_visitbench(_need(MULTI))
    assert summary.created == 100 and summary.skipped == 0
    multi = Instance.objects.filter(kind="multi")
    assert multi.count() == 100
    assert multi.filter(reference_status="verified").count() == 63
    assert multi.filter(rejection_reason="caption_underspecified").count() == 6
    assert multi.filter(rejection_reason="response_wrong").count() == 30
    assert multi.filter(reference_status="rejected", rejection_reason="").count() == 1
    assert InstanceImage.objects.count() == 400
    # Offline import: every image keeps its URL and waits to be fetched.
    assert Image.objects.filter(fetch_status="pending").exclude(source_url="").count() == 400
    ten = multi.filter(instance_images__position=9).first()
    assert multi.filter(instance_images__position=9).count() == 10
    assert [ii.position for ii in ten.instance_images.all()] == list(range(10))
    # Re-importing recognises every row.
    assert import_visitbench(MULTI).skipped == 100 and Instance.objects.count() == 100


def test_single_image_csv_imports_as_verified_human_references():
    summary = import_visitbench(_need(SINGLE))
    assert summary.created == 10
    rows = Instance.objects.filter(kind="single", source="visitbench")
    assert rows.count() == 10 and set(rows.values_list("reference_status", flat=True)) == {
        "verified"}
    first = rows.order_by("pk").first()
    assert first.family.name == "Animals"
    assert "border collie" in first.instance_images.get().caption


@pytest.mark.parametrize("layout,path", [pytest.param("multi", MULTI, marks=pytest.mark.slow),
                                         ("single", SINGLE)])
def test_visitbench_export_import_round_trip(layout, path, tmp_path):
    import_visitbench(_need(path))
    exported = export_dataset("visitbench", layout=layout)
    assert parse_visit_csv(exported) == parse_visit_csv(path)
    # … and importing the export into an empty database gives the same rows again.
    Instance.objects.all().delete()
    out = tmp_path / "again.csv"
    out.write_bytes(exported)
    assert import_visitbench(out).created == len(parse_visit_csv(path).records)
    assert parse_visit_csv(export_dataset("visitbench", layout=layout)) == parse_visit_csv(path)


@pytest.mark.slow
def test_convbench_imports_578_conversations_with_images():
    summary = import_convbench(_need(CONV), CONV_IMAGES)
    assert summary.created == 578
    conversations = Instance.objects.filter(kind="conversation")
    assert conversations.count() == 578
    assert ConversationTurn.objects.count() == 3 * 578
    turns = conversations.get(external_id="convbench:1").turns.order_by("turn")
    assert [t.capability for t in turns] == ["perception", "reasoning", "creation"]
    stored = Image.objects.filter(fetch_status="ok").exclude(file="")
    assert stored.count() == len({p.name for p in CONV_IMAGES.iterdir()})
    assert all(i.thumbnail and i.sha256 for i in stored)
    # round trip: the exported workbook parses to the same conversations
    exported = parse_convbench_xlsx(export_dataset("convbench")).records
    original = parse_convbench_xlsx(CONV).records
    assert [(r.id, r.image_id, r.turns) for r in exported] == [
        (r.id, r.image_id, r.turns) for r in original]


def test_prometheus_jsonl_splits_prompt_and_round_trips():
    summary = import_prometheus(_need(PROM))
    assert summary.created == 3
    rubric = ScoreRubric.objects.select_related("instance").order_by("pk").first()
    record = parse_prometheus_jsonl(PROM)[0]
    assert rubric.criteria == record.rubric.criteria
    assert rubric.score5 == record.rubric.score_descriptions[4]
    assert rubric.instance.instruction == record.instruction
    assert rubric.instance.reference_output == record.reference_answer
    assert parse_prometheus_jsonl(export_dataset("prometheus")) == parse_prometheus_jsonl(PROM)


def test_malformed_visitbench_names_the_row_and_writes_nothing(tmp_path):
    text = _need(MULTI).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    bad = tmp_path / "bad.csv"
    # Break a late row's boolean so earlier rows would have been written by a naive importer.
    records = parse_visit_csv(MULTI).records
    mangled = text.replace(",True,False,False,{}", ",True,Maybe,False,{}", 1)
    assert mangled != text and len(lines) > 3
    bad.write_text(mangled, encoding="utf-8")
    with pytest.raises(ImportFailed, match=r"row \d+, column 'human_ratings_problem_in_caption'"):
        import_visitbench(bad)
    assert not Instance.objects.exists() and not Image.objects.exists() and records


def test_two_verdicts_on_one_row_is_refused_atomically(tmp_path):
    text = _need(MULTI).read_text(encoding="utf-8")
    bad = tmp_path / "double.csv"
    bad.write_text(text.replace(",True,False,False,{}", ",True,True,False,{}", 1),
                   encoding="utf-8")
    with pytest.raises(ImportFailed, match="record .* at most one"):
        import_visitbench(bad)
    assert not Instance.objects.exists()


def test_malformed_convbench_and_prometheus_write_nothing(tmp_path):
    broken = tmp_path / "broken.xlsx"
    broken.write_bytes(b"not a workbook")
    with pytest.raises(ImportFailed, match="row 1"):
        import_convbench(broken)
    lines = _need(PROM).read_text(encoding="utf-8").splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], lines[1], "{not json"]) + "\n", encoding="utf-8")
    with pytest.raises(ImportFailed, match="row 3"):
        import_prometheus(bad)
    assert not Instance.objects.exists() and not ScoreRubric.objects.exists()


def test_commands_import_and_report_rejection(tmp_path, capsys):
    call_command("import_visitbench", str(_need(MULTI)))
    assert "100 created" in capsys.readouterr().out
    bad = tmp_path / "bad.csv"
    bad.write_text("image_url,oops\n", encoding="utf-8")
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("import_visitbench", str(bad))
    out = tmp_path / "dump.jsonl"
    call_command("export_dataset", "--format", "jsonl", "--out", str(out))
    assert len(out.read_text(encoding="utf-8").splitlines()) == 100


def test_admin_upload_calls_the_same_importer(admin_client_):
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = admin_client_.post("/admin/annotation/instance/import/", {
        "format": "prometheus",
        "file": SimpleUploadedFile("p.jsonl", _need(PROM).read_bytes()),
    })
    assert response.status_code == 302 and ScoreRubric.objects.count() == 3
    bad = admin_client_.post("/admin/annotation/instance/import/", {
        "format": "prometheus", "file": SimpleUploadedFile("p.jsonl", b'{"image": 1}\n'),
    })
    assert bad.status_code == 200 and b"row 1" in bad.content
    assert ScoreRubric.objects.count() == 3
