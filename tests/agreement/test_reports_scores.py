"""Reports over graded responses, not only pairwise votes: a rubric judge's grades stored
as ``Judgment(kind="score")`` are correlated with the mean human score per response and per
model, and the snapshot counts every kind of judgment (not "0 items, 0 judgments").

Expected values come from scipy.stats on numbers rebuilt here from the imported rows.
"""
import csv
import io
import json
from collections import defaultdict

import numpy as np
import pytest
from django.utils import timezone
from scipy import stats

from agreement.reports.html import sections
from agreement.reports.params import ReportParams
from agreement.reports.tables import all_tables, to_csv
from agreement.services.reports import report_data_compute, report_generate
from judging.models import Judgment
from judging.services.judgments.formats import COLUMNS
from judging.services.judgments.imports import judgments_import
from tests.judging import builders

pytestmark = pytest.mark.django_db
MODELS = ("M1", "M2", "M3", "M4")
PARAMS = {"metrics": ["length"], "bootstrap_rounds": 50, "seed": 0}


def _write(rows) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({c: r.get(c, "") for c in COLUMNS} for r in rows)
    return out.getvalue().encode()


def _graded_study(n_items=6, seed=0):
    """Every model answers every item; humans h1, h2 and the rubric judge R1 grade every
    answer (1-5); one human feedback judgment. Returns {(item, model): (h1, h2, R1, text)}."""
    rng = np.random.default_rng(seed)
    builders.models(*MODELS)
    quality = {"M1": 4.2, "M2": 3.1, "M3": 2.4, "M4": 3.6}
    rows, truth = [], {}
    for i in range(n_items):
        item = f"g{i}"
        builders.instance(external_id=item, instruction=f"Grade question {i}?")
        for m in MODELS:
            text = " ".join(["word"] * int(rng.integers(3, 30)))
            q = quality[m] + rng.normal(scale=0.8)
            h1, h2 = (int(np.clip(round(q + rng.normal(scale=0.6)), 1, 5)) for _ in range(2))
            r1 = int(np.clip(round(q + rng.normal(scale=0.9)), 1, 5))
            truth[(item, m)] = (h1, h2, r1, text)
            for who, source, score in (("h1", "human", h1), ("h2", "human", h2),
                                       ("R1@rubric_v1", "R1", r1)):
                rows.append({"item_id": item, "model_a": m, "response_a": text,
                             "annotator": who, "source": source, "score": score})
    feedbacks = json.dumps([{"source": "R1", "score": 4, "feedback": "fine"},
                            {"source": None, "score": None, "feedback": "weak"}])
    rows.append({"item_id": "g0", "model_a": "M1", "response_a": truth[("g0", "M1")][3],
                 "response_b": feedbacks, "annotator": "h1", "source": "human", "choice": "A"})
    report = judgments_import("graded.csv", _write(rows), create_missing=True)
    assert report.created == 3 * len(MODELS) * n_items + 1
    return truth


def _check(corr: dict, x, y):
    for name, fn in (("pearson", stats.pearsonr), ("kendall_tau", stats.kendalltau),
                     ("spearman", stats.spearmanr)):
        res = fn(x, y)
        assert corr[name] == pytest.approx(res.statistic, abs=1e-12), name
        p = corr["pearson_p" if name == "pearson" else name.split("_")[0] + "_p"]
        assert p == pytest.approx(res.pvalue, abs=1e-12), name
    assert corr["n"] == len(x)


def test_report_over_score_judgments_only_counts_them():
    truth = _graded_study()
    data, _ = report_data_compute(ReportParams.from_dict(PARAMS))
    c = data["snapshot"]["counts"]
    n = len(truth)
    assert (c["items"], c["pairwise_judgments"]) == (0, 0)
    assert (c["score_judgments"], c["graded_responses"]) == (3 * n, n)
    assert (c["feedback_judgments"], c["feedback_responses"]) == (1, 1)
    assert c["judgments_used"] == 3 * n + 1  # old code: 0 (pairwise only)
    assert c["judgments_by_kind"] == {"pairwise": 0, "score": 3 * n, "feedback": 1}
    assert c["judgments_by_kind_and_source"] == {"score/R1": n, "score/human": 2 * n,
                                                 "feedback/human": 1}
    assert data["snapshot"]["filters"]["score_judges_found"] == ["R1"]
    report = report_generate(PARAMS)  # the stored report and its HTML summary say the same
    assert report.snapshot["counts"]["judgments_used"] == 3 * n + 1
    html = bytes(report.files.get(name="report.html").content).decode()
    assert f"judgments_used: {3 * n + 1}" in html and f"graded_responses: {n}" in html


def test_rubric_judge_correlation_per_response_and_per_model():
    truth = _graded_study()
    data, _ = report_data_compute(ReportParams.from_dict(PARAMS))
    keys = sorted(truth)
    human = [(truth[k][0] + truth[k][1]) / 2 for k in keys]
    judge = [truth[k][2] for k in keys]
    _check(data["score_correlation"]["R1"], human, judge)

    by_model = defaultdict(lambda: ([], []))
    for k, h, j in zip(keys, human, judge, strict=True):
        by_model[k[1]][0].append(h)
        by_model[k[1]][1].append(j)
    h_means = [np.mean(by_model[m][0]) for m in MODELS]
    j_means = [np.mean(by_model[m][1]) for m in MODELS]
    system = data["score_correlation_system"]["R1"]
    assert system["models"] == list(MODELS)
    assert system["human_means"] == pytest.approx(h_means, abs=1e-12)
    assert system["judge_means"] == pytest.approx(j_means, abs=1e-12)
    assert system["n_responses"] == [6] * 4
    _check(system["correlation"], h_means, j_means)

    # the length metric, per model: mean token count vs mean human score
    lengths = [np.mean([len(truth[(f"g{i}", m)][3].split()) for i in range(6)]) for m in MODELS]
    _check(data["score_correlation_system"]["metric:length"]["correlation"], h_means, lengths)

    rows = [r for r in all_tables(data)["score_correlation"] if r["source"] == "R1"]
    assert [r["level"] for r in rows] == ["instance", "system"]
    assert rows[1]["pearson"] == system["correlation"]["pearson"]
    cell = next(r for r in csv.DictReader(io.StringIO(to_csv(rows))) if r["level"] == "system")
    assert float(cell["pearson"]) == system["correlation"]["pearson"]  # full precision
    html = next(s for s in sections(data, lambda stem: None) if s["id"] == "score_correlation")
    assert "system" in {cell["text"] for t in html["tables"] for row in t["rows"] + t["more_rows"]
                        for cell in row["cells"]}


def test_judge_grades_of_conversation_turns_meet_human_grades():
    """A judge grading a conversation writes each turn's grade on that turn's response with
    turn '1'..'3'; the rubric HIT writes turn ''. Both grade the same response."""
    models = builders.models("C1", "C2")
    inst = builders.conversation(models["C1"], models["C2"])
    now = timezone.now()
    responses = list(inst.responses.order_by("model__name", "turn"))
    human = [5, 3, 2, 4, 1, 3]
    judge = [4, 3, 1, 5, 2, 2]
    Judgment.objects.bulk_create(
        [Judgment(kind=Judgment.Kind.SCORE, response=r, score=h, source="human",
                  annotator="h1", turn="", created_at=now)
         for r, h in zip(responses, human, strict=True)]
        + [Judgment(kind=Judgment.Kind.SCORE, response=r, score=j, source="R1",
                    annotator="R1@rubric_v1", turn=str(r.turn), created_at=now)
           for r, j in zip(responses, judge, strict=True)])
    data, _ = report_data_compute(ReportParams.from_dict({**PARAMS, "metrics": []}))
    _check(data["score_correlation"]["R1"], human, judge)
    system = data["score_correlation_system"]["R1"]
    assert system["models"] == ["C1", "C2"] and system["n_responses"] == [3, 3]
    assert system["human_means"] == pytest.approx([np.mean(human[:3]), np.mean(human[3:])])
