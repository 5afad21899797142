"""The study as a dataset: Parquet files that pandas and `datasets` load, a card that documents
them, pseudonymous workers, and an import that round-trips, skips what is present and refuses
a bad row whole."""
import json
import os

import pandas as pd
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from annotation.content.imports.common import ImportFailed
from annotation.models import Image, Instance, InstructionFamily, Worker
from judging.dataset.export import FILES, dataset_export
from judging.dataset.identities import pseudonym
from judging.dataset.imports import dataset_import
from judging.dataset.schema import TABLES
from judging.models import Comparison, EvalModel, Judgment, Response
from judging.services.judgments.record import judgment_record
from tests.agreement.study import build_study
from tests.judging import builders

pytestmark = pytest.mark.django_db


def _study():
    build_study()
    models = builders.models("Conv-A", "Conv-B")
    builders.conversation(models["Conv-A"], models["Conv-B"])
    inst = builders.instance(instruction="Count the red squares.")
    builders.rubric(inst)
    worker = Worker.objects.create(provider=Worker.Provider.MTURK, external_id="A1B2C3WORKER")
    comparison = Comparison.objects.first()
    judgment_record(source=Judgment.HUMAN, annotator=str(worker), worker=worker,
                    comparison=comparison, choice="A", created_at=timezone.now())
    return worker


def _tables(folder) -> dict[str, pd.DataFrame]:
    return {t: pd.read_parquet(folder / f"{t}.parquet").sort_values(
        "name" if t == "models" else "uuid").reset_index(drop=True) for t in FILES}


def _wipe():
    Instance.objects.all().delete()  # cascades: responses, comparisons, judgments
    EvalModel.objects.all().delete()
    InstructionFamily.objects.all().delete()
    Image.objects.all().delete()


def test_export_loads_with_pandas_and_datasets_and_documents_itself(tmp_path):
    worker = _study()
    counts = dataset_export(tmp_path)
    assert counts["judgments"] == Judgment.objects.count() > 40
    assert counts["responses"] == Response.objects.count()
    for table in FILES:
        schema = pq.read_schema(tmp_path / f"{table}.parquet")
        assert schema.names == [c.name for c in TABLES[table]]
    judgments = pd.read_parquet(tmp_path / "judgments.parquet")
    assert "A1B2C3WORKER" not in set(judgments["annotator"])  # no marketplace id leaves
    assert pseudonym("worker", worker.pk) in set(judgments["annotator"])
    assert set(judgments["source"]) >= {"human", "J1", "J2"}

    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    datasets = pytest.importorskip("datasets")
    loaded = datasets.load_dataset("parquet", data_files=str(tmp_path / "judgments.parquet"),
                                   split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert loaded.num_rows == counts["judgments"]
    assert set(loaded.column_names) == {c.name for c in TABLES["judgments"]}
    instances = datasets.load_dataset(str(tmp_path), "instances", split="train",
                                      cache_dir=str(tmp_path / "hf-cache"))
    assert instances.num_rows == counts["instances"]
    conversation = [r for r in instances if r["kind"] == "conversation"][0]
    assert len(conversation["turns"]) == 3 and conversation["turns"][0]["turn"] == 1

    card = (tmp_path / "README.md").read_text()
    assert "config_name: judgments" in card
    assert f"| judgments | {counts['judgments']:,} |" in card
    for columns in TABLES.values():
        assert all(f"| {c.name} |" in card for c in columns)
    assert "## Images and licences" in card and "pseudonym" in card


def test_import_round_trips_and_is_idempotent(tmp_path):
    _study()
    before = dataset_export(tmp_path / "a")
    first = _tables(tmp_path / "a")
    _wipe()
    assert Judgment.objects.count() == 0
    added = dataset_import(tmp_path / "a")
    assert added["judgments"] == before["judgments"]
    assert added["responses"] == before["responses"]
    assert dataset_import(tmp_path / "a") == {t: 0 for t in FILES}  # present rows are kept
    dataset_export(tmp_path / "b")
    second = _tables(tmp_path / "b")
    for table in FILES:
        pd.testing.assert_frame_equal(first[table], second[table], check_like=False)


def test_a_bad_row_is_named_and_nothing_is_written(tmp_path):
    _study()
    dataset_export(tmp_path)
    judgments = pq.read_table(tmp_path / "judgments.parquet").to_pandas()
    judgments.loc[7, "comparison"] = "00000000-0000-4000-8000-000000000000"
    judgments.to_parquet(tmp_path / "judgments.parquet", index=False)
    _wipe()
    with pytest.raises(ImportFailed, match=r"judgments\.parquet row 8: .*unknown"):
        dataset_import(tmp_path)
    assert Instance.objects.count() == Response.objects.count() == 0
    with pytest.raises(CommandError, match="nothing imported"):
        call_command("import_study_dataset", str(tmp_path))


def test_a_missing_file_or_column_is_refused_before_writing(tmp_path):
    _study()
    dataset_export(tmp_path)
    responses = pq.read_table(tmp_path / "responses.parquet").drop(["text"])
    pq.write_table(responses, tmp_path / "responses.parquet")
    _wipe()
    with pytest.raises(ImportFailed, match="responses.parquet: missing column"):
        dataset_import(tmp_path)
    (tmp_path / "models.parquet").unlink()
    with pytest.raises(ImportFailed, match="models.parquet: missing"):
        dataset_import(tmp_path)
    assert Instance.objects.count() == 0


def test_real_visitbench_study_round_trips(tmp_path):
    """The real VisIT-Bench instances (../shared/data: multi-image rows, instructions repeated
    across items) with votes in VisIT-Bench's own preference format — vote counts per row, no
    worker ids — exported, imported into an empty database and exported again: same tables."""
    import csv
    import io

    from annotation.content.imports.visitbench import import_visitbench
    from judging.services.judgments.imports import judgments_import
    from tests.support.shared_data import SHARED_DATA

    data = SHARED_DATA / "visit_bench" / "visit_bench_multi_images.csv"
    if not data.exists():
        pytest.skip(f"shared data absent ({SHARED_DATA})")
    import_visitbench(data)
    rows = []
    for k, inst in enumerate(Instance.objects.order_by("pk")[:30]):
        urls = [ii.image.source_url for ii in inst.instance_images.order_by("position")]
        good, bad = inst.reference_output or "A careful answer.", "I cannot tell, sorry."
        rows.append({"image_url": json.dumps(urls), "instruction": inst.instruction,
                     "A": good, "B": bad, "A_model": "close-model", "B_model": "vague-model",
                     "model_selection.A": 3 + k % 3, "model_selection.B": 2 - k % 3})
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    judgments_import("visit_prefs.csv", out.getvalue().encode(), create_missing=True)
    before = dataset_export(tmp_path / "a")
    assert before["instances"] == 100 and before["judgments"] == 5 * 30
    first = _tables(tmp_path / "a")
    assert (first["judgments"]["source"] == "human").sum() == 150  # anonymous votes kept as votes
    _wipe()
    added = dataset_import(tmp_path / "a")
    assert (added["instances"], added["judgments"]) == (100, 150)
    dataset_export(tmp_path / "b")
    second = _tables(tmp_path / "b")
    for table in FILES:
        pd.testing.assert_frame_equal(first[table], second[table])


def test_rejected_votes_travel_marked_and_a_file_from_before_the_marker_imports(tmp_path):
    worker = _study()
    Judgment.objects.filter(worker=worker).update(rejected=True)  # as its rejection would
    counted = Judgment.objects.count()
    assert dataset_export(tmp_path)["judgments"] == counted + 1  # kept in the export, marked
    assert pq.read_table(tmp_path / "judgments.parquet").to_pandas()["rejected"].sum() == 1
    _wipe()
    dataset_import(tmp_path)
    assert Judgment.objects.count() == counted  # imported, and still counted nowhere
    assert Judgment.with_rejected.get(rejected=True).annotator == pseudonym("worker", worker.pk)
    assert dataset_import(tmp_path)["judgments"] == 0  # the rejected row is found present
    older = pq.read_table(tmp_path / "judgments.parquet").drop(["rejected"])
    pq.write_table(older, tmp_path / "judgments.parquet")
    _wipe()
    assert dataset_import(tmp_path)["judgments"] == counted + 1
    assert not Judgment.with_rejected.filter(rejected=True).exists()
