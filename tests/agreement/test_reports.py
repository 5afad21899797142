"""Report numbers on the constructed study (tests/agreement/conftest.py), computed by hand."""
import numpy as np
import pytest
from scipy import stats

from agreement.models import Report
from agreement.reports.params import ReportParams
from agreement.services.reports import report_data_compute, report_generate
from judging.selectors import UnknownSplit

pytestmark = pytest.mark.django_db
PARAMS = {"metrics": ["length"], "bootstrap_rounds": 200, "seed": 0,
          "judge_families": {"J1": "fam1"}}


@pytest.fixture
def data(study):
    return report_data_compute(ReportParams.from_dict(PARAMS))[0]


def _acc(p):
    return p["successes"], p["n"]


def test_accuracy_by_agreement_level(data):
    j1 = data["accuracy"]["J1"]
    assert _acc(j1["overall"]) == (3, 4)
    assert {k: _acc(v["tie_broken"]) for k, v in j1["by_level"].items()} == {
        "5/5": (1, 1), "4/5": (2, 2), "3/5": (0, 1)}
    assert list(j1["by_level"]) == ["5/5", "4/5", "3/5"]
    lo, hi = j1["overall"]["wilson"]
    z = stats.norm.ppf(0.975)
    centre = (0.75 + z * z / 8) / (1 + z * z / 4)
    half = z / (1 + z * z / 4) * np.sqrt(0.75 * 0.25 / 4 + z * z / 64)
    assert (lo, hi) == pytest.approx((centre - half, centre + half))
    # J2: wrong on c1, tie on c2 (broken by the seeded draw for item 2), right on c3, c4
    j2 = data["accuracy"]["J2"]
    assert _acc(j2["overall_ties_excluded"]) == (2, 3)
    draw = np.random.default_rng(0).integers(2, size=4)[1]
    assert _acc(j2["overall"]) == (2 + int(draw == 0), 4)
    assert j2["n_judge_ties"] == 1
    # the length metric as a judge: longer wins -> A, B, B, B vs majority A, A, B, B
    assert _acc(data["accuracy"]["metric:length"]["overall"]) == (3, 4)


def test_agreement_matrix(data):
    m = data["agreement_matrices"]["main"]
    get = {(a, b): m["matrix"][i][j] for i, a in enumerate(m["sources"])
           for j, b in enumerate(m["sources"])}
    h = "human (majority)"
    assert get[(h, "J1")] == 0.75 and get[(h, "J2")] == 0.5
    assert get[(h, "metric:length")] == 0.75
    assert get[("J1", "J2")] == 0.25 and get[("J2", "metric:length")] == 0.5
    assert m["counts"][0][1] == 4


def test_reliability(data):
    rel = data["reliability"]["imported"]
    assert rel["n_annotators"] == 5 and rel["n_votes"] == 20
    assert rel["krippendorff_alpha"]["alpha"] == pytest.approx(1 - 19 * 3.5 / 96)
    lo, hi = rel["krippendorff_alpha"]["ci"]
    assert lo <= rel["krippendorff_alpha"]["alpha"] <= hi
    assert rel["fleiss_kappa"]["kappa"] == pytest.approx((0.65 - 0.52) / 0.48)
    cohen = {(p["annotator_a"], p["annotator_b"]): p["kappa"]
             for p in rel["cohen_kappa"]["pairs"]}
    assert cohen[("w1", "w2")] == pytest.approx(1.0)
    assert cohen[("w1", "w5")] == pytest.approx(-0.5)
    loo = rel["leave_one_out"]
    assert _acc(loo["w5"]["agreement"]) == (1, 4)
    assert _acc(loo["w1"]["agreement"]) == (3, 3) and loo["w1"]["n_excluded_ties"] == 1


def test_score_correlation_matches_scipy(data):
    from tests.agreement.study import SCORES

    human = [(h1 + h2) / 2 for h1, h2, _ in SCORES.values()]
    judge = [j for _, _, j in SCORES.values()]
    c = data["score_correlation"]["J1"]
    assert c["n"] == 4
    assert c["pearson"] == pytest.approx(stats.pearsonr(human, judge).statistic)
    assert c["kendall_tau"] == pytest.approx(stats.kendalltau(human, judge).statistic)
    assert c["spearman_p"] == pytest.approx(stats.spearmanr(human, judge).pvalue)
    alpha = data["score_reliability"]["krippendorff_alpha_interval"]["alpha"]
    import krippendorff

    h1 = [s[0] for s in SCORES.values()]
    h2 = [s[1] for s in SCORES.values()]
    assert alpha == pytest.approx(krippendorff.alpha([h1, h2], level_of_measurement="interval"))


def test_biases(data):
    pos = data["biases"]["position"]["human"]
    assert _acc(pos["first_rate"]) == (7, 20)  # c1 was shown swapped: its 5 A votes are B
    length = data["biases"]["length"]["human"]
    assert _acc(length["overall"]) == (3, 4)
    sp = data["biases"]["self_preference"]["J1"]
    assert sp["family"] == "fam1" and sp["n_items"] == 3
    assert sp["judge_win_rate"]["estimate"] == 1.0 and sp["difference"] == 0.0
    assert data["biases"]["self_preference"]["J2"]["error"].startswith("judge family unknown")


def test_system_correlation_and_ratings(data):
    assert set(data["ratings"]) >= {"human", "J1", "J2", "metric:length"}
    human = {r["model"]: r["rating"] for r in data["ratings"]["human"]["rows"]}
    j1 = {r["model"]: r["rating"] for r in data["ratings"]["J1"]["rows"]}
    models = sorted(human)
    rho = stats.spearmanr([human[m] for m in models], [j1[m] for m in models]).statistic
    assert data["system_correlation"]["J1"]["spearman"] == pytest.approx(rho)


def test_snapshot_states_counts_filters_seed_and_versions(data):
    snap = data["snapshot"]
    assert snap["seed"] == 0 and snap["bootstrap_rounds"] == 200
    assert snap["filters"]["split"] == "all" and snap["filters"]["metrics"] == ["length"]
    assert snap["filters"]["judges_found"] == ["J1", "J2"]
    c = snap["counts"]
    assert (c["items"], c["human_votes"], c["model_vs_model_items"]) == (4, 20, 4)
    assert c["pairwise_judgments"] == 28 and c["score_judgments"] == 12
    assert c["judgments_used"] == 28 + 12 and c["graded_responses"] == 4
    assert snap["database"]["judgments_by_source"] == {"J1": 8, "J2": 4, "human": 28}
    tv = snap["template_versions"]
    assert tv["judges"] == {"J1": ["J1@1"], "J2": ["J2@1"]}
    assert tv["report_schema"] == "agreement-report/1" and "length" in tv["metrics"]
    assert len(snap["data_fingerprint"]) == 16


def test_same_inputs_same_report(study):
    a, _ = report_data_compute(ReportParams.from_dict(PARAMS))
    b, _ = report_data_compute(ReportParams.from_dict(PARAMS))
    # the second build reads every score from the cache
    assert (a["metrics"]["length"]["computed"], b["metrics"]["length"]["cached"]) == (8, 8)
    for d in (a, b):
        d["snapshot"].pop("generated_at")
        d["snapshot"]["database"].pop("metric_scores")
        d.pop("metrics")
    assert a == b


def test_split_filter_and_judge_filter(study):
    data, _ = report_data_compute(ReportParams.from_dict({**PARAMS, "judges": ["J1"],
                                                        "split": "category:Chart reading"}))
    assert data["snapshot"]["filters"]["judges_found"] == ["J1"]
    assert set(data["accuracy"]) == {"J1", "metric:length"}
    with pytest.raises(UnknownSplit, match="no instance is in category 'Nope'"):
        ReportParams.from_dict({**PARAMS, "split": "category:Nope"})


def test_generate_stores_every_artifact(study):
    report = report_generate(PARAMS)
    assert report.status == Report.Status.DONE
    names = set(report.files.values_list("name", flat=True))
    assert {"report.html", "report.json", "accuracy.csv", "agreement_main.csv",
            "accuracy_by_level.png", "accuracy_by_level.svg", "agreement_main.png",
            "ratings.png", "length_bias.png", "category_win_rates.png"} <= names
    html = bytes(report.files.get(name="report.html").content).decode()
    assert html.count('src="data:image/png;base64,') >= 4 and "<script" not in html
    assert "Data snapshot" in html and report.snapshot["seed"] == 0


def test_worker_and_judge_text_is_escaped_in_the_html(study):
    from django.utils import timezone

    from judging.models import Judgment

    evil = '<img src=x onerror="alert(1)">'
    Judgment.objects.bulk_create([
        Judgment(comparison=c, source=evil, annotator=evil, choice="A",
                 created_at=timezone.now()) for c in study.values()])
    report = report_generate(PARAMS)
    html = bytes(report.files.get(name="report.html").content).decode()
    assert evil not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
    assert report.data["accuracy"][evil]["overall"]["successes"] == 2  # A, A, A, A vs A A B B


def test_a_superseded_generation_is_neither_used_nor_counted(study):
    """J1 judges every item again as a new version (J1@2, flipping c3): the report reads and
    counts only the current generation, exactly as if J1@1's verdicts had never been stored:
    same counts per source, same judge versions, same data fingerprint."""
    from agreement.selectors import pairwise_data
    from judging.models import Judgment
    from judging.services.judgments.record import judgment_record
    from tests.agreement.study import ITEMS

    for item, (*_, j1, _j2) in ITEMS.items():
        judgment_record(source="J1", annotator="J1@2", comparison=study[item],
                        choice="B" if item == "c3" else j1)
    current = pairwise_data()
    report, _ = report_data_compute(ReportParams.from_dict(PARAMS))
    assert current.n_judgments == 28 and current.judgments_by_source["J1"] == 4
    assert current.judge_versions["J1"] == ["J1@2"]
    assert {c: v[0][1] for (c, _), v in current.votes["J1"].items()} == {
        study[item].pk: "B" if item == "c3" else j1 for item, (*_, j1, _j2) in ITEMS.items()}
    assert report["snapshot"]["counts"]["pairwise_judgments"] == 28
    assert report["snapshot"]["counts"]["judgments_by_kind_and_source"]["pairwise/J1"] == 4

    superseded = Judgment.objects.filter(annotator="J1@1", kind=Judgment.Kind.PAIRWISE)
    assert superseded.delete()[0] == 4
    never_stored = pairwise_data()
    for name in ("n_judgments", "judgments_by_source", "judge_versions", "fingerprint", "votes"):
        assert getattr(current, name) == getattr(never_stored, name), name
    again, _ = report_data_compute(ReportParams.from_dict(PARAMS))
    assert report["snapshot"]["data_fingerprint"] == again["snapshot"]["data_fingerprint"]
