"""Tests for judging.style_control (pure numpy/scipy): a planted length bias is measured by
its coefficient and taken out of the ratings, which the raw board credits to verbose models."""

import numpy as np
import pytest

from judging import ratings as R
from judging import style_control as S
from judging.ppi import ELO

M = 6
VERBOSITY = np.array([300, 60, 100, 150, 80, 120])  # model 0 writes long answers


def study(length_bias, n=20000, seed=0, tie=0.0):
    rng = np.random.default_rng(seed)
    beta = np.array([0.0, 0.5, -0.3, 0.2, -0.6, 0.4])
    a = rng.integers(0, M, n)
    b = (a + rng.integers(1, M, n)) % M
    words = rng.poisson(VERBOSITY[np.r_[a, b]]).reshape(2, n)
    markdown = rng.poisson(2, (2, n, 3))  # headers, lists, bold: unrelated to the outcome
    fa = np.column_stack([words[0], markdown[0]])
    fb = np.column_stack([words[1], markdown[1]])
    z = (words[0] - words[1]) / (words[0] + words[1])  # the planted covariate, written out
    p = 1 / (1 + np.exp(beta[b] - beta[a] - length_bias * z))
    y = np.where(rng.random(n) < tie, 0.5, (rng.random(n) < p).astype(float))
    weights = np.bincount(a, minlength=M) + np.bincount(b, minlength=M)
    truth = ELO * (beta - beta @ weights / weights.sum()) + R.INIT
    return a, b, y, fa, fb, truth


def test_planted_length_bias_is_recovered_and_removed_from_the_ratings():
    a, b, y, fa, fb, truth = study(length_bias=1.5)
    fit = S.style_controlled_bradley_terry(a, b, y, fa, fb, M)
    planted = ELO * 1.5
    assert fit.coef_low[0] < planted < fit.coef_high[0]
    assert fit.coef_low[0] > 150  # far from no length effect
    assert (np.abs(fit.coef[1:]) < 30).all()  # markdown counts had no effect
    assert ((fit.ci_low <= truth) & (truth <= fit.ci_high)).all()
    assert abs(fit.raw[0] - truth[0]) > 80  # the raw board credits model 0's length to it
    assert abs(fit.ratings[0] - truth[0]) < 20


def test_raw_ratings_are_the_leaderboards_bradley_terry():
    a, b, y, fa, fb, _ = study(length_bias=0.0, n=3000, seed=1, tie=0.2)
    fit = S.style_controlled_bradley_terry(a, b, y, fa, fb, M)
    outcome = np.where(y == 1, "A", np.where(y == 0, "B", "tie"))
    expected = R.bradley_terry([(f"m{i}", f"m{j}", o) for i, j, o in
                                zip(a, b, outcome, strict=True)])
    np.testing.assert_allclose(fit.raw, [expected[f"m{i}"] for i in range(M)], atol=1e-3)
    assert fit.coef_low[0] < 0 < fit.coef_high[0]
    assert np.abs(fit.ratings - fit.raw).max() < 30


def test_markdown_features_count_words_headers_list_items_and_bold():
    text = "# Title\n\nSome **bold** text and __more__.\n\n- one\n* two\n1. three\n## Sub\n#nope"
    assert S.markdown_features(text) == (16, 2, 3, 2)
    assert S.markdown_features("") == (0, 0, 0, 0)


def test_normalised_difference_is_zero_when_neither_side_has_the_feature():
    z = S.normalised_differences([[3, 0]], [[1, 0]])
    np.testing.assert_allclose(z, [[0.5, 0.0]])


@pytest.mark.parametrize("change, message", [
    (dict(score=[1.0, 2.0]), "scores"),
    (dict(b=[0, 2]), "model indices"),
    (dict(fa=[[1, 0, 0, 0]], fb=[[2, 0, 0, 0]]), "same comparisons"),
    (dict(fa=[[-1, 0, 0, 0], [1, 0, 0, 0]]), ">= 0"),
])
def test_bad_input_raises_a_clear_error(change, message):
    args = dict(a=[0, 1], b=[1, 2], score=[1.0, 0.0], fa=[[1, 0, 0, 0]] * 2, fb=[[2, 0, 0, 0]] * 2)
    args.update(change)
    with pytest.raises(ValueError, match=message):
        S.style_controlled_bradley_terry(args["a"], args["b"], args["score"], args["fa"],
                                         args["fb"], 3)
