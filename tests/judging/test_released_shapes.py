"""Judgment and prediction files shaped like public releases, through the commands.

Public pairwise test sets repeat an instruction across many items, each item with its own id and
freshly generated responses; VisIT-Bench's files name the reference ``human_verified_reference``
and give votes without worker ids.
"""
import csv
import io
import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from annotation.content.imports.convbench import import_convbench
from annotation.models import Batch, Instance
from judging.judges.ablation import import_responses
from judging.leaderboards import leaderboard_build
from judging.models import Comparison, EvalModel, Judgment, Response
from judging.services.comparisons import comparisons_sample
from judging.services.errors import ImportRejected
from judging.services.judgments.exports import judgments_export
from judging.services.judgments.formats import COLUMNS, VISIT_COLUMNS
from judging.services.judgments.imports import judgments_import
from judging.services.responses import reference_responses_sync
from tests.judging import builders
from tests.support.shared_data import SHARED_DATA

pytestmark = pytest.mark.django_db


def _csv(rows: list[dict], columns=COLUMNS) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def _pairwise_test_set() -> list[dict]:
    """Three items asking the same question of different inputs and model pairs; each item's
    responses are its own (model "alpha" answers differently in items 1 and 2)."""
    rows = []
    items = [("q1", "https://e.org/a.png", "alpha", "beta"),
             ("q2", "https://e.org/b.png", "alpha", "gamma"),
             ("q3", "", "beta", "gamma")]
    for item, url, a, b in items:
        for choice in ("A", "B", "A"):
            rows.append({"item_id": item, "instruction": "Which answer is more helpful?",
                         "image_urls": json.dumps([url]) if url else "", "model_a": a,
                         "response_a": f"{a} on {item}", "model_b": b,
                         "response_b": f"{b} on {item}", "annotator": "judge-x",
                         "source": "judge-x", "choice": choice})
    return rows


def test_item_ids_are_identities_even_when_instructions_repeat(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_bytes(_csv(_pairwise_test_set()))
    call_command("import_judgments", str(path), "--create-missing", "--dataset", "testset")
    items = Instance.objects.filter(source="testset")
    assert sorted(items.values_list("external_id", flat=True)) == ["q1", "q2", "q3"]
    assert items.filter(instruction="Which answer is more helpful?").count() == 3
    alpha = Response.objects.filter(model__name="alpha").order_by("instance__external_id")
    assert [r.text for r in alpha] == ["alpha on q1", "alpha on q2"]
    assert Comparison.objects.count() == 3 and Judgment.objects.count() == 9
    # Importing the same file again finds every item by its id and adds nothing.
    call_command("import_judgments", str(path), "--create-missing", "--dataset", "testset")
    assert Instance.objects.count() == 3 and Judgment.objects.count() == 9


def test_item_ids_without_a_dataset_name_go_to_the_import_dataset():
    judgments_import("pairs.csv", _csv(_pairwise_test_set()), create_missing=True)
    assert sorted(Instance.objects.filter(source="import").values_list(
        "external_id", flat=True)) == ["q1", "q2", "q3"]


def test_another_files_ids_are_not_merged_into_stored_items():
    judgments_import("first.csv", _csv(_pairwise_test_set()), create_missing=True)
    other = [{**r, "instruction": "Is the caption faithful?"} for r in _pairwise_test_set()]
    with pytest.raises(ImportRejected, match="another instruction") as caught:
        judgments_import("second.csv", _csv(other), create_missing=True)
    assert "dataset" in str(caught.value)
    assert Instance.objects.count() == 3 and Judgment.objects.count() == 9
    # Named as its own dataset, the second file's ids are its own items.
    judgments_import("second.csv", _csv(other), create_missing=True, dataset="captions")
    assert Instance.objects.filter(source="captions").count() == 3


def test_one_id_with_two_instructions_in_one_file_is_refused():
    rows = _pairwise_test_set()
    rows[1] = {**rows[1], "instruction": "Something else?"}
    with pytest.raises(ImportRejected, match="row 2: id 'q1' has another instruction"):
        judgments_import("bad.csv", _csv(rows), create_missing=True)
    assert not Instance.objects.exists() and not Judgment.objects.exists()


def test_rows_without_item_id_still_match_by_instruction_and_images():
    inst = builders.instance(instruction="What colour is the bus?",
                             urls=["https://e.org/bus.png"])
    ms = builders.models("m1", "m2")
    builders.respond(inst, ms["m1"], "Red.")
    builders.respond(inst, ms["m2"], "Blue.")
    row = {"instruction": "What colour is the bus?", "image_urls": '["https://e.org/bus.png"]',
           "model_a": "m1", "response_a": "Red.", "model_b": "m2", "response_b": "Blue.",
           "annotator": "w1", "source": "human", "choice": "A"}
    report = judgments_import("bus.csv", _csv([row]))
    assert report.created == 1 and Judgment.objects.get().comparison.instance == inst


def test_export_names_the_dataset_and_reimports_into_an_empty_database():
    judgments_import("pairs.csv", _csv(_pairwise_test_set()), create_missing=True,
                     dataset="testset")
    exported = judgments_export("csv")
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert {r["dataset"] for r in rows} == {"testset"}
    assert {r["item_id"] for r in rows} == {"q1", "q2", "q3"}
    Instance.objects.all().delete()
    EvalModel.objects.all().delete()
    judgments_import("again.csv", exported.encode(), create_missing=True)
    assert Instance.objects.filter(source="testset").count() == 3
    assert judgments_export("csv") == exported


def test_imported_judgments_record_their_file_and_import_time():
    judgments_import("pairs.csv", _csv(_pairwise_test_set()), create_missing=True)
    before = timezone.now()
    judgments_import("pairs.csv", _csv(_pairwise_test_set()), dataset="other",
                     create_missing=True)
    first, second = (Judgment.objects.filter(comparison__instance__source=s)
                     for s in ("import", "other"))
    assert {j.import_file for j in Judgment.objects.all()} == {"pairs.csv"}
    assert len({j.imported_at for j in first}) == 1 and len({j.imported_at for j in second}) == 1
    assert first[0].imported_at < before <= second[0].imported_at


# --------------------------------------------------------------------------- the reference


def _preference_rows(reference_text="The verified answer.") -> list[dict]:
    base = {"image_url": "https://e.org/p.png", "instruction": "What is odd here?"}
    return [
        {**base, "A": reference_text, "B": "A guess.", "A_model": "human_verified_reference",
         "B_model": "llava", "model_selection.A": "True", "model_selection.B": "False"},
        {**base, "A": "A guess.", "B": reference_text, "A_model": "llava",
         "B_model": "human_verified_reference", "model_selection.A": "False",
         "model_selection.B": "True"},
        {**base, "A": "Another guess.", "B": "A guess.", "A_model": "blip2",
         "B_model": "llava", "model_selection.A": "False", "model_selection.B": "True"},
    ]


def test_visitbench_reference_name_is_the_reference_model():
    judgments_import("prefs.csv", _csv(_preference_rows(), VISIT_COLUMNS), create_missing=True)
    reference = EvalModel.objects.get(is_reference=True)
    assert reference.name == "human_verified_reference"
    board = leaderboard_build(judge="human", split="all", bootstrap_rounds=0)
    rows = {r["model"]: r for r in board.as_dict()["rows"]}
    assert rows["llava"]["win_rate_vs_reference"] == 0.0
    assert rows["llava"]["n_vs_reference"] == 2


def test_visitbench_reference_name_maps_to_an_existing_reference():
    marked = builders.models("Human-verified reference", reference="Our reference")
    judgments_import("prefs.csv", _csv(_preference_rows(), VISIT_COLUMNS), create_missing=True)
    assert EvalModel.objects.get(is_reference=True) == marked["Our reference"]
    assert not EvalModel.objects.filter(name="human_verified_reference").exists()
    assert Response.objects.filter(model=marked["Our reference"]).count() == 1


def test_set_reference_command(capsys):
    ms = builders.models("gpt4v", "human_verified_reference", reference="Old reference")
    call_command("set_reference", "human_verified_reference")
    assert "now the reference" in capsys.readouterr().out
    assert list(EvalModel.objects.filter(is_reference=True)) == [ms["human_verified_reference"]]
    with pytest.raises(CommandError, match="no model named 'nobody'"):
        call_command("set_reference", "nobody")
    assert EvalModel.objects.get(is_reference=True) == ms["human_verified_reference"]


def test_predictions_column_named_after_the_reference_fills_the_reference_model(tmp_path):
    inst = builders.instance(instruction="Read the sign.", urls=["https://e.org/sign.png"])
    path = tmp_path / "preds.csv"
    path.write_text("instruction,image,human_verified_reference prediction,llava prediction\n"
                    "Read the sign.,https://e.org/sign.png,It says STOP.,It says GO.\n")
    call_command("import_predictions", str(path))
    reference = EvalModel.objects.get(is_reference=True)
    assert reference.name == "human_verified_reference"
    assert Response.objects.get(model=reference, instance=inst).text == "It says STOP."


# --------------------------------------------------------------------------- sampling


def test_the_reference_competes_without_any_explicit_step():
    ms = builders.models("m1", "m2")
    with_reference = builders.instance()
    without = builders.instance()
    Instance.objects.filter(pk=without.pk).update(reference_status="rejected",
                                                  reference_output="")
    for inst in (with_reference, without):
        builders.respond(inst, ms["m1"])
        builders.respond(inst, ms["m2"])
    made = comparisons_sample(tuples=100, seed=1)
    reference = EvalModel.objects.get(is_reference=True)
    with_ref = [c for c in made if reference.pk in (c.response_a.model_id, c.response_b.model_id)]
    assert len(with_ref) == 2 and {c.instance_id for c in with_ref} == {with_reference.pk}
    assert len(made) == 4  # 3 pairs on the instance with a reference, 1 on the other


def test_reference_sync_follows_corrected_references():
    ms = builders.models("m1")
    label = builders.instance()
    corrected = builders.instance()
    for inst in (label, corrected):
        builders.respond(inst, ms["m1"])
    reference_responses_sync()
    # The first instance's "reference" was a dataset label: it has none now; the second's text
    # was corrected.
    Instance.objects.filter(pk=label.pk).update(reference_status="rejected", reference_output="")
    Instance.objects.filter(pk=corrected.pk).update(reference_output="The corrected answer.")
    result = reference_responses_sync()
    assert (result.created, result.updated, result.removed, result.stale) == (0, 1, 1, [])
    reference = EvalModel.objects.get(is_reference=True)
    assert list(Response.objects.filter(model=reference).values_list("instance_id", "text")) == [
        (corrected.pk, "The corrected answer.")]


def test_reference_sync_keeps_judged_responses():
    ms = builders.models("m1")
    inst = builders.instance()
    builders.respond(inst, ms["m1"])
    comparisons_sample(tuples=10, seed=1)
    assert Comparison.objects.count() == 1
    Instance.objects.filter(pk=inst.pk).update(reference_output="Changed after judging.")
    result = reference_responses_sync()
    assert result.updated == 0 and len(result.stale) == 1
    assert Comparison.objects.count() == 1


def _mixed_study():
    """VisIT-Bench-like single turns and ConvBench-like conversations in one database."""
    ms = builders.models("m1", "m2")
    for n in range(3):
        inst = builders.instance(category="Chart reading" if n else "Counting")
        Instance.objects.filter(pk=inst.pk).update(source="visitbench")
        builders.respond(inst, ms["m1"])
        builders.respond(inst, ms["m2"])
    for _ in range(2):
        conv = builders.conversation(ms["m1"], ms["m2"])
        Instance.objects.filter(pk=conv.pk).update(source="convbench")
    return ms


def test_sampling_a_mixed_study_makes_one_batch_per_page_kind(capsys):
    _mixed_study()
    call_command("sample_comparisons", "--batch", "Round 1", "--tuples", "100")
    out = capsys.readouterr().out
    batches = {b.hit_type: b for b in Batch.objects.all()}
    assert set(batches) == {"pairwise_ab", "multiturn_ab"}, out
    assert batches["multiturn_ab"].tasks.count() == 2
    # 3 single-turn instances: m1/m2 plus the reference against each → 3 pairs each.
    assert batches["pairwise_ab"].tasks.count() == 9
    assert batches["pairwise_ab"].title == "Round 1 (single-turn)"


@pytest.mark.parametrize("args,expected", [
    (["--kind", "conversation"], {"multiturn_ab": 2}),
    (["--source", "visitbench"], {"pairwise_ab": 9}),
    (["--category", "Counting"], {"pairwise_ab": 3}),
    (["--source", "visitbench", "--kind", "multi"], None),
])
def test_sampling_filters(args, expected):
    _mixed_study()
    if expected is None:
        with pytest.raises(CommandError, match="no instance matches"):
            call_command("sample_comparisons", "--batch", "B", *args)
        assert not Comparison.objects.exists()
        return
    call_command("sample_comparisons", "--batch", "B", *args)
    assert {b.hit_type: b.tasks.count() for b in Batch.objects.all()} == expected


# --------------------------------------------------------------------------- ConvBench release


@pytest.mark.slow
def test_released_convbench_offers_only_the_generated_condition(tmp_path, capsys):
    """The workbook has instructions only: no reference answers to substitute, so the
    perfect-perception conditions are left out (and said so) instead of sent with empty turns."""
    workbook = SHARED_DATA / "convbench" / "ConvBench.xlsx"
    if not workbook.exists():
        pytest.skip(f"{workbook} not available")
    import_convbench(workbook, SHARED_DATA / "convbench" / "images")
    out = tmp_path / "conv.jsonl"
    call_command("export_ablation", "--out", str(out))
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 578 and {r["condition"] for r in records} == {"generated"}
    assert all(t["response"] is None for r in records for t in r["turns"])
    err = capsys.readouterr().err
    assert "perfect_perception: 578 conversation(s) left out" in err
    line = json.dumps({"instance": records[0]["instance"], "condition": "perfect_perception",
                       "responses": {"2": "b", "3": "c"}})
    with pytest.raises(ValidationError, match="turn 1, which has no reference answer"):
        import_responses(model_name="vlm", lines=[line])
    assert not Response.objects.exists()


def test_set_reference_api_is_for_admins(admin, analyst):
    from rest_framework.test import APIClient

    ms = builders.models("llava", reference="Old reference")
    url = "/api/eval/models/llava/set-reference/"
    client = APIClient()
    client.force_authenticate(analyst)
    assert client.post(url).status_code == 403
    assert EvalModel.objects.get(is_reference=True) == ms["Old reference"]
    client.force_authenticate(admin)
    answer = client.post(url)
    assert answer.status_code == 200 and answer.data["is_reference"] is True
    assert EvalModel.objects.get(is_reference=True) == ms["llava"]
    assert client.post("/api/eval/models/nobody/set-reference/").status_code == 404


@pytest.mark.parametrize("url", ["javascript:alert(1)", "JAVASCRIPT:alert(1)",
                                 "data:image/png;base64,AAAA", "/etc/passwd", "ftp://e.org/x.png",
                                 "https://"])
def test_image_urls_must_be_http(url):
    """Whatever the entry point, a stored image URL is http(s) (task pages render them)."""
    from annotation.content.imports.images import image_for_url
    from annotation.models import Image

    row = {"item_id": "x1", "instruction": "Look.", "image_urls": json.dumps([url]),
           "model_a": "m1", "response_a": "a", "model_b": "m2", "response_b": "b",
           "annotator": "w", "source": "human", "choice": "A"}
    with pytest.raises(ImportRejected, match=r"Row 1: .*(http|URL)"):
        judgments_import("bad.csv", _csv([row]), create_missing=True)
    with pytest.raises(ValueError):
        image_for_url(url)
    assert not Image.objects.exists() and not Instance.objects.exists()


def test_the_database_refuses_other_schemes_whatever_writes_the_row():
    from django.db import IntegrityError, transaction

    from annotation.models import Image

    with pytest.raises(IntegrityError), transaction.atomic():
        Image.objects.create(source_url="javascript:alert(1)")
    Image.objects.bulk_create([Image(source_url="HTTPS://e.org/a.png"), Image(source_url="")])
    assert Image.objects.count() == 2


def test_import_queries_do_not_grow_with_the_votes_of_one_item():
    """A preference file's ~5 votes per pair, reference included: the model, instance,
    response and comparison lookups happen once per file or item, not once per row."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def import_votes(n: int, name: str) -> int:
        rows = _preference_rows()[:1]
        rows[0].update({"model_selection.A": str(n), "model_selection.B": "0"})
        with CaptureQueriesContext(connection) as queries:
            judgments_import(name, _csv(rows, VISIT_COLUMNS), create_missing=True)
        return len(queries)

    few = import_votes(2, "a.csv")
    Judgment.objects.all().delete()
    many = import_votes(200, "b.csv")
    assert Judgment.objects.count() == 200
    assert many <= few, (few, many)
