"""From a released-shaped judgment file to the report, through the commands only.

The file is shaped like public pairwise test sets: every item asks the same instruction of its
own input and model pair, with freshly generated responses, and carries its own id; each item has
five crowd votes without worker ids (one annotator string for all). Fleiss' kappa of the crowd
must equal the formula worked by hand on the vote counts.
"""
import csv
import io
import json

import pytest
from django.core.management import call_command

from annotation.models import Instance
from judging.services.judgments.formats import COLUMNS

pytestmark = pytest.mark.django_db

# item: (model A, model B, votes for A out of 5)
ITEMS = {"p1": ("m1", "m2", 5), "p2": ("m1", "m3", 4), "p3": ("m2", "m3", 3),
         "p4": ("m1", "m2", 1), "p5": ("m3", "m1", 0), "p6": ("m2", "m1", 5)}


def _released_file() -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, extrasaction="ignore",
                            lineterminator="\n")
    writer.writeheader()
    for item, (a, b, votes_a) in ITEMS.items():
        for vote in range(5):
            writer.writerow({
                "item_id": item, "instruction": "Which response follows the instruction better?",
                "image_urls": json.dumps([f"https://example.org/{item}.png"]),
                "model_a": a, "response_a": f"{a} answering {item}",
                "model_b": b, "response_b": f"{b} answering {item}",
                "annotator": "crowd", "source": "human",
                "choice": "A" if vote < votes_a else "B"})
    return out.getvalue().encode()


def _fleiss_by_hand() -> float:
    """Fleiss (1971): P_i = (sum_j n_ij^2 - n) / (n (n - 1)); P_e = sum_j p_j^2."""
    n, rows = 5, [(a, 5 - a) for _, _, a in ITEMS.values()]
    p_items = [(a * a + b * b - n) / (n * (n - 1)) for a, b in rows]
    p_bar = sum(p_items) / len(rows)
    total = n * len(rows)
    p_a = sum(a for a, _ in rows) / total
    p_e = p_a ** 2 + (1 - p_a) ** 2
    return (p_bar - p_e) / (1 - p_e)


def test_anonymous_five_vote_items_with_repeated_instructions(tmp_path, capsys):
    path = tmp_path / "pairwise_test_set.csv"
    path.write_bytes(_released_file())
    call_command("import_judgments", str(path), "--create-missing", "--dataset", "pairs")
    assert Instance.objects.filter(source="pairs").count() == len(ITEMS)
    out = tmp_path / "report"
    call_command("agreement_report", "--out", str(out), "--metrics", "", "--bootstrap", "200")
    printed = capsys.readouterr().out
    assert f"{len(ITEMS)} compared items" in printed and "30 pairwise" in printed
    data = json.loads((out / "report.json").read_text())
    reliability = next(iter(data["reliability"].values()))
    fleiss = reliability["fleiss_kappa"]
    assert fleiss["kappa"] == pytest.approx(_fleiss_by_hand(), abs=1e-12)
    assert (fleiss["raters_per_item"], fleiss["n_items"]) == (5, len(ITEMS))
    assert fleiss["ci"][0] <= fleiss["kappa"] <= fleiss["ci"][1]
    assert reliability["identities"] == "missing"
    assert reliability["krippendorff_alpha"]["alpha"] is not None
