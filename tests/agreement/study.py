"""A small constructed study (see ``build_study``) whose report numbers are computed by hand in the tests.

Four model-vs-model comparisons, five human votes each (5/5, 4/5, 3/5, 4/5), two automatic
judges, scored responses; imported through judging's generic judgment CSV (the same path as
real data), then C1 marked as shown swapped.
"""
import csv
import io

from judging.models import Comparison
from judging.services.judgments.formats import COLUMNS
from judging.services.judgments.imports import judgments_import
from tests.judging import builders

TEXT = {"M1": "one two three four five six", "M2": "one two three",
        "M3": "one two three four five six seven eight"}
# item: (model_a, model_b, five human votes by w1..w5, J1, J2)
ITEMS = {
    "c1": ("M1", "M2", "AAAAA", "A", "B"),
    "c2": ("M1", "M3", "AAAAB", "A", "tie"),
    "c3": ("M2", "M3", "BBBAA", "A", "B"),
    "c4": ("M2", "M1", "BBBBA", "B", "B"),
}
# response scores: human h1, h2 and judge J1 on the A-side response of each item
SCORES = {"c1": (5, 4, 5), "c2": (4, 4, 3), "c3": (2, 1, 2), "c4": (3, 2, 4)}


def study_csv() -> bytes:
    rows = []
    minute = 0
    for item, (ma, mb, votes, j1, j2) in ITEMS.items():
        base = {"item_id": item, "instruction": "", "image_urls": "", "model_a": ma,
                "response_a": TEXT[ma], "model_b": mb, "response_b": TEXT[mb], "score": "",
                "turn": ""}
        for w, v in enumerate(votes, start=1):
            minute += 1
            rows.append({**base, "annotator": f"w{w}", "source": "human", "choice": v,
                         "timestamp": f"2026-01-01T10:{minute:02d}:00+00:00"})
        for judge, v in (("J1", j1), ("J2", j2)):
            minute += 1
            rows.append({**base, "annotator": f"{judge}@1", "source": judge, "choice": v,
                         "timestamp": f"2026-01-01T10:{minute:02d}:00+00:00"})
        for who, s in zip(("h1", "h2", "J1"), SCORES[item], strict=True):
            minute += 1
            rows.append({**base, "model_b": "", "response_b": "", "choice": "", "score": s,
                         "annotator": who if who != "J1" else "J1@1",
                         "source": "human" if who != "J1" else "J1",
                         "timestamp": f"2026-01-01T10:{minute:02d}:00+00:00"})
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def build_study() -> dict:
    """Create the study through the generic judgment import; {item id: Comparison}."""
    models = builders.models("M1", "M2", "M3")
    for name, fam in (("M1", "fam1"), ("M2", "fam2"), ("M3", "fam3")):
        models[name].family = fam
        models[name].save()
    for item in ITEMS:
        builders.instance(external_id=item, instruction=f"Question {item}?")
    report = judgments_import("study.csv", study_csv(), create_missing=True)
    assert report.created == 4 * 7 + 4 * 3
    comparisons = {c.instance.external_id: c for c in Comparison.objects.select_related("instance")}
    Comparison.objects.filter(pk=comparisons["c1"].pk).update(swapped=True)
    return comparisons
