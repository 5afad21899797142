"""Imports, exports, sampling, the pipeline, metric runs and webhooks per study: what goes into
study B never changes a byte of study A's exports or boards, and B's exports hold only B."""
import csv
import io
import json
from pathlib import Path

import openpyxl
import pytest
from django.core.management import CommandError, call_command
from django.db import transaction

from agreement.models import MetricRun, MetricScore
from annotation.core.background import wait_for_jobs
from annotation.engine.services.batches import batch_set_status
from annotation.models import Batch, Instance, ScoreRubric, Task
from annotation.webhooks.models import WebhookEndpoint
from judging.dataset.export import FILES
from judging.models import Comparison, EvalModel, Judgment, Response
from judging.services.rating_batches import RatingBatchError, rubric_batch_create
from studies.models import default_study_id
from tests.studies import builders
from tests.support.shared_data import SHARED_DATA

pytestmark = pytest.mark.django_db
SINGLE = SHARED_DATA / "visit_bench" / "visit_fully_annotated_example.csv"
MULTI = SHARED_DATA / "visit_bench" / "visit_bench_multi_images.csv"
CONV = SHARED_DATA / "convbench" / "ConvBench.xlsx"
PROM = SHARED_DATA / "prometheus_vision" / "sample_eval_data.jsonl"
B = "beta-bench"


def _need(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"{path} not available")
    return path


def _rows(path: Path) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _write_csv(path: Path, rows: list[dict]) -> Path:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


def _predictions(tmp_path: Path, items: list[dict], tag: str) -> Path:
    """Two models' answers to every item of the real single-image file."""
    return _write_csv(tmp_path / f"predictions-{tag}.csv", [
        {"instruction": r["instruction"], "image": r["image_url"],
         "alpha prediction": f"alpha {tag} answer {n}", "beta prediction": f"beta {n}"}
        for n, r in enumerate(items)])


def _judgments(tmp_path: Path, items: list[dict], tag: str, winner) -> Path:
    """One human vote per item, in the generic format (empty responses: the stored ones)."""
    return _write_csv(tmp_path / f"judgments-{tag}.csv", [
        {"item_id": "", "dataset": "", "instruction": r["instruction"],
         "image_urls": json.dumps([r["image_url"]]), "model_a": "alpha", "response_a": "",
         "model_b": "beta", "response_b": "", "annotator": f"w{n % 3}", "source": "human",
         "choice": winner(n), "score": "", "turn": "", "timestamp": ""}
        for n, r in enumerate(items)])


def _load(tmp_path: Path, slug: str, tag: str, winner) -> None:
    items = _rows(_need(SINGLE))
    call_command("import_visitbench", str(SINGLE), "--study", slug)
    call_command("import_predictions", str(_predictions(tmp_path, items, tag)), "--study", slug)
    call_command("import_judgments", str(_judgments(tmp_path, items, tag, winner)),
                 "--study", slug)


def _exports(tmp_path: Path, slug: str, capsys) -> dict[str, bytes]:
    """Every export of the study, and its board, as bytes."""
    out = tmp_path / f"export-{slug}-{len(list(tmp_path.iterdir()))}"
    out.mkdir()
    files = {}
    for fmt in ("jsonl", "visitbench", "convbench", "prometheus"):
        call_command("export_dataset", "--format", fmt, "--out", str(out / fmt), "--study", slug)
        files[fmt] = (out / fmt).read_bytes()
    # A workbook records when it was written: its cells are what must not change.
    sheet = openpyxl.load_workbook(io.BytesIO(files.pop("convbench"))).active
    files["convbench cells"] = json.dumps(list(sheet.values), default=str).encode()
    for fmt in ("csv", "jsonl", "visitbench"):
        call_command("export_judgments", "--format", fmt, "--out", str(out / f"j.{fmt}"),
                     "--study", slug)
        files[f"judgments.{fmt}"] = (out / f"j.{fmt}").read_bytes()
    call_command("export_study_dataset", "--out", str(out / "dataset"), "--study", slug)
    files |= {t: (out / "dataset" / f"{t}.parquet").read_bytes() for t in FILES}
    capsys.readouterr()
    call_command("ratings", "--format", "json", "--rounds", "20", "--study", slug)
    files["board"] = capsys.readouterr().out.encode()
    return files


def test_importing_into_study_b_leaves_study_a_byte_identical(tmp_path, capsys):
    _load(tmp_path, "default", "a", lambda n: "A" if n % 3 else "B")
    before = _exports(tmp_path, "default", capsys)
    assert json.loads(before["board"])["rows"]  # A's board has something to lose

    builders.study(B)
    _load(tmp_path, B, "b", lambda n: "B")  # the same real file, B's own answers and votes
    call_command("import_visitbench", str(_need(MULTI)), "--study", B)
    call_command("import_convbench", str(_need(CONV)), "--study", B)
    call_command("import_prometheus", str(_need(PROM)), "--study", B)
    after = _exports(tmp_path, "default", capsys)
    assert {k for k in before if before[k] != after[k]} == set()

    # B holds its own copy of the file: its instances, models, responses and votes only.
    a_uuids = {json.loads(line)["uuid"] for line in before["jsonl"].splitlines()}
    b_export = _exports(tmp_path, B, capsys)
    b_uuids = {json.loads(line)["uuid"] for line in b_export["jsonl"].splitlines()}
    items = len(_rows(SINGLE))
    conversations = Instance.objects.filter(study__slug=B, source="convbench").count()
    rubrics = Instance.objects.filter(study__slug=B, source="prometheus").count()
    assert conversations and rubrics and not Instance.objects.filter(
        study_id=default_study_id(), source__in=["convbench", "prometheus"]).exists()
    assert len(a_uuids) == items and not a_uuids & b_uuids
    assert len(b_uuids) == items + 100 + conversations + rubrics
    assert b_uuids == {str(u) for u in Instance.objects.filter(study__slug=B)
                       .values_list("uuid", flat=True)}
    b_votes = [json.loads(line) for line in b_export["judgments.jsonl"].splitlines()]
    assert len(b_votes) == items and {v["choice"] for v in b_votes} == {"B"}
    assert {v["response_a"] for v in b_votes} == {f"alpha b answer {n}" for n in range(items)}
    board = {r["model"]: r for r in json.loads(b_export["board"])["rows"]}
    assert set(board) == {"alpha", "beta"} and board["beta"]["rating"] > board["alpha"]["rating"]
    assert EvalModel.objects.filter(study__slug=B).count() == 2
    assert EvalModel.objects.filter(study_id=default_study_id()).count() == 2


def test_a_dump_and_a_dataset_come_back_into_the_study_named(tmp_path, capsys):
    """Another deployment's files (here: this one's, emptied after export) land in B only."""
    _load(tmp_path, "default", "a", lambda n: "A")
    call_command("export_dataset", "--format", "jsonl", "--out", str(tmp_path / "dump.jsonl"))
    call_command("export_study_dataset", "--out", str(tmp_path / "dataset"))
    Judgment.objects.all().delete()
    Comparison.objects.all().delete()
    Response.objects.all().delete()
    Instance.objects.all().delete()
    EvalModel.objects.all().delete()
    other = builders.study(B)
    call_command("import_dataset", str(tmp_path / "dump.jsonl"), "--study", B)
    items = len(_rows(SINGLE))
    assert Instance.objects.filter(study=other).count() == items == Instance.objects.count()
    call_command("import_study_dataset", str(tmp_path / "dataset"), "--study", B)
    assert set(EvalModel.objects.values_list("study__slug", "name")) == {(B, "alpha"), (B, "beta")}
    assert Response.objects.filter(instance__study=other).count() == 2 * items
    assert Judgment.objects.filter(comparison__instance__study=other).count() == items


def test_a_batch_exports_its_results_only_under_its_own_study(tmp_path):
    other = builders.study(B)
    batch = Batch.objects.create(title="B batch", hit_type="pairwise_ab", study=other)
    out = tmp_path / "results.csv"
    with pytest.raises(CommandError, match=f"No batch with uuid {batch.uuid} in study 'default'"):
        call_command("export_results", "--batch", str(batch.uuid), "--format", "csv",
                     "--out", str(out), "--study", "default")
    assert not out.exists()
    call_command("export_results", "--batch", str(batch.uuid), "--format", "csv", "--out",
                 str(out), "--study", B)
    assert out.read_bytes().startswith(b"batch")


def test_an_unknown_study_is_a_clear_error_that_writes_nothing(tmp_path):
    items = _rows(_need(SINGLE))
    commands = [("import_visitbench", str(SINGLE)),
                ("import_predictions", str(_predictions(tmp_path, items, "x"))),
                ("import_judgments", str(_judgments(tmp_path, items, "x", lambda n: "A"))),
                ("export_dataset", "--format", "jsonl", "--out", str(tmp_path / "x.jsonl")),
                ("sample_comparisons", "--tuples", "5"),
                ("compute_metrics", "--metrics", "length")]
    for args in commands:
        with pytest.raises(CommandError, match=r"No study 'nope'\. Studies: default"):
            call_command(*args, "--study", "nope")
    assert not Instance.objects.exists() and not Response.objects.exists()
    assert not Judgment.objects.exists() and not MetricRun.objects.exists()
    assert not (tmp_path / "x.jsonl").exists()


def test_with_two_studies_an_import_without_study_lists_them_and_writes_nothing():
    builders.study(B)
    with pytest.raises(CommandError) as refused:
        call_command("import_visitbench", str(_need(SINGLE)))
    assert "--study" in str(refused.value) and f"{B}, default" in str(refused.value)
    assert not Instance.objects.exists()
    call_command("import_visitbench", str(SINGLE), "--study", B)
    assert set(Instance.objects.values_list("study__slug", flat=True)) == {B}


def test_sampling_and_batches_stay_in_the_study(capsys):
    other = builders.study(B)
    for study in (default_study_id(), other):
        ms = builders.models(study, "x", "y")
        builders.voted(study, [(ms["x"], ms["y"], [])] * 3)
    Comparison.objects.all().delete()
    call_command("sample_comparisons", "--tuples", "50", "--batch", "B round", "--study", B)
    made = Comparison.objects.all()
    assert made.count() == 3
    assert set(made.values_list("instance__study_id", flat=True)) == {other.pk}
    assert set(made.values_list("response_a__model__study_id", flat=True)) == {other.pk}
    assert list(Batch.objects.values_list("study_id", flat=True)) == [other.pk]


def _rubric_response(study, model, n: int) -> Response:
    item = Instance.objects.create(study_id=getattr(study, "pk", study), stage="done",
                                   instruction=f"Rate {n}?")
    ScoreRubric.objects.create(instance=item, criteria="Helpful?", score1="no", score2="hardly",
                               score3="somewhat", score4="mostly", score5="fully")
    return Response.objects.create(instance=item, model=model, text=f"answer {n}")


def test_a_rating_batch_rates_only_the_studys_responses(capsys):
    other = builders.study(B)
    a_model = builders.models(default_study_id(), "m")["m"]
    b_model = builders.models(other, "m")["m"]
    theirs = [_rubric_response(default_study_id(), a_model, n) for n in range(3)]
    mine = [_rubric_response(other, b_model, n) for n in range(2)]
    call_command("build_rating_batch", "--kind", "rubric", "--title", "B rubric", "--model", "m",
                 "--study", B)
    batch = Batch.objects.get()
    assert batch.study_id == other.pk
    rated = {t.payload["response"] for t in batch.tasks.all()}
    assert rated == {str(r.uuid) for r in mine}
    # the one service refuses a batch of one study made of another's responses
    with pytest.raises(RatingBatchError, match="another study"):
        rubric_batch_create(responses=theirs, title="mixed", study=other)
    assert Batch.objects.count() == 1


def test_the_pipeline_queues_only_the_studys_items_into_its_own_batch():
    other = builders.study(B)
    mine = Instance.objects.create(study=other, instruction="B's item?", stage="captioning")
    theirs = Instance.objects.create(instruction="A's item?", stage="captioning")
    call_command("pipeline_advance", "--stage", "captioning", "--study", B)
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert theirs.stage_task_id is None
    assert Task.objects.get().batch.study_id == other.pk == mine.stage_task.batch.study_id


def test_a_metric_run_in_study_b_scores_b_against_b_reference(capsys):
    other = builders.study(B)
    for study, reference_text in ((default_study_id(), "a dog ran far away"),
                                  (other, "the cat sat on the mat")):
        ms = builders.models(study, "m", reference="ref")
        item = Instance.objects.create(study_id=getattr(study, "pk", study),
                                       instruction="What happens?", stage="done")
        Response.objects.create(instance=item, model=ms["ref"], text=reference_text)
        Response.objects.create(instance=item, model=ms["m"], text="the cat sat on the mat")
    call_command("compute_metrics", "--metrics", "rouge_l", "--study", B)
    run = MetricRun.objects.get()
    assert run.study_id == other.pk and run.total == 2  # B's model and B's reference itself
    scored = MetricScore.objects.filter(metric="rouge_l")
    assert set(scored.values_list("response__instance__study_id", flat=True)) == {other.pk}
    mine = scored.get(response__model__name="m")
    assert mine.score == pytest.approx(1.0)  # against "the cat sat on the mat", B's reference


def test_set_reference_marks_the_model_of_the_study_named(capsys):
    other = builders.study(B)
    mine, theirs = builders.models(other, "m")["m"], builders.models(default_study_id(), "m")["m"]
    call_command("set_reference", "m", "--study", B)
    assert f"m is now the reference model of {B}." in capsys.readouterr().out
    assert EvalModel.objects.get(pk=mine.pk).is_reference
    assert not EvalModel.objects.get(pk=theirs.pk).is_reference


@pytest.mark.django_db(transaction=True)
def test_a_webhook_event_of_study_b_reaches_only_b_endpoints(receiver_factory):
    other = builders.study(B)
    a_receiver, b_receiver = receiver_factory(), receiver_factory()
    for name, receiver, study in (("a-ops", a_receiver, default_study_id()),
                                  ("b-ops", b_receiver, other.pk)):
        WebhookEndpoint.objects.create(name=name, url=receiver.url, events=["batch.finished"],
                                       secret_env="WEBHOOK_SECRET_TEST", study_id=study)
    batch = Batch.objects.create(title="B batch", hit_type="pairwise_ab",
                                 status=Batch.Status.ACTIVE, study=other)
    with transaction.atomic():
        batch_set_status(batch, Batch.Status.FINISHED)
    assert wait_for_jobs(10)
    assert a_receiver.requests == []
    assert [json.loads(r["body"])["data"]["title"] for r in b_receiver.requests] == ["B batch"]
