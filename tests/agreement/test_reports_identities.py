"""Reliability in the report when votes carry no annotator identity, as in released data sets.

VisIT-Bench's preference CSV holds ~5 votes per pair with no worker id; imported, every vote
gets the annotator "visitbench-crowd". Alpha and Fleiss' kappa need only each item's vote
counts; Cohen's kappa and leave-one-out need identities. Expected numbers come from the
``krippendorff`` package and from the formulas written out here.
"""
import csv
import io

import krippendorff
import numpy as np
import pytest

from agreement import statistics as st
from agreement.reports.params import ReportParams
from agreement.reports.tables import all_tables, to_csv
from agreement.services.reports import report_data_compute
from judging.services.judgments.formats import COLUMNS
from judging.services.judgments.imports import judgments_import
from tests.agreement.study import ITEMS, TEXT
from tests.judging import builders

pytestmark = pytest.mark.django_db
PARAMS = {"metrics": [], "bootstrap_rounds": 200, "seed": 3}


def _fleiss_by_hand(table) -> float:
    n = int(table[0].sum())
    p_j = table.sum(axis=0) / table.sum()
    p_bar = np.mean([(r @ r - n) / (n * (n - 1)) for r in table])
    return (p_bar - p_j @ p_j) / (1 - p_j @ p_j)


def _visit_csv(rows) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def _anonymous_study(items=12, seed=0):
    """VisIT-Bench-format preference rows, 5 votes per pair (no worker id); the table of
    (A votes, B votes) per item, in import order."""
    rng = np.random.default_rng(seed)
    builders.models("M1", "M2")
    rows, table = [], []
    for k in range(items):
        inst = builders.instance(instruction=f"Describe picture {k}.",
                                 urls=[f"https://example.org/anon{k}.png"])
        votes_a = int(rng.choice([5, 4, 3, 2, 1, 0], p=[.3, .2, .1, .1, .1, .2]))
        table.append((votes_a, 5 - votes_a))
        rows.append({"image_url": inst.images.first().source_url, "instruction": inst.instruction,
                     "A": f"first answer {k}", "B": f"second answer {k}",
                     "A_model": "M1", "B_model": "M2",
                     "model_selection.A": votes_a, "model_selection.B": 5 - votes_a})
    report = judgments_import("prefs.csv", _visit_csv(rows), create_missing=True)
    assert report.created == 5 * items
    return np.array(table)


def test_anonymous_votes_get_alpha_and_fleiss_from_counts():
    table = _anonymous_study()
    data, _ = report_data_compute(ReportParams.from_dict(PARAMS))
    rel = data["reliability"]["imported"]
    assert "error" not in rel  # old code: "fewer than two annotators"
    assert rel["identities"] == "missing"
    assert rel["anonymous_annotators"] == ["visitbench-crowd"] and rel["n_annotators"] == 0
    assert (rel["n_items"], rel["n_votes"], rel["n_anonymous_votes"]) == (12, 60, 60)

    alpha = rel["krippendorff_alpha"]
    assert alpha["alpha"] == pytest.approx(
        krippendorff.alpha(value_counts=table, level_of_measurement="nominal"), abs=1e-12)
    fleiss = rel["fleiss_kappa"]
    assert fleiss["kappa"] == pytest.approx(_fleiss_by_hand(table), abs=1e-12)
    assert (fleiss["raters_per_item"], fleiss["n_items"]) == (5, 12)
    for stat, value in ((alpha, alpha["alpha"]), (fleiss, fleiss["kappa"])):
        assert (stat["n_boot"], stat["seed"]) == (200, 3)  # the report's rounds and seed
        assert stat["ci"][0] <= value <= stat["ci"][1]

    assert rel["cohen_kappa"]["pairs"] == []
    for key in ("cohen_kappa", "leave_one_out"):
        assert rel[key]["error"].startswith("not available: 60 votes carry no annotator identity")
    assert "visitbench-crowd" in rel["note"]

    tables = all_tables(data)
    (row,) = tables["reliability"]
    assert row["identities"] == "missing" and row["note"] == rel["note"]
    assert tables["cohen_kappa"] == [{"hit_type": "imported", "error": rel["cohen_kappa"]["error"]}]
    assert tables["leave_one_out"][0]["error"].startswith("not available")
    # full precision in the CSV: the cell reads back as the exact JSON number
    parsed = next(csv.DictReader(io.StringIO(to_csv(tables["reliability"]))))
    assert float(parsed["alpha_nominal"]) == alpha["alpha"]
    assert float(parsed["fleiss_ci_low"]) == fleiss["ci"][0]


def test_identified_annotators_unchanged(study):
    """w1..w5 voted once per item: the coder-matrix path of before, plus CIs on every kappa."""
    data, _ = report_data_compute(ReportParams.from_dict(PARAMS))
    rel = data["reliability"]["imported"]
    assert rel["identities"] == "present" and rel["anonymous_annotators"] == []
    assert "note" not in rel and rel["n_annotators"] == 5
    coders = np.array([[{"A": 0.0, "B": 1.0}[v[w]] for v in (x[2] for x in ITEMS.values())]
                       for w in range(5)])
    alpha = rel["krippendorff_alpha"]
    assert alpha["alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=coders, level_of_measurement="nominal"))
    assert alpha["ci"] == list(st.krippendorff_alpha(coders, "nominal", n_boot=200, seed=3).ci)
    assert rel["fleiss_kappa"]["kappa"] == pytest.approx((0.65 - 0.52) / 0.48)
    assert rel["fleiss_kappa"]["ci"] is not None and rel["fleiss_kappa"]["n_boot"] == 200
    votes = {f"w{w + 1}": [x[2][w] for x in ITEMS.values()] for w in range(5)}
    pairs = {(p["annotator_a"], p["annotator_b"]): p for p in rel["cohen_kappa"]["pairs"]}
    assert len(pairs) == 10
    w1w5 = pairs[("w1", "w5")]
    assert w1w5["kappa"] == pytest.approx(-0.5)
    assert w1w5["ci"] == list(st.cohen_kappa_ci(votes["w1"], votes["w5"], n_boot=200, seed=3))
    assert (w1w5["n_boot"], w1w5["seed"]) == (200, 3)
    assert set(rel["leave_one_out"]) == set(votes)


def _crowd_rows(votes_per_item: dict[str, str]) -> bytes:
    """Generic-format rows: extra votes on the study's items by one anonymous string."""
    rows = []
    for item, votes in votes_per_item.items():
        ma, mb = ITEMS[item][:2]
        for v in votes:
            rows.append({"item_id": item, "instruction": "", "image_urls": "", "model_a": ma,
                         "response_a": TEXT[ma], "model_b": mb, "response_b": TEXT[mb],
                         "annotator": "crowd", "source": "human", "choice": v, "score": "",
                         "turn": "", "timestamp": ""})
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def test_identified_and_anonymous_votes_together(study):
    before = {(p["annotator_a"], p["annotator_b"]): p["kappa"] for p in report_data_compute(
        ReportParams.from_dict(PARAMS))[0]["reliability"]["imported"]["cohen_kappa"]["pairs"]}
    crowd = {"c1": "AB", "c2": "BB", "c3": "AA", "c4": "BB"}
    assert judgments_import("crowd.csv", _crowd_rows(crowd)).created == 8
    data, _ = report_data_compute(ReportParams.from_dict(PARAMS))
    rel = data["reliability"]["imported"]
    assert rel["identities"] == "partial" and rel["anonymous_annotators"] == ["crowd"]
    assert (rel["n_annotators"], rel["n_votes"], rel["n_anonymous_votes"]) == (5, 28, 8)
    table = np.array([[(ITEMS[i][2] + crowd[i]).count(c) for c in "AB"] for i in ITEMS])
    assert rel["krippendorff_alpha"]["alpha"] == pytest.approx(
        krippendorff.alpha(value_counts=table, level_of_measurement="nominal"), abs=1e-12)
    assert rel["fleiss_kappa"]["kappa"] == pytest.approx(_fleiss_by_hand(table), abs=1e-12)
    # Cohen's kappa: the identified annotators only, exactly their kappas without the crowd
    pairs = {(p["annotator_a"], p["annotator_b"]): p["kappa"]
             for p in rel["cohen_kappa"]["pairs"]}
    assert pairs == before and not any("crowd" in k for k in pairs)
    assert "crowd" not in rel["leave_one_out"]
    assert "identified annotators only" in rel["note"]
