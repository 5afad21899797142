"""End to end on real-format data: the 17 real VisIT-Bench single-image instances (with their
human-written references) and a human-preference CSV in VisIT-Bench's own format (vote counts
per row), imported through judging's importer, then reported with reference metrics."""
import csv
import io

import krippendorff
import numpy as np
import pytest

from agreement.reports.params import ReportParams
from agreement.services.reports import report_data_compute
from judging.services.judgments.imports import judgments_import
from tests.judging import builders
from tests.support.shared_data import SHARED_DATA

pytestmark = pytest.mark.django_db
DATA = SHARED_DATA / "visit_bench" / "visit_fully_annotated_example.csv"
VOTES = [(5, 0), (4, 1), (3, 2)]  # votes for the response copied from the reference


def test_report_from_imported_visitbench_preferences():
    if not DATA.exists():
        pytest.skip(f"shared data absent ({SHARED_DATA})")
    from annotation.content.formats import parse_visit_csv

    records = parse_visit_csv(DATA).records
    rows = []
    for k, r in enumerate(records):
        inst = builders.instance(instruction=r.instruction, urls=[i.url for i in r.images],
                                 category=r.category)
        inst.reference_output = r.reference_output
        inst.save()
        good = " ".join(r.reference_output.split()[:40])  # close to the human reference
        bad = "I cannot tell what is in the image, sorry."
        a_good = k % 2 == 0
        va, vb = VOTES[k % 3] if a_good else VOTES[k % 3][::-1]
        rows.append({"image_url": r.images[0].url, "instruction": r.instruction,
                     "A": good if a_good else bad, "B": bad if a_good else good,
                     "A_model": "close-model" if a_good else "vague-model",
                     "B_model": "vague-model" if a_good else "close-model",
                     "model_selection.A": va, "model_selection.B": vb})
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    report = judgments_import("visit_prefs.csv", out.getvalue().encode(), create_missing=True)
    assert report.created == 5 * len(records)

    data, _ = report_data_compute(ReportParams.from_dict(
        {"metrics": ["bleu4", "rouge_l", "cider_d", "length"], "bootstrap_rounds": 100}))
    n = len(records)
    counts = data["snapshot"]["counts"]
    assert (counts["items"], counts["human_votes"], counts["model_vs_model_items"]) == (n, 5 * n, n)
    levels = {k: v["n_items"] for k, v in data["accuracy"]["metric:bleu4"]["by_level"].items()}
    assert levels == {"5/5": sum(k % 3 == 0 for k in range(n)),
                      "4/5": sum(k % 3 == 1 for k in range(n)),
                      "3/5": sum(k % 3 == 2 for k in range(n))}
    # The humans always prefer the reference-like answer, and so do the reference metrics.
    for metric in ("bleu4", "rouge_l", "cider_d"):
        assert data["accuracy"][f"metric:{metric}"]["overall"]["estimate"] == 1.0, metric
    # The aggregate CSV carries no worker ids: alpha and Fleiss' kappa come from each item's vote
    # counts; Cohen's kappa and leave-one-out say why they are not available.
    rel = data["reliability"]["imported"]
    assert rel["identities"] == "missing" and rel["anonymous_annotators"] == ["visitbench-crowd"]
    assert (rel["n_items"], rel["n_votes"], rel["n_anonymous_votes"]) == (n, 5 * n, 5 * n)
    # per item: (A votes, B votes), the good answer on side A for even k
    table = np.array([VOTES[k % 3] if k % 2 == 0 else VOTES[k % 3][::-1] for k in range(n)])
    assert rel["krippendorff_alpha"]["alpha"] == pytest.approx(
        krippendorff.alpha(value_counts=table, level_of_measurement="nominal"))
    p_j = table.sum(axis=0) / (5 * n)
    p_bar = np.mean([(r @ r - 5) / 20 for r in table])
    kappa = (p_bar - p_j @ p_j) / (1 - p_j @ p_j)
    assert rel["fleiss_kappa"]["kappa"] == pytest.approx(kappa)
    for stat in (rel["krippendorff_alpha"], rel["fleiss_kappa"]):
        assert stat["ci"][0] <= (stat.get("alpha") or stat.get("kappa")) <= stat["ci"][1]
    assert rel["cohen_kappa"]["error"].startswith("not available")
    assert rel["leave_one_out"]["error"].startswith("not available")
    ratings = {r["model"]: r["rating"] for r in data["ratings"]["human"]["rows"]}
    assert ratings["close-model"] > ratings["vague-model"]
