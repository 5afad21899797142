"""Predictions import, generic judgment import/export and the VisIT-Bench human-preference CSV:
atomic, unmatched rows reported, round trips exact."""
import csv
import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Instance
from judging.models import Comparison, EvalModel, Judgment, Response
from judging.selectors import pairwise_judgments
from judging.services.errors import ImportRejected
from judging.services.judgment_io import COLUMNS, judgments_export, judgments_import
from judging.services.responses import predictions_import
from tests.judging import builders

pytestmark = pytest.mark.django_db
DATA = Path("/work/shared/data/visit_bench")


def _csv(rows, columns=None) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns or list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def test_predictions_csv_matches_instances_and_is_idempotent():
    one = builders.instance(instruction="Count the cats.", urls=["https://e.org/cats.png"])
    two = builders.instance(instruction="Compare both.", urls=["https://e.org/1.png",
                                                               "https://e.org/2.png"])
    data = _csv([
        {"instruction": "Count the cats.", "instruction_category": "Counting",
         "image": "https://e.org/cats.png", "images": "", "LLaVA prediction": "Three cats.",
         "BLIP prediction": "Two."},
        {"instruction": "Compare  both.", "instruction_category": "x", "image": "",
         "images": json.dumps(["https://e.org/1.png", "https://e.org/2.png"]),
         "LLaVA prediction": "The second is darker.", "BLIP prediction": "Same."},
    ])
    report = predictions_import("preds.csv", data)
    assert report.created == 4 and not report.unmatched
    assert Response.objects.get(instance=one, model__name="LLaVA").text == "Three cats."
    assert Response.objects.get(instance=two, model__name="BLIP").text == "Same."
    assert predictions_import("preds.csv", data).unchanged == 4
    changed = data.replace(b"Three cats.", b"Four cats.")
    with pytest.raises(ImportRejected, match="different response"):
        predictions_import("preds.csv", changed)
    assert Response.objects.get(instance=one, model__name="LLaVA").text == "Three cats."


def test_unmatched_prediction_rows_reject_the_file_and_are_named():
    builders.instance(instruction="Known.", urls=["https://e.org/k.png"])
    lines = [{"instruction": "Known.", "image": "https://e.org/k.png", "M prediction": "ok"},
             {"instruction": "Unknown one.", "image": "https://e.org/u.png", "M prediction": "x"}]
    with pytest.raises(ImportRejected, match="row 2: no instance") as info:
        predictions_import("p.csv", _csv(lines))
    assert info.value.report.unmatched and not Response.objects.exists()
    assert not EvalModel.objects.filter(name="M").exists()
    report = predictions_import("p.csv", _csv(lines), skip_unmatched=True)
    assert report.created == 1 and len(report.unmatched) == 1


def test_predictions_jsonl_with_turns():
    inst = builders.instance(instruction="Chat.", external_id="conv-7")
    data = b"\n".join(json.dumps({"item_id": "conv-7", "model": "Q", "prediction": f"t{t}",
                                  "turn": t}).encode() for t in (1, 2, 3))
    assert predictions_import("p.jsonl", data).created == 3
    assert list(inst.responses.order_by("turn").values_list("text", flat=True)) == \
        ["t1", "t2", "t3"]


@pytest.mark.skipif(not DATA.exists(), reason="shared data absent")
def test_predictions_for_real_visitbench_instances():
    from annotation.dataset_formats import parse_visit_csv

    dataset = parse_visit_csv(DATA / "visit_fully_annotated_example.csv")
    for record in dataset.records:
        builders.instance(instruction=record.instruction, urls=[i.url for i in record.images],
                          category=record.category)
    rows = [{"instruction": r.instruction, "instruction_category": r.category,
             "image": r.images[0].url, "my-model prediction": f"answer {k}"}
            for k, r in enumerate(dataset.records)]
    report = predictions_import("sub.csv", _csv(rows))
    assert report.created == len(dataset.records) > 0 and not report.unmatched


def _preference_rows():
    return [
        {"image_url": "https://e.org/a.png", "instruction": "What is odd here?",
         "A": "A cat on a fridge.", "B": "Nothing.", "A_model": "LLaVA", "B_model": "BLIP",
         "model_selection.A": "1", "model_selection.B": "0"},
        {"image_url": "https://e.org/a.png", "instruction": "What is odd here?",
         "A": "Nothing.", "B": "A cat on a fridge.", "A_model": "BLIP", "B_model": "LLaVA",
         "model_selection.A": "0", "model_selection.B": "1"},
        {"image_url": "https://e.org/b.png", "instruction": "Count the birds.",
         "A": "Four birds, one flying.", "B": "Five.", "A_model": "reference",
         "B_model": "LLaVA", "model_selection.A": "1", "model_selection.B": "0"},
    ]


def test_human_preference_csv_round_trips():
    source = _csv(_preference_rows())
    with pytest.raises(ImportRejected, match="3 of 3 rows could not be matched"):
        judgments_import("prefs.csv", source)
    assert not Judgment.objects.exists()
    report = judgments_import("prefs.csv", source, create_missing=True)
    assert report.created == 3
    assert Comparison.objects.count() == 2  # the swapped row reuses the pair's comparison
    assert judgments_export("visitbench").encode() == source
    winners = [a if o == "A" else b for a, b, o, _ in pairwise_judgments()]
    assert winners == ["LLaVA", "LLaVA", "reference"]
    # A second import now matches the stored instances, models and responses.
    judgments_import("prefs.csv", source)
    assert Judgment.objects.count() == 6 and Instance.objects.count() == 2


def test_vote_counts_expand_to_votes():
    rows = _preference_rows()[:1]
    rows[0].update({"model_selection.A": "3", "model_selection.B": "2"})
    judgments_import("c.csv", _csv(rows), create_missing=True)
    assert sorted(Judgment.objects.values_list("choice", flat=True)) == ["A"] * 3 + ["B"] * 2


def test_generic_csv_and_jsonl_round_trip_with_scores_turns_and_ties():
    rows = [
        {"item_id": "it-1", "instruction": "Describe.", "image_urls": '["https://e.org/x.png"]',
         "model_a": "m1", "response_a": "r1", "model_b": "m2", "response_b": "r2",
         "annotator": "gpt-4-judge", "source": "gpt4-noref", "choice": "tie", "score": "",
         "turn": "", "timestamp": "2024-01-02T03:04:05+00:00"},
        {"item_id": "it-1", "instruction": "Describe.", "image_urls": '["https://e.org/x.png"]',
         "model_a": "m1", "response_a": "r1", "model_b": "", "response_b": "",
         "annotator": "prometheus", "source": "prometheus-vision", "choice": "", "score": "4",
         "turn": "", "timestamp": "2024-01-02T03:04:06+00:00"},
        {"item_id": "conv-1", "instruction": "Chat.", "image_urls": '["https://e.org/y.png"]',
         "model_a": "m1", "response_a": "t2 a", "model_b": "m2", "response_b": "t2 b",
         "annotator": "mturk:W1", "source": "human", "choice": "B", "score": "", "turn": "2",
         "timestamp": "2024-01-02T03:04:07+00:00"},
    ]
    data = _csv(rows, COLUMNS)
    judgments_import("j.csv", data, create_missing=True)
    exported = judgments_export("csv")
    assert exported.encode() == data
    jsonl = judgments_export("jsonl")
    assert json.loads(jsonl.splitlines()[0])["image_urls"] == ["https://e.org/x.png"]
    Judgment.objects.all().delete()
    judgments_import("j.jsonl", jsonl.encode())
    assert judgments_export("csv").encode() == data
    assert pairwise_judgments(judge="gpt4-noref")[0][2] == "tie"


def test_bad_row_names_the_row_and_writes_nothing():
    rows = _preference_rows()
    rows[1]["model_selection.A"] = "maybe"
    with pytest.raises(ImportRejected, match="Row 2: model_selection.A"):
        judgments_import("bad.csv", _csv(rows), create_missing=True)
    assert not Judgment.objects.exists() and not Instance.objects.exists()


def test_import_and_export_commands(tmp_path):
    src = tmp_path / "prefs.csv"
    src.write_bytes(_csv(_preference_rows()))
    with pytest.raises(CommandError, match="could not be matched"):
        call_command("import_judgments", str(src))
    call_command("import_judgments", str(src), "--create-missing")
    out = tmp_path / "out.csv"
    call_command("export_judgments", "--format", "visitbench", "--out", str(out))
    assert out.read_bytes() == src.read_bytes()
