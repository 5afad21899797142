"""Property tests of the judging importers — generic judgment CSV/JSONL, the VisIT-Bench
human-preference CSV, predictions, and the ConvBench ablation responses: malformed input is
imported validly or refused with the importer's own error naming the row, and a refused file
leaves every table as it was: these files come from outside, and one that fails half-way must
not leave half its judgments behind."""
import csv
import io
import json

import pytest
from django.core.exceptions import ValidationError
from hypothesis import given
from hypothesis import strategies as st

from judging.judges.ablation import import_responses
from judging.models import Judgment, Response
from judging.services.errors import ImportRejected
from judging.services.judgments.formats import COLUMNS, VISIT_COLUMNS
from judging.services.judgments.imports import judgments_import
from judging.services.responses import predictions_import
from tests.annotation.test_import_properties import (
    JSONISH,
    NASTY,
    ODD,
    PROPERTY,
    db_counts,
    refused_or_valid,
    scratch,
)
from tests.judging import builders

pytestmark = pytest.mark.django_db
# A refusal caused by one row may be reported at a later, valid row that conflicts with it
# (e.g. two different texts for one response), so "names a row" is what holds in general.
ANY_ROW = r"\b(row|line)s? \d+"


def _csv(rows: list[dict], columns: list[str]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode("utf-8", "surrogatepass")


def _jsonl(rows: list) -> bytes:
    return "\n".join(json.dumps(r) for r in rows).encode("utf-8")


def _upload(rows: list, fmt: str, columns: list[str]) -> tuple[str, bytes]:
    """The rows as ``name, bytes``; CSV cells are text, so non-text values are JSON-encoded."""
    if fmt == "jsonl":
        return "rows.jsonl", _jsonl(rows)
    cells = [{k: v if isinstance(v, str) else json.dumps(v) for k, v in r.items()}
             for r in rows if isinstance(r, dict)]
    return "rows.csv", _csv(cells, columns)


def _pair_row(n: int, **changes) -> dict:
    return {"item_id": f"item-{n}", "instruction": f"Describe picture {n}.",
            "image_urls": json.dumps([f"https://e.org/{n}.png"]), "model_a": "m1",
            "response_a": f"a{n}", "model_b": "m2", "response_b": f"b{n}",
            "annotator": "w1", "source": "human", "choice": "A", "score": "", "turn": "",
            "timestamp": "", **changes}


# Values a cell may hold in a hostile file: valid ones, junk of every JSON type, odd text.
CELL = st.one_of(
    st.sampled_from(["", "A", "B", "tie", "TIE", "4", "-3", "1e400", "nan", "inf", "overall",
                     "1", "3", "m1", "m2", "human", "2024-01-02T03:04:05",
                     "2024-13-45T99:99:99", "2024-02-30T00:00:00+00:00", "[]", "[1, 2]",
                     '[{"feedback": "x", "score": 1e400}, {"feedback": "y"}]',
                     '[{"feedback": "x", "score": 2}, {"feedback": "y", "score": null}]',
                     '["https://e.org/1.png"]', "[" * 3000]),
    JSONISH, NASTY,
)


# --------------------------------------------------------------------------- generic judgments


@PROPERTY
@given(st.integers(0, 3), st.dictionaries(st.sampled_from(COLUMNS), CELL, max_size=7),
       st.sampled_from(["csv", "jsonl"]), st.booleans(), st.booleans())
def test_generic_judgment_rows_import_or_refuse(position, changes, fmt, create, skip):
    rows = [_pair_row(n) for n in range(3)]
    rows.insert(position, _pair_row(7, **changes))
    name, data = _upload(rows, fmt, COLUMNS)
    with scratch():
        report, _ = refused_or_valid(
            lambda: judgments_import(name, data, create_missing=create, skip_unmatched=skip),
            ImportRejected, row_pattern=ANY_ROW)
        if report is not None:
            assert Judgment.objects.count() == report.created
            assert report.created + len(report.unmatched) <= report.rows == 4


JUDGMENT_CORRUPTIONS = {
    "bad turn": {"turn": "4"},
    "no model_a": {"model_a": ""},
    "no annotator": {"annotator": " "},
    "score not a number": {"score": "four"},
    "score NaN": {"score": "nan"},
    "score infinite": {"score": "1e400"},
    "score and choice": {"score": "3", "model_b": ""},
    "bad choice": {"choice": "C"},
    "same models": {"model_b": "m1"},
    "feedback not JSON": {"model_b": "", "response_b": "two feedbacks"},
    "feedback score too large": {"model_b": "", "response_b": json.dumps(
        [{"feedback": "x", "score": 10**400}, {"feedback": "y"}])},
    "bad timestamp": {"timestamp": "yesterday"},
    "impossible timestamp": {"timestamp": "2024-02-30T10:00:00"},
    "image_urls a JSON object": {"image_urls": '[{"a": 1}'},
    "image_urls broken JSON": {"image_urls": "[oops"},
    "NUL in response": {"response_a": "a\x00b"},
    "NUL in annotator": {"annotator": "w\x00"},
    "surrogate in instruction": {"instruction": "Describe \ud800."},
    "item id too long": {"item_id": "i" * 300},
    "image URL too long": {"image_urls": json.dumps(["https://e.org/" + "x" * 1000])},
    "deeply nested image_urls": {"image_urls": "[" * 3000 + "]" * 3000},
}


@PROPERTY
@given(st.integers(0, 3), st.sampled_from(sorted(JUDGMENT_CORRUPTIONS)),
       st.sampled_from(["csv", "jsonl"]))
def test_generic_judgment_one_corrupted_row_is_refused_by_number(position, corruption, fmt):
    rows = [_pair_row(n) for n in range(3)]
    rows.insert(position, _pair_row(7, **JUDGMENT_CORRUPTIONS[corruption]))
    name, data = _upload(rows, fmt, COLUMNS)
    line = position + 2 if fmt == "csv" else position + 1  # a CSV's header is line 1
    with scratch():
        result, _ = refused_or_valid(
            lambda: judgments_import(name, data, create_missing=True), ImportRejected,
            row_pattern=rf"\b(row {position + 1}|line {line})\b")
        assert result is None, f"{corruption} was accepted"


@PROPERTY
@given(st.binary(max_size=300), st.sampled_from(["j.csv", "j.jsonl", "j.xlsx"]),
       st.sampled_from(["auto", "generic", "visitbench"]))
def test_judgment_file_of_arbitrary_bytes_imports_or_refuses(data, name, fmt):
    with scratch():
        refused_or_valid(lambda: judgments_import(name, data, fmt=fmt, create_missing=True),
                         ImportRejected)


def _pref_row(n: int, **changes) -> dict:
    return {"image_url": f"https://e.org/{n}.png", "instruction": f"What is odd in {n}?",
            "A": f"a{n}", "B": f"b{n}", "A_model": "m1", "B_model": "m2",
            "model_selection.A": "1", "model_selection.B": "0", **changes}


PREFERENCE_CORRUPTIONS = {
    "no votes": {"model_selection.A": "0", "model_selection.B": "0"},
    "fractional votes": {"model_selection.A": "1.5"},
    "negative votes": {"model_selection.A": "-1", "model_selection.B": "2"},
    "NaN votes": {"model_selection.A": "nan"},
    "infinite votes": {"model_selection.B": "1e400"},
    "absurd vote count": {"model_selection.A": "1e9"},
    "votes not a count": {"model_selection.B": "maybe"},
    "NUL in response": {"B": "b\x00"},
    "image URL list broken": {"image_url": "[oops"},
    "same models": {"B_model": "m1"},
}


@PROPERTY
@given(st.integers(0, 3), st.sampled_from(sorted(PREFERENCE_CORRUPTIONS)))
def test_preference_csv_one_corrupted_row_is_refused_by_number(position, corruption):
    rows = [_pref_row(n) for n in range(3)]
    rows.insert(position, _pref_row(7, **PREFERENCE_CORRUPTIONS[corruption]))
    data = _csv(rows, VISIT_COLUMNS)
    with scratch():
        result, _ = refused_or_valid(
            lambda: judgments_import("prefs.csv", data, create_missing=True), ImportRejected,
            row_pattern=rf"\brow {position + 1}\b")
        assert result is None, f"{corruption} was accepted"


@PROPERTY
@given(st.integers(0, 3), st.dictionaries(st.sampled_from(VISIT_COLUMNS), CELL, max_size=5),
       st.sampled_from(["csv", "jsonl"]))
def test_preference_rows_of_any_type_import_or_refuse(position, changes, fmt):
    rows = [_pref_row(n) for n in range(3)]
    rows.insert(position, _pref_row(7, **changes))
    name, data = _upload(rows, fmt, VISIT_COLUMNS)
    with scratch():
        report, _ = refused_or_valid(
            lambda: judgments_import(name, data, fmt="visitbench", create_missing=True),
            ImportRejected, row_pattern=ANY_ROW)
        if report is not None:
            assert Judgment.objects.count() == report.created


def test_preference_vote_counts_that_are_not_counts_are_refused():
    """Regression: 'nan' and '1e400' vote counts raised ValueError / OverflowError, and a
    negative count silently dropped votes; each is now refused naming the row."""
    for bad in ("nan", "1e400", "-1", "1e9"):
        rows = [_pref_row(1), _pref_row(2, **{"model_selection.A": bad,
                                               "model_selection.B": "2"})]
        before = db_counts()
        with pytest.raises(ImportRejected, match=r"Row 2: model_selection"):
            judgments_import("p.csv", _csv(rows, VISIT_COLUMNS), create_missing=True)
        assert db_counts() == before


def test_generic_values_that_crashed_are_refused_by_row():
    """Regression: an impossible timestamp (ValueError), an infinite feedback score
    (OverflowError), a non-text image_urls in JSONL (AttributeError), NUL / surrogates, an
    item id too long for its column and two model names sharing their first 100 characters
    (database errors) — each now names the row; a NaN score is refused too."""
    cases = [{"timestamp": "2024-02-30T10:00:00"},
             {"model_b": "", "response_b": json.dumps([{"feedback": "x", "score": 10**400},
                                                       {"feedback": "y"}])},
             {"image_urls": 5}, {"response_a": "a\x00b"}, {"instruction": "x \ud800"},
             {"item_id": "i" * 300}, {"score": "nan", "model_b": "", "choice": ""},
             {"model_a": "m" * 100 + "1", "model_b": "m" * 100 + "2"}]
    for changes in cases:
        before = db_counts()
        with pytest.raises(ImportRejected, match=r"Row 2\b"):
            judgments_import("j.jsonl", _jsonl([_pair_row(1), _pair_row(2, **changes)]),
                             create_missing=True)
        assert db_counts() == before, changes


# --------------------------------------------------------------------------- predictions


@pytest.fixture
def items():
    return [builders.instance(instruction=f"Count thing {n}.", urls=[f"https://e.org/p{n}.png"])
            for n in range(3)]


def _pred_row(item, **changes) -> dict:
    return {"item_id": str(item.uuid), "instruction": item.instruction,
            "image": f"https://e.org/p{item.pk}.png", "LLaVA prediction": f"Some {item.pk}.",
            **changes}


PRED_COLUMNS = ["item_id", "instruction", "image", "images", "LLaVA prediction", "model",
                "prediction", "turn"]


@PROPERTY
@given(data=st.data())
def test_prediction_rows_of_any_type_import_or_refuse(items, data):
    position = data.draw(st.integers(0, 2), label="position")
    changes = data.draw(st.dictionaries(st.sampled_from(PRED_COLUMNS), CELL, max_size=4),
                        label="changes")
    fmt = data.draw(st.sampled_from(["csv", "jsonl"]), label="fmt")
    rows = [_pred_row(i) for i in items]
    rows[position] = _pred_row(items[position], **changes)
    name, body = _upload(rows, fmt, PRED_COLUMNS)
    skip = data.draw(st.booleans(), label="skip_unmatched")
    with scratch():
        report, _ = refused_or_valid(
            lambda: predictions_import(name, body, skip_unmatched=skip), ImportRejected,
            row_pattern=ANY_ROW)
        if report is not None:
            assert Response.objects.count() == report.created


PRED_CORRUPTIONS = {
    "no prediction column": lambda r: {k: v for k, v in r.items() if k != "LLaVA prediction"},
    "prediction not text": lambda r: {**r, "LLaVA prediction": None},  # "" is an answer
    "bad turn": lambda r: {**r, "turn": "9"},
    "NUL in prediction": lambda r: {**r, "LLaVA prediction": "x\x00"},
    "surrogate in prediction": lambda r: {**r, "LLaVA prediction": "x\ud800"},
    "images broken JSON list": lambda r: {**r, "image": '["a", '},
    "instruction a number": lambda r: {**r, "item_id": "", "instruction": 5},
    "images a number": lambda r: {**r, "item_id": "", "images": 7},
}


@PROPERTY
@given(st.integers(0, 2), st.sampled_from(sorted(PRED_CORRUPTIONS)))
def test_prediction_one_corrupted_row_is_refused_by_number(items, position, corruption):
    rows = [_pred_row(i) for i in items]
    rows[position] = PRED_CORRUPTIONS[corruption](rows[position])
    with scratch():
        result, _ = refused_or_valid(lambda: predictions_import("p.jsonl", _jsonl(rows)),
                                     ImportRejected, row_pattern=rf"\brows? {position + 1}\b")
        assert result is None, f"{corruption} was accepted"


def test_prediction_values_that_crashed_are_refused_by_row(items):
    """Regression: a number as instruction or images in JSONL (AttributeError / TypeError), an
    images list nested too deeply (RecursionError), NUL or a lone surrogate in a prediction (database
    errors)."""
    for changes in ({"item_id": "", "instruction": 5}, {"item_id": "", "images": 7},
                    {"images": "[" * 100_000}, {"LLaVA prediction": "x\x00"},
                    {"LLaVA prediction": "x\ud800"}):
        rows = [_pred_row(items[0]), _pred_row(items[1], **changes)]
        before = db_counts()
        with pytest.raises(ImportRejected, match=r"Row 2\b"):
            predictions_import("p.jsonl", _jsonl(rows))
        assert db_counts() == before, changes


@PROPERTY
@given(st.binary(max_size=300), st.sampled_from(["p.csv", "p.jsonl"]))
def test_prediction_file_of_arbitrary_bytes_imports_or_refuses(items, data, name):
    with scratch():
        refused_or_valid(lambda: predictions_import(name, data, model="M"), ImportRejected)


# --------------------------------------------------------------------------- ablation responses


@pytest.fixture
def conversation():
    models = builders.models("m1", "m2")
    conv = builders.conversation(models["m1"], models["m2"])
    for turn in conv.turns.all():  # substituted conditions need the turns' references
        turn.reference_answer = f"Reference answer to turn {turn.turn}."
        turn.save(update_fields=["reference_answer"])
    return conv


def _ablation_line(conv, **changes) -> str:
    return json.dumps({"instance": str(conv.uuid), "condition": "generated",
                       "responses": {"1": "one", "2": "two", "3": "three"}, **changes})


ABLATION_VALUE = st.one_of(JSONISH, st.sampled_from(["generated", "perfect_perception"]))


@PROPERTY
@given(data=st.data())
def test_ablation_lines_of_any_type_import_or_refuse(conversation, data):
    changes = data.draw(st.dictionaries(
        st.sampled_from(["instance", "condition", "responses", "turns"]), ABLATION_VALUE,
        max_size=3), label="changes")
    responses = data.draw(st.one_of(st.none(), st.dictionaries(
        st.sampled_from(["1", "2", "3", "x", "-1"]), st.one_of(NASTY, JSONISH), max_size=4)),
        label="responses")
    if responses is not None:
        changes["responses"] = responses
    position = data.draw(st.integers(0, 2), label="position")
    lines = [_ablation_line(conversation, condition=c)
             for c in ("perfect_perception", "perfect_perception_reasoning")]
    lines.insert(position, _ablation_line(conversation, **changes))
    with scratch():
        refused_or_valid(lambda: import_responses(model_name="M", lines=lines),
                         ValidationError, row_pattern=rf"\bline {position + 1}\b")


@PROPERTY
@given(st.lists(st.one_of(st.text(max_size=40), ODD, st.just("[" * 3000)), max_size=4))
def test_ablation_arbitrary_lines_import_or_refuse(conversation, lines):
    with scratch():
        refused_or_valid(lambda: import_responses(model_name="M", lines=lines),
                         ValidationError, row_pattern=r"\bline \d+")


def test_ablation_text_the_database_cannot_hold_is_refused_by_line(conversation):
    """Regression: NUL or a lone surrogate in a response, or a line nested too deeply for the
    JSON parser, crashed (DataError / UnicodeEncodeError / RecursionError) instead of naming
    the line."""
    for bad in (_ablation_line(conversation, responses={"1": "a\x00", "2": "b", "3": "c"}),
                _ablation_line(conversation, responses={"1": "a\ud800", "2": "b", "3": "c"}),
                "[" * 100_000):
        before = db_counts()
        with pytest.raises(ValidationError, match=r"line 2\b"):
            import_responses(model_name="M", lines=[_ablation_line(conversation), bad])
        assert db_counts() == before
