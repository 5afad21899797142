"""Predictions import, generic judgment import/export and the VisIT-Bench human-preference CSV:
atomic, unmatched rows reported, round trips exact."""
import csv
import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.models import Batch, Instance
from judging.models import Comparison, EvalModel, Judgment, Response
from judging.selectors import pairwise_judgments
from judging.services.errors import ImportRejected
from judging.services.judgments.exports import judgments_export
from judging.services.judgments.formats import COLUMNS
from judging.services.judgments.imports import judgments_import
from judging.services.responses import predictions_import
from tests.factories import make_workers
from tests.judging import builders
from tests.support.shared_data import SHARED_DATA

pytestmark = pytest.mark.django_db
DATA = SHARED_DATA / "visit_bench"


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
    from annotation.content.formats import parse_visit_csv

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
    # A second import matches the stored instances, models, responses and judgments.
    again = judgments_import("prefs.csv", source)
    assert (again.created, again.unchanged) == (0, 3)
    assert Judgment.objects.count() == 3 and Instance.objects.count() == 2


def test_vote_counts_expand_to_votes():
    rows = _preference_rows()[:1]
    rows[0].update({"model_selection.A": "3", "model_selection.B": "2"})
    judgments_import("c.csv", _csv(rows), create_missing=True)
    assert sorted(Judgment.objects.values_list("choice", flat=True)) == ["A"] * 3 + ["B"] * 2


def test_generic_csv_and_jsonl_round_trip_with_scores_turns_and_ties():
    rows = [
        {"item_id": "it-1", "dataset": "import", "instruction": "Describe.", "image_urls": '["https://e.org/x.png"]',
         "model_a": "m1", "response_a": "r1", "model_b": "m2", "response_b": "r2",
         "annotator": "gpt-4-judge", "source": "gpt4-noref", "choice": "tie", "score": "",
         "turn": "", "timestamp": "2024-01-02T03:04:05+00:00"},
        {"item_id": "it-1", "dataset": "import", "instruction": "Describe.", "image_urls": '["https://e.org/x.png"]',
         "model_a": "m1", "response_a": "r1", "model_b": "", "response_b": "",
         "annotator": "prometheus", "source": "prometheus-vision", "choice": "", "score": "4",
         "turn": "", "timestamp": "2024-01-02T03:04:06+00:00"},
        {"item_id": "conv-1", "dataset": "import", "instruction": "Chat.", "image_urls": '["https://e.org/y.png"]',
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


# --------------------------------------------------------------------------- idempotent import


def _active(hit_type, rows, n=1):
    batch = batch_create_from_rows(hit_type=hit_type, title="t", rows=rows,
                                   assignments_per_task=n)
    return batch_set_status(batch, Batch.Status.ACTIVE)


def _do(batch, worker, data):
    """One worker claims and submits through the engine (past the minimum-time guard)."""
    assignment = task_claim_next(batch=batch, worker=worker)
    assignment_submit(assignment=assignment, data=data,
                      now=assignment.claimed_at + timedelta(seconds=30))


def test_importing_the_same_file_twice_stores_each_judgment_once(tmp_path):
    src = tmp_path / "prefs.csv"
    src.write_bytes(_csv(_preference_rows()))
    out = io.StringIO()
    call_command("import_judgments", str(src), "--create-missing", stdout=out)
    assert "3 created, 0 skipped" in out.getvalue()
    keys = set(Judgment.objects.values_list("meta__import_key", flat=True))
    assert len(keys) == 3 and all(len(k) == 64 for k in keys)
    out = io.StringIO()
    call_command("import_judgments", str(src), stdout=out)
    assert "0 created, 3 skipped as already imported" in out.getvalue()
    assert Judgment.objects.count() == 3
    renamed = tmp_path / "copy.csv"  # the file's name is no part of a judgment's identity
    renamed.write_bytes(src.read_bytes())
    assert judgments_import(renamed.name, renamed.read_bytes()).unchanged == 3
    assert len(pairwise_judgments()) == 3


def test_identical_votes_in_one_file_are_all_kept_and_counted_once():
    rows = _preference_rows()[:1]
    rows[0].update({"model_selection.A": "3", "model_selection.B": "2"})
    first = judgments_import("c.csv", _csv(rows), create_missing=True)
    assert (first.created, first.unchanged) == (5, 0)
    again = judgments_import("c.csv", _csv(rows))
    assert (again.created, again.unchanged) == (0, 5)
    rows[0]["model_selection.A"] = "4"  # a later file with one more vote adds just that vote
    more = judgments_import("c.csv", _csv(rows))
    assert (more.created, more.unchanged) == (1, 5)
    assert sorted(Judgment.objects.values_list("choice", flat=True)) == ["A"] * 4 + ["B"] * 2


def test_a_rejected_file_writes_nothing_even_when_some_rows_are_new():
    judgments_import("p.csv", _csv(_preference_rows()[:1]), create_missing=True)
    rows = _preference_rows()[:2]
    rows[1]["A_model"] = "never-seen"
    with pytest.raises(ImportRejected, match="row 2: unknown model"):
        judgments_import("p.csv", _csv(rows))
    assert Judgment.objects.count() == 1


def test_engine_judgments_are_not_matched_or_touched():
    """A crowd vote collected through the engine carries no import key: importing a row
    with the same content adds the imported vote and leaves the engine's vote as it was."""
    inst = builders.instance(instruction="Which is better?", urls=["https://e.org/q.png"],
                             external_id="q-1")
    ms = builders.models("m1", "m2")
    ra, rb = builders.respond(inst, ms["m1"], "one"), builders.respond(inst, ms["m2"], "two")
    comparison = Comparison.objects.create(instance=inst, response_a=ra, response_b=rb)
    (worker,) = make_workers(1)
    batch = _active("pairwise_ab", [{"comparison": str(comparison.uuid)}])
    _do(batch, worker, {"choice": "A"})
    engine = Judgment.objects.get()
    exported = judgments_export("csv")
    assert exported.count("\n") == 2  # header and the engine's vote
    report = judgments_import("j.csv", exported.encode())
    assert (report.created, report.unchanged) == (1, 0)
    engine.refresh_from_db()
    assert engine.assignment_id and "import_key" not in engine.meta
    assert Judgment.objects.filter(assignment__isnull=True).count() == 1
    assert judgments_import("j.csv", exported.encode()).unchanged == 1


# --------------------------------------------------------------------------- feedback, overall


def _engine_feedback_and_conversation():
    """Scored, feedback and multi-turn judgments collected through the real engine."""
    inst = builders.instance(instruction="Read the chart.", external_id="chart-1")
    rubric = builders.rubric(inst)
    ms = builders.models("LLaVA", "BLIP")
    response = builders.respond(inst, ms["LLaVA"], "The third bar is tallest.")
    w1, w2 = make_workers(2)
    scoring = _active("rubric_score", [{"response": str(response.uuid),
                                        "rubric": str(rubric.uuid)}], n=2)
    _do(scoring, w1, {"score": "4", "feedback": "Reads the chart right but misses the units."})
    _do(scoring, w2, {"score": "2", "feedback": "Gets the tallest bar wrong; vague overall."})
    scored = list(Judgment.objects.filter(kind="score").order_by("score"))
    feedback = _active("feedback_ab", [{"judgment_a": str(scored[1].uuid),
                                        "judgment_b": str(scored[0].uuid)}])
    _do(feedback, w1, {"choice": "B"})
    chat = builders.conversation(ms["LLaVA"], ms["BLIP"])
    chat.external_id = "chat-1"
    chat.save()
    comparison = Comparison.objects.create(
        instance=chat, response_a=chat.responses.get(model=ms["BLIP"], turn=1),
        response_b=chat.responses.get(model=ms["LLaVA"], turn=1))
    multi = _active("multiturn_ab", [{"comparison": str(comparison.uuid)}])
    _do(multi, w2, {"turn1": "A", "turn2": "B", "turn3": "B", "overall": "B"})


def test_feedback_and_overall_rows_are_exported_and_round_trip():
    _engine_feedback_and_conversation()
    exported = judgments_export("csv")
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert len(rows) == Judgment.objects.count() == 7
    feedback = next(r for r in rows if r["model_a"] and not r["model_b"] and r["choice"])
    assert feedback["choice"] == "B" and feedback["response_a"] == "The third bar is tallest."
    assert [f["score"] for f in json.loads(feedback["response_b"])] == [4.0, 2.0]
    assert json.loads(feedback["response_b"])[1]["feedback"].startswith("Gets the tallest")
    overall = next(r for r in rows if r["turn"] == "overall")
    assert json.loads(overall["response_a"]) == [f"B answer to turn {t}" for t in (1, 2, 3)]
    assert json.loads(overall["response_b"]) == [f"A answer to turn {t}" for t in (1, 2, 3)]
    assert judgments_export("visitbench").count("\n") == 1  # no single-turn pairs: header only
    # export → import → export is exact, and the re-import is idempotent
    Judgment.objects.all().delete()
    report = judgments_import("all.csv", exported.encode())
    assert (report.created, report.unchanged) == (7, 0)
    assert judgments_export("csv") == exported
    pref = Judgment.objects.get(kind="feedback")
    assert pref.meta["feedback_a"].startswith("Reads the chart") and pref.response.turn == 0
    assert judgments_import("all.csv", exported.encode()).unchanged == 7
    jsonl = judgments_export("jsonl")
    Judgment.objects.all().delete()
    judgments_import("all.jsonl", jsonl.encode())
    assert judgments_export("csv") == exported


def test_overall_rows_create_and_check_every_turn_answer():
    row = {"item_id": "conv-9", "instruction": "Chat.", "image_urls": '["https://e.org/c.png"]',
           "model_a": "m1", "response_a": json.dumps(["a1", "a2", "a3"]), "model_b": "m2",
           "response_b": json.dumps(["b1", "b2"]), "annotator": "W1", "source": "human",
           "choice": "A", "score": "", "turn": "overall", "timestamp": ""}
    judgments_import("o.csv", _csv([row], COLUMNS), create_missing=True)
    assert list(Response.objects.filter(model__name="m1").order_by("turn")
                .values_list("turn", "text")) == [(1, "a1"), (2, "a2"), (3, "a3")]
    exported = next(csv.DictReader(io.StringIO(judgments_export("csv"))))
    assert json.loads(exported["response_b"]) == ["b1", "b2"]
    row["response_a"] = json.dumps(["a1", "changed"])
    with pytest.raises(ImportRejected, match="Row 1: the response of 'm1' differs"):
        judgments_import("o.csv", _csv([row], COLUMNS))


@pytest.mark.parametrize("response_b, message", [
    ("", "a choice needs model_b"),
    ('[{"feedback": "only one"}]', "two"),
    ('[{"feedback": "x", "score": "high"}, {"feedback": "y"}]', "score is not a number"),
])
def test_bad_feedback_rows_name_the_row(response_b, message):
    row = {"item_id": "f-1", "instruction": "Look.", "image_urls": "", "model_a": "m1",
           "response_a": "r", "model_b": "", "response_b": response_b, "annotator": "W",
           "source": "human", "choice": "A", "score": "", "turn": "", "timestamp": ""}
    with pytest.raises(ImportRejected, match=f"Row 1: .*{message}"):
        judgments_import("f.csv", _csv([row], COLUMNS), create_missing=True)
    assert not Judgment.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_imports_of_one_file_store_it_once():
    """Real PostgreSQL, two connections at once: the second import waits for the first and
    then finds every key (without the lock both would see the file as new)."""
    import threading

    from django.db import connection, connections

    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (set TEST_DATABASE_URL)")
    judgments_import("seed.csv", _csv(_preference_rows()[:1]), create_missing=True)
    Judgment.objects.all().delete()  # instances, models and responses now exist
    rows = _preference_rows()[:2]
    rows[0].update({"model_selection.A": "150", "model_selection.B": "50"})  # a wide window
    data = _csv(rows)
    start, reports, errors = threading.Barrier(2), [], []

    def run():
        try:
            start.wait()
            reports.append(judgments_import("p.csv", data))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert sorted((r.created, r.unchanged) for r in reports) == [(0, 201), (201, 0)]
    assert Judgment.objects.count() == 201
