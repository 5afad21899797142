"""Tests for judging.ppi (judge-powered estimates; pure numpy/scipy, no Django needed).

The worked examples follow from the algebra in the module docstring, not from its output:
a judge that copies the human votes with ``lam = N / (N + n)`` weights every comparison
equally (so the board equals humans voting on all of them), a judge independent of the
votes is tuned to ``lam ~ 0`` (so the board equals the human-only one), and the mean is the
paper's formula written out.
"""

import numpy as np
import pytest
from scipy import stats

from judging import ppi
from judging import ratings as R

M = 8


def world(k, seed=0, m=M, spread=0.8, tie=0.1):
    """k comparisons of random pairs; A's human score is 1, 0 or 0.5 (a tie, prob ``tie``)
    with P(A) - P(B) following BT strengths ``beta``."""
    rng = np.random.default_rng(seed)
    beta = rng.normal(0, spread, m)
    a = rng.integers(0, m, k)
    b = (a + rng.integers(1, m, k)) % m
    p = 1 / (1 + np.exp(beta[b] - beta[a]))
    u = rng.random(k)
    human = np.where(u < tie, 0.5, (rng.random(k) < p).astype(float))
    return rng, beta, a, b, human


def split(a, b, human, judge, n):
    return ppi.Pairs.of(a[:n], b[:n], judge[:n], human[:n]), ppi.Pairs.of(a[n:], b[n:], judge[n:])


def test_copying_judge_gives_the_board_of_humans_voting_on_every_comparison():
    _, _, a, b, human = world(6000)
    n = 500
    labeled, unlabeled = split(a, b, human, human.copy(), n)
    everyone = ppi.bradley_terry_human(ppi.Pairs.of(a, b, human, human), M)
    textbook = dict(df_correction=False)  # the small-sample factor counts n, not n + N
    exact = ppi.bradley_terry_ppi(labeled, unlabeled, M, lam=(6000 - n) / 6000, **textbook)
    everyone_textbook = ppi.bradley_terry_human(ppi.Pairs.of(a, b, human, human), M, **textbook)
    # Equal up to the tiny ridge, which weighs against n votes here and n + N there.
    np.testing.assert_allclose(exact.ratings, everyone_textbook.ratings, atol=0.01)
    np.testing.assert_allclose(exact.ci_low, everyone_textbook.ci_low, atol=0.01)
    np.testing.assert_allclose(exact.ci_high, everyone_textbook.ci_high, atol=0.01)
    tuned = ppi.bradley_terry_ppi(labeled, unlabeled, M)
    assert 0.85 < tuned.lam <= 1
    ratio = np.median(tuned.width) / np.median(everyone.width)
    assert 0.97 < ratio < 1.03
    # Twelve times the comparisons: about sqrt(12) narrower than the 500 human votes alone.
    assert np.median(tuned.human_only.width) / np.median(tuned.width) > 3.2
    assert 5400 < tuned.effective_human_votes < 6600


def test_random_judge_gives_the_human_only_board_back():
    rng, _, a, b, human = world(8000, seed=1)
    judge = rng.integers(0, 3, len(a)) / 2  # A, tie or B at random, blind to the responses
    labeled, unlabeled = split(a, b, human, judge, 600)
    board = ppi.bradley_terry_ppi(labeled, unlabeled, M)
    alone = ppi.bradley_terry_human(labeled, M)
    assert board.lam < 0.15
    assert np.median(board.width) / np.median(alone.width) < 1.03
    np.testing.assert_allclose(board.human_only.width, alone.width)
    assert abs(board.effective_human_votes - 600) < 40


def test_biased_judge_moves_only_the_width_not_the_target():
    """A judge that always favours model 0 would put it on top; PPI keeps the human target."""
    rng, beta, a, b, human = world(30000, seed=2)
    judge = np.where(rng.random(len(a)) < 0.8, human, rng.integers(0, 2, len(a)))
    judge = np.where(a == 0, 1.0, np.where(b == 0, 0.0, judge))
    labeled, unlabeled = split(a, b, human, judge, 3000)
    board = ppi.bradley_terry_ppi(labeled, unlabeled, M, anchor=1)
    truth = ppi.ELO * (beta - beta[1]) + R.INIT
    judge_only = ppi.bradley_terry_human(ppi.Pairs.of(a, b, judge, judge), M, anchor=1)
    assert not judge_only.ci_low[0] <= truth[0] <= judge_only.ci_high[0]
    assert board.ci_low[0] <= truth[0] <= board.ci_high[0]
    assert np.median(board.width) < np.median(board.human_only.width)


def test_human_only_ratings_are_the_leaderboards_bradley_terry():
    """Same scale and anchor as judging.ratings (ties half, match-weighted mean at INIT)."""
    _, _, a, b, human = world(3000, seed=3, tie=0.2)
    board = ppi.bradley_terry_human(ppi.Pairs.of(a, b, human, human), M)
    outcome = np.where(human == 1, "A", np.where(human == 0, "B", "tie"))
    expected = R.bradley_terry([(f"m{i}", f"m{j}", o) for i, j, o in zip(a, b, outcome, strict=True)])
    np.testing.assert_allclose(board.ratings, [expected[f"m{i}"] for i in range(M)], atol=1e-4)


def test_a_rectified_win_share_outside_0_1_does_not_blow_up_the_fit():
    """Humans say 0 beat 1, the judge said the opposite on those same comparisons and never saw
    the pair elsewhere: at lam = 1 the pair's rectified share is 3 wins to -3, unbounded."""
    labeled = ppi.Pairs.of([0, 0, 0, 1, 1, 1, 0, 0, 0], [1, 1, 1, 2, 2, 2, 2, 2, 2],
                           judge=[0, 0, 0, .5, .5, .5, 1, 1, 1], human=[1, 1, 1, .5, .5, .5, 1, 1, 0])
    unlabeled = ppi.Pairs.of([1] * 5 + [0] * 5, [2] * 5 + [2] * 5, [1, 0] * 5)
    with pytest.warns(R.RatingsWarning, match="clipped"):
        board = ppi.bradley_terry_ppi(labeled, unlabeled, 3, lam=1.0)
    assert np.isfinite(board.ratings).all() and np.isfinite(board.cov).all()


def test_ci_covers_the_truth_about_95_percent_of_the_time():
    hits = []
    for seed in range(60):
        rng, beta, a, b, human = world(2400, seed=100 + seed, tie=0)
        judge = np.where(rng.random(len(a)) < 0.85, human, 1 - human)
        board = ppi.bradley_terry_ppi(*split(a, b, human, judge, 300), M, anchor=0)
        truth = ppi.ELO * (beta - beta[0]) + R.INIT
        hits.extend(((board.ci_low <= truth) & (truth <= board.ci_high))[1:])
    assert 0.9 < np.mean(hits) < 0.99


def test_rank_sets_are_exact_when_models_are_far_apart_and_wide_when_not():
    ratings = np.array([1300.0, 1000.0, 700.0])
    best, worst = ppi.rank_sets(ratings, np.eye(3) * 25.0)
    assert best.tolist() == [1, 2, 3] and worst.tolist() == [1, 2, 3]
    best, worst = ppi.rank_sets(ratings, np.eye(3) * 1e6)
    assert best.tolist() == [1, 1, 1] and worst.tolist() == [3, 3, 3]


def test_rank_sets_use_one_critical_value_for_all_pairs():
    """Two models 1.96 * sqrt(2) SDs apart are apart for one pair, not jointly for ten."""
    ratings = np.array([0.0, 2.0 * np.sqrt(2), *np.arange(8) * 100 + 1000])
    best, worst = ppi.rank_sets(ratings, np.eye(10))
    # 2.83 SDs apart: a single 95 % test would separate them, ten at once do not.
    assert best[0] == 9 and worst[1] == 10


def test_win_rate_vs_reference_uses_both_sides_and_ties_half():
    _, _, a, b, human = world(20000, seed=4, tie=0.3)
    labeled, unlabeled = split(a, b, human, human.copy(), 2000)
    rates = ppi.win_rates_vs_reference(labeled, unlabeled, M, reference=0)
    assert set(rates) == set(range(1, M))
    for model, rate in rates.items():
        vs = ((a == model) & (b == 0)) | ((a == 0) & (b == model))
        truth = np.where(a[vs] == model, human[vs], 1 - human[vs]).mean()
        assert abs(rate.estimate - truth) < 0.02  # a copying judge: all comparisons' rate
        assert rate.ci_low < truth < rate.ci_high
        assert rate.effective_human_votes > 5 * rate.n_human


def test_mean_score_with_a_noisy_judge_is_narrower_and_unbiased():
    rng = np.random.default_rng(5)
    quality = rng.normal(6, 2, 5000)
    human = quality + rng.normal(0, 0.5, 5000)
    judge = quality + 1.5 + rng.normal(0, 0.5, 5000)  # a lenient judge: 1.5 points too high
    est = ppi.ppi_mean(human[:300], judge[:300], judge[300:])
    assert est.ci_low < 6 < est.ci_high
    assert est.se < 0.5 * est.human_only_se
    assert est.lam > 0.8


@pytest.mark.parametrize("bad, message", [
    (dict(human=[0, 2]), "human scores"),
    (dict(a=[1, 1]), "against itself"),
    (dict(a=[0, 9]), "model indices"),
    (dict(lam=1.5), "lam must"),
    (dict(alpha=0), "alpha"),
])
def test_bad_input_raises_a_clear_error(bad, message):
    args = dict(a=[0, 1], b=[1, 2], human=[1, 0], lam=None, alpha=0.05)
    args.update(bad)
    with pytest.raises(ValueError, match=message):
        labeled = ppi.Pairs.of(args["a"], args["b"], [1, 0], args["human"])
        ppi.bradley_terry_ppi(labeled, ppi.Pairs.of([0], [2], [1]), 3, lam=args["lam"],
                              alpha=args["alpha"])


def test_needs_two_human_votes():
    with pytest.raises(ValueError, match="at least 2"):
        ppi.bradley_terry_ppi(ppi.Pairs.of([0], [1], [1], [1]), ppi.Pairs.of([0], [1], [1]), 2)
    with pytest.raises(ValueError, match="at least 2"):
        ppi.ppi_mean([1.0], [1.0], [1.0, 0.0])


@pytest.mark.parametrize("lam", [None, 0.0, 0.5, 1.0])
def test_mean_is_the_ppi_plus_plus_formula(lam):
    """PPI++ (Angelopoulos et al. 2024, mean estimation) written out from the paper: estimate
    lam * mean(f_unlabelled) + mean(y - lam * f), variance lam^2 var(f_u) / N + var(y - lam f) / n,
    and the tuned lam = cov(y, f) / ((1 + n / N) var(f)) clipped to [0, 1]. (Checked once
    against the authors' ppi-python 0.2.3 to 1e-10; not a dependency: its wheel installs a
    top-level ``tests`` package that shadows this suite's.)"""
    rng = np.random.default_rng(7)
    y = rng.normal(size=400)
    f = y + rng.normal(size=400)
    fu = rng.normal(size=3000) * 1.4
    n, big_n = len(y), len(fu)
    if lam is None:
        pooled = np.concatenate([f, fu])
        cov = ((y - y.mean()) * (f - f.mean())).mean()
        lam_ = float(np.clip(cov / ((1 + n / big_n) * pooled.var(ddof=1)), 0, 1))
    else:
        lam_ = lam
    estimate = lam_ * fu.mean() + (y - lam_ * f).mean()
    se = np.sqrt(lam_ ** 2 * fu.var() / big_n + (y - lam_ * f).var() / n)
    z = stats.norm.ppf(0.975)
    est = ppi.ppi_mean(y, f, fu, lam=lam)
    assert est.lam == pytest.approx(lam_, rel=1e-9)
    np.testing.assert_allclose([est.estimate, est.ci_low, est.ci_high],
                               [estimate, estimate - z * se, estimate + z * se], rtol=1e-10)
