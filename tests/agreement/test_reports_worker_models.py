"""Reliability models in the report: each annotator's Dawid–Skene and MACE accuracy beside
leave-one-out (the numbers ``fit_worker_model`` gives on the same votes, anonymous votes pooled
into one row), and judge accuracy against the majority and against the weighted labels."""
import csv
import io

import pytest

from agreement.reports.params import ReportParams
from agreement.reports.tables import ANONYMOUS_VOTES, all_tables
from agreement.services.reports import report_data_compute
from agreement.statistics.worker_models import DAWID_SKENE, MACE, MODELS, fit_worker_model
from judging.services.judgments.formats import COLUMNS
from judging.services.judgments.imports import judgments_import
from tests.agreement.study import ITEMS
from tests.agreement.test_reports_identities import _anonymous_study, _crowd_rows
from tests.judging import builders

pytestmark = pytest.mark.django_db
PARAMS = {"metrics": [], "bootstrap_rounds": 50, "seed": 3}
ANNOTATORS = ("w1", "w2", "w3", "w4", "w5")


def _study_votes(extra=()):
    votes = [(item, w, v) for item, x in ITEMS.items() for w, v in zip(ANNOTATORS, x[2],
                                                                      strict=True)]
    return votes + list(extra)


def test_identified_annotators_get_each_models_estimate(study):
    data, _ = report_data_compute(ReportParams.from_dict(PARAMS))
    rel = data["reliability"]["imported"]
    assert set(rel["leave_one_out"]) == set(ANNOTATORS)
    for model in MODELS:
        section = rel["worker_models"][model]
        assert list(section["annotators"]) == list(ANNOTATORS) and section["anonymous"] is None
        fit = fit_worker_model(_study_votes(), model, labels=("A", "B", "tie"))
        for w in ANNOTATORS:
            got, want = section["annotators"][w], fit.worker(w)
            assert got["n_votes"] == 4
            assert got["accuracy"] == pytest.approx(want.accuracy, abs=1e-9)
            assert got["ci"] == pytest.approx(list(want.ci), abs=1e-9)
            assert got["confusion"]["A"]["A"] == pytest.approx(want.confusion[0, 0], abs=1e-9)
            # no item's truth was a tie or "both bad": those rows are unknown
            assert got["confusion"]["tie"] == {"A": None, "B": None, "tie": None, "bad": None}
        # w5 sides with the majority on one item of four; w1-w3 on all four
        accuracy = {w: e["accuracy"] for w, e in section["annotators"].items()}
        assert min(accuracy, key=accuracy.get) == "w5"
        assert min(accuracy[w] for w in ("w1", "w2", "w3")) > accuracy["w4"] > accuracy["w5"]
    rows = all_tables(data)["worker_reliability"]
    assert len(rows) == len(MODELS) * len(ANNOTATORS)
    row = next(r for r in rows if r["annotator"] == "w5" and r["reliability_model"] == MODELS[0])
    w5 = rel["worker_models"][MODELS[0]]["annotators"]["w5"]
    assert (row["n_votes"], row["estimated_accuracy"], row["estimate_low"],
            row["estimate_high"]) == (4, w5["accuracy"], *w5["ci"])


def test_anonymous_votes_are_one_pooled_row(study):
    crowd = {"c1": "AB", "c2": "BB", "c3": "AA", "c4": "BB"}
    assert judgments_import("crowd.csv", _crowd_rows(crowd)).created == 8
    data, _ = report_data_compute(ReportParams.from_dict(PARAMS))
    rel = data["reliability"]["imported"]
    pooled = [(item, None, v) for item, votes in crowd.items() for v in votes]
    for model in MODELS:
        section = rel["worker_models"][model]
        assert set(section["annotators"]) == set(ANNOTATORS)
        assert section["anonymous"]["n_votes"] == 8
        fit = fit_worker_model(_study_votes(pooled), model, labels=("A", "B", "tie"))
        assert section["anonymous"]["accuracy"] == pytest.approx(fit.worker(None).accuracy,
                                                                 abs=1e-9)
    rows = all_tables(data)["worker_reliability"]
    assert [r["n_votes"] for r in rows if r["annotator"] == ANONYMOUS_VOTES] == [8, 8]


def test_votes_without_any_identity_still_get_the_crowds_estimate():
    _anonymous_study()
    data, _ = report_data_compute(ReportParams.from_dict(PARAMS))
    rel = data["reliability"]["imported"]
    for model in MODELS:
        section = rel["worker_models"][model]
        assert section["annotators"] == {} and section["anonymous"]["n_votes"] == 60
        low, high = section["anonymous"]["ci"]
        assert 0.5 < low < section["anonymous"]["accuracy"] < high < 1


def _bloc_csv(n_items: int) -> bytes:
    """Two annotators who always give the truth (A on odd items, B on even ones), three who
    always answer A, and a judge J that always gives the truth: the plain majority is A on
    every item; Dawid–Skene sees that g1 and g2 agree with each other beyond chance."""
    rows = []
    for i in range(n_items):
        truth = "A" if i % 2 else "B"
        base = {"item_id": f"b{i}", "instruction": "Which answer is better?", "image_urls": "",
                "model_a": "M1", "response_a": f"one {i}", "model_b": "M2",
                "response_b": f"two {i}", "score": "", "turn": "", "timestamp": ""}
        for annotator, choice in (("g1", truth), ("g2", truth), ("s1", "A"), ("s2", "A"),
                                  ("s3", "A")):
            rows.append({**base, "annotator": annotator, "source": "human", "choice": choice})
        rows.append({**base, "annotator": "J@1", "source": "J", "choice": truth})
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def test_judge_accuracy_is_reported_against_majority_and_weighted_labels():
    builders.models("M1", "M2")
    assert judgments_import("bloc.csv", _bloc_csv(40), create_missing=True,
                            dataset="bloc").created == 40 * 6
    data, _ = report_data_compute(ReportParams.from_dict(PARAMS))
    assert data["accuracy"]["J"]["overall"]["estimate"] == 0.5  # the majority says A: 20/40
    weighted = data["accuracy_weighted"]
    assert set(weighted) == set(MODELS)
    ds = weighted[DAWID_SKENE]["J"]
    assert (ds["overall"]["successes"], ds["overall"]["n"]) == (40, 40)
    # the k/N levels count the votes for the weighted label: 2 of 5 on the B items
    assert {level: lv["n_items"] for level, lv in ds["by_level"].items()} == {"5/5": 20,
                                                                              "2/5": 20}
    assert weighted[MACE]["J"]["overall"]["n"] == 40
    rows = [r for r in all_tables(data)["accuracy_by_aggregation"] if r["source"] == "J"]
    assert [(r["aggregation"], r["accuracy"]) for r in rows] == [
        ("majority", 0.5), (DAWID_SKENE, 1.0), (MACE, weighted[MACE]["J"]["overall"]["estimate"])]


def test_a_report_past_the_vote_limit_says_why_it_fitted_no_model(study, settings):
    settings.REPORT_WORKER_MODELS_MAX_VOTES = 3
    data, _ = report_data_compute(ReportParams.from_dict(PARAMS))
    for model in MODELS:
        note = data["reliability"]["imported"]["worker_models"][model]["error"]
        assert "REPORT_WORKER_MODELS_MAX_VOTES (3)" in note and "20 votes" in note
        assert "more than" in data["accuracy_weighted"][model]["error"]
