"""System-level score correlation and the input checks of agreement.statistics.correlation.

Django-free (part of `make mutation`'s fast selection): the per-model means are worked by
hand and the coefficients come from SciPy on those hand-worked means.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agreement import statistics as st  # noqa: E402

# Seven responses of three models; three lack a score (None, NaN, None) and are dropped.
MODELS = ["b", "a", "b", "a", "c", "c", "a"]
HUMAN = [4, 2, None, 3, 5, float("nan"), 1]
JUDGE = [3, 1, 5, 3, 4, 2, None]
# By hand over the kept responses 0, 1, 3, 4: a = (2+3)/2 and (1+3)/2, b = 4 and 3, c = 5 and 4.
HUMAN_MEANS, JUDGE_MEANS, N_RESPONSES = [2.5, 4.0, 5.0], [2.0, 3.0, 4.0], [2, 1, 1]


def test_system_score_correlation_uses_per_model_means_of_shared_responses():
    res = st.system_score_correlation(MODELS, HUMAN, JUDGE)
    assert res.models == ["a", "b", "c"]
    assert res.human_means == pytest.approx(HUMAN_MEANS)
    assert res.judge_means == pytest.approx(JUDGE_MEANS)
    assert res.n_responses == N_RESPONSES
    c = res.correlation
    pr = stats.pearsonr(HUMAN_MEANS, JUDGE_MEANS)
    kt = stats.kendalltau(HUMAN_MEANS, JUDGE_MEANS)
    sr = stats.spearmanr(HUMAN_MEANS, JUDGE_MEANS)
    assert c.n == 3
    assert (c.pearson, c.pearson_p) == pytest.approx((pr.statistic, pr.pvalue))
    assert (c.kendall_tau, c.kendall_p) == pytest.approx((kt.statistic, kt.pvalue))
    assert (c.spearman, c.spearman_p) == pytest.approx((sr.statistic, sr.pvalue))
    assert c.kendall_tau == pytest.approx(1.0) and c.pearson < 1  # same order, not a line


def test_system_score_correlation_means_are_not_swapped_or_unweighted():
    # Judge means fall while human means rise: the sign tells which side is which.
    res = st.system_score_correlation(["x", "x", "y", "z"], [1, 3, 5, 9], [9, 7, 4, 0])
    assert res.human_means == [2.0, 5.0, 9.0] and res.judge_means == [8.0, 4.0, 0.0]
    assert res.n_responses == [2, 1, 1]
    assert res.correlation.pearson == pytest.approx(
        stats.pearsonr([2, 5, 9], [8, 4, 0]).statistic
    )
    assert res.correlation.kendall_tau == pytest.approx(-1.0)


def test_system_score_correlation_accepts_two_models_and_names_them_as_text():
    res = st.system_score_correlation([7, 3, 7], [1.0, 2.0, 3.0], [2.0, 1.0, 4.0])
    assert res.models == ["3", "7"] and res.n_responses == [1, 2]
    assert res.human_means == [2.0, 2.0] and res.judge_means == [1.0, 3.0]
    assert res.correlation.n == 2


def test_system_score_correlation_rejects_bad_input():
    with pytest.raises(ValueError, match="2 models with scored responses"):
        st.system_score_correlation(["a", "a", "b"], [1, 2, None], [1, 2, 3])
    # every length is named, whichever input is the odd one out
    for models, human, judge in (
        (["a", "b"], [1, 2, 3], [1, 2, 3]),
        (["a", "b", "c"], [1, 2], [1, 2, 3]),
        (["a", "b", "c"], [1, 2, 3], [1, 2]),
    ):
        with pytest.raises(ValueError, match="'models'.*'human'.*'judge'"):
            st.system_score_correlation(models, human, judge)
    with pytest.raises(ValueError, match="scores must be numbers"):
        st.system_score_correlation(["a", "b"], [1, "high"], [1, 2])


@pytest.mark.parametrize("human, judge", [(["1", "x"], [1, 2]), ([1, 2], ["1", "x"])])
def test_score_correlation_rejects_text_scores_on_either_side(human, judge):
    with pytest.raises(ValueError, match="scores must be numbers"):
        st.score_correlation(human, judge)


def test_score_correlation_drops_pairs_missing_the_judge_score():
    res = st.score_correlation([1, 2, 3, 4], [1.0, None, 2.0, 4.0])
    assert res.n == 3
    assert res.pearson == pytest.approx(stats.pearsonr([1, 3, 4], [1, 2, 4]).statistic)


def test_system_correlation_reports_both_p_values():
    a, b = {"m1": 1, "m2": 2, "m3": 3, "m4": 4}, {"m1": 1, "m2": 3, "m3": 2, "m4": 4}
    res = st.system_correlation(a, b)
    sr, kt = stats.spearmanr([1, 2, 3, 4], [1, 3, 2, 4]), stats.kendalltau([1, 2, 3, 4], [1, 3, 2, 4])
    assert (res.spearman, res.spearman_p) == pytest.approx((sr.statistic, sr.pvalue))
    assert (res.kendall_tau, res.kendall_p) == pytest.approx((kt.statistic, kt.pvalue))
    assert np.isfinite(res.spearman_p) and 0 < res.spearman_p < 1
