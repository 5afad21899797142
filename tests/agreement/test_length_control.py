"""The report's length-controlled preference: per source, the length coefficient of a BT fit
with a length covariate and the share of the source's preference that is length. Worked
examples (simulated verdicts, then the constructed study of tests/agreement/conftest.py)."""
import numpy as np
import pytest

from agreement.reports.biases import length_control
from agreement.reports.html import SECTIONS
from agreement.reports.params import ReportParams
from agreement.reports.tables import all_tables
from agreement.services.reports import report_data_compute

BETA = {"m0": 1.0, "m1": 0.4, "m2": -0.2, "m3": -0.8}
WORDS = {"m0": (20, 60), "m1": (60, 120), "m2": (60, 120), "m3": (250, 400)}


def simulated(length_logit: float, n: int = 4000, seed: int = 0):
    """Random pairs; verdict A with probability s(beta_a - beta_b + length_logit * z)."""
    rng = np.random.default_rng(seed)
    names = list(BETA)
    models, la, lb, sides = [], [], [], []
    for _ in range(n):
        x, y = rng.choice(names, size=2, replace=False)
        a, b = int(rng.integers(*WORDS[x])), int(rng.integers(*WORDS[y]))
        p = 1 / (1 + np.exp(-(BETA[x] - BETA[y] + length_logit * (a - b) / (a + b))))
        models.append((x, y))
        la.append(a)
        lb.append(b)
        sides.append("A" if rng.random() < p else "B")
    return models, la, lb, sides


def test_a_judge_preferring_longer_answers_has_a_large_share_of_length():
    result = length_control(*simulated(3.0))
    assert result["significant"] and result["ci_low"] > 300  # true: 3 * 173.7 = 521 Elo
    assert result["length_share"] > 0.5 and result["n"] == 4000


def test_a_judge_without_length_preference_has_a_ci_covering_zero_and_a_small_share():
    result = length_control(*simulated(0.0))
    assert result["ci_low"] < 0 < result["ci_high"] and not result["significant"]
    assert result["length_share"] < 0.25  # 0.02-0.19 over seeds 0-9 (a noisy coefficient)


def test_ties_count_half_and_bad_input_is_an_error_not_a_crash():
    models, la, lb, sides = simulated(0.0, n=200, seed=2)
    sides[:50] = ["tie"] * 50
    assert length_control(models, la, lb, sides)["n"] == 200
    with pytest.raises(ValueError):
        length_control(models[:1], la[:1], lb[:1], sides[:1])


@pytest.mark.django_db
def test_the_report_carries_it_per_source_as_a_table_and_a_section(study):
    data = report_data_compute(ReportParams.from_dict(
        {"metrics": ["length"], "bootstrap_rounds": 50, "seed": 0}))[0]
    control = data["biases"]["length_control"]
    assert set(control) == set(data["biases"]["length"])  # humans and each judge
    for result in control.values():
        assert "error" in result or {"coefficient", "ci_low", "ci_high", "length_share",
                                     "significant", "n"} <= set(result)
    rows = all_tables(data)["length_control"]
    assert {row["source"] for row in rows} == set(control)
    assert "length_control" in [stem for stem, _, _ in SECTIONS]
