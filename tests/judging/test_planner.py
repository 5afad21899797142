"""Tests for judging.planner (the vote planner's pure core; no database).

The expected counts come from the formulas in the module docstring worked by hand (two equal
models: the CI-width formula), or from a simulated world where the plan is carried out and the
board's own interval (``ppi.bradley_terry_human``) is measured afterwards.
"""

import math
from decimal import Decimal

import numpy as np
import pytest
from scipy.stats import norm

from annotation.providers.costs import FeeSchedule
from judging import planner, ppi
from judging.planner import PlanError, Target, World, plan

Z = norm.ppf(0.975)


def two_equal_models(done=10, rho=None, dispersion=1.0):
    return World(("a", "b"), np.zeros(2), np.array([[0.0, done], [done, 0.0]]), dispersion,
                 rho=rho)


def test_ci_target_needs_the_count_of_the_ci_width_formula():
    # Two equal models, rating anchored at their mean: var(r_a) = var(b_a - b_b) / 4 and one
    # comparison carries s(1 - s) / dispersion = 1/4 of information, so var = 1 / n and the
    # full width is 2 z ELO / sqrt(n): n = (2 z ELO / W)^2 comparisons, plus the board's
    # small-sample factor n / (n - (M - 1)) (one more comparison for two models).
    total = (2 * Z * ppi.ELO / 100) ** 2 + 1  # 47.4
    result = plan(two_equal_models(done=10), Target.parse("ci:100")).human_only
    assert result.reachable
    assert result.comparisons + 10 == math.ceil(total)
    assert result.pairs == {(0, 1): result.comparisons}
    assert result.worst_after <= 1 < result.worst_now


def test_worker_noise_scales_the_count():
    quiet = plan(two_equal_models(dispersion=0.2), Target.parse("ci:50")).human_only
    noisy = plan(two_equal_models(dispersion=0.4), Target.parse("ci:50")).human_only
    assert noisy.comparisons + 10 == pytest.approx(2 * (quiet.comparisons + 10), abs=2)


def test_the_judge_cuts_the_total_by_one_minus_rho_squared():
    rho = 0.8
    plans = plan(two_equal_models(done=10, rho=rho), Target.parse("ci:60"))
    human_total = plans.human_only.comparisons + 10 - 1  # less the small-sample one
    judge_total = plans.with_judge.comparisons + 10 - 1
    assert judge_total == pytest.approx((1 - rho**2) * human_total, abs=1)
    assert plans.with_judge.variance_factor == pytest.approx(1 - rho**2)


def test_no_judge_no_judge_plan():
    assert plan(two_equal_models(), Target.parse("ci:60")).with_judge is None


def test_separating_needs_the_power_formula_and_equal_models_cannot_be_separated():
    d = 0.4  # b_x - b_y in natural-log units
    world = World(("x", "y"), np.array([d / 2, -d / 2]), np.zeros((2, 2)), 1.0)
    result = plan(world, Target.parse("separate:x,y")).human_only
    s = 1 / (1 + math.exp(-d))
    # var(b_x - b_y) = 1 / (n s (1 - s)) must reach (d / (z_.975 + z_.8))^2
    n = (Z + norm.ppf(0.8)) ** 2 / (d**2 * s * (1 - s)) + 1  # + 1: small-sample factor
    assert result.comparisons == math.ceil(n)
    tied = plan(two_equal_models(), Target.parse("separate:a,b")).human_only
    assert not tied.reachable


def test_topk_on_a_ladder_spends_on_the_boundary():
    world = World(tuple("abcdef"), np.array([1.5, 1.0, 0.5, -0.5, -1.0, -1.5]),
                  np.zeros((6, 6)), 0.3)
    result = plan(world, Target.parse("topk:2")).human_only
    assert result.reachable and result.comparisons > 0
    # the pair straddling the boundary (b vs c, 0.5 apart) gets more than any other
    assert max(result.pairs, key=result.pairs.get) == (1, 2)


def test_capacity_is_respected_and_can_make_a_target_unreachable():
    capacity = np.array([[0.0, 5.0], [5.0, 0.0]])
    world = World(("a", "b"), np.zeros(2), np.array([[0.0, 10], [10, 0.0]]), 1.0,
                  capacity=capacity)
    result = plan(world, Target.parse("ci:100")).human_only
    assert not result.reachable
    assert result.comparisons == 5


@pytest.mark.parametrize("text", ["", "ci", "ci:0", "ci:-3", "ci:nan", "separate:x",
                                  "separate:x,x", "topk:0", "topk:two", "best:3"])
def test_unreadable_targets_are_refused(text):
    with pytest.raises(PlanError, match="unknown target"):
        Target.parse(text)


def test_unknown_models_and_impossible_k_are_refused():
    with pytest.raises(PlanError, match="unknown model"):
        plan(two_equal_models(), Target.parse("separate:a,zz"))
    with pytest.raises(PlanError, match="topk needs"):
        plan(two_equal_models(), Target.parse("topk:2"))


def test_cost_adds_the_marketplace_fee():
    result = plan(two_equal_models(), Target.parse("ci:100")).human_only
    cost = result.cost(votes_per_comparison=5, reward=Decimal("0.10"),
                       fees=FeeSchedule(kind="rate", rate=Decimal("0.2")))
    votes = result.comparisons * 5
    assert cost.rewards == Decimal("0.10") * votes
    assert cost.total == Decimal("0.12") * votes


# ----------------------------------------------------------------------------- simulated world


def simulate(rng, beta, a, b, votes):
    """A's share of ``votes`` independent BT votes per comparison."""
    p = 1 / (1 + np.exp(beta[b] - beta[a]))
    return rng.binomial(votes, p) / votes


def test_measure_recovers_the_worker_noise_and_the_judge_correlation():
    rng = np.random.default_rng(3)
    m, k, votes = 10, 3000, 5
    beta = rng.normal(0, 0.8, m)
    a = rng.integers(0, m, k)
    b = (a + rng.integers(1, m, k)) % m
    human = simulate(rng, beta, a, b, votes)
    judge = np.clip(human + rng.normal(0, 0.15, k), 0, 1)
    labeled = ppi.Pairs.of(a, b, judge, human)
    world = planner.measure([str(i) for i in range(m)], labeled)
    assert world.dispersion == pytest.approx(1 / votes, rel=0.1)
    rho = planner.residual_correlation(labeled, world.strengths)
    assert 0.5 < rho < 0.95
    assert world.comparisons.sum() == 2 * k


def test_a_plan_carried_out_gives_the_ci_width_it_promised():
    """Plan ``ci:W`` from a first round, vote the planned pairs in simulation, and measure the
    board's own CIs: each lands at the width the plan predicted for it, the widest near W
    (a little over: the widest of 12 noisy sandwich widths planned to sit at W)."""
    m, votes, target = 12, 5, 80.0
    widest, realised = [], []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        beta = rng.normal(0, 0.7, m)
        a = rng.integers(0, m, 15 * m)
        b = (a + rng.integers(1, m, len(a))) % m
        human = simulate(rng, beta, a, b, votes)
        world = planner.measure([str(i) for i in range(m)],
                                ppi.Pairs.of(a, b, np.zeros(len(a)), human))
        result = plan(world, Target.parse(f"ci:{target}")).human_only
        assert result.reachable and result.comparisons > 0
        more = [pair for pair, n in result.pairs.items() for _ in range(n)]
        a2 = np.concatenate([a, [i for i, _ in more]])
        b2 = np.concatenate([b, [j for _, j in more]])
        human2 = np.concatenate([human, simulate(rng, beta, a2[len(a):], b2[len(a):], votes)])
        fit = ppi.bradley_terry_human(ppi.Pairs.of(a2, b2, np.zeros(len(a2)), human2), m)
        widest.append(fit.width.max())
        realised.extend(fit.width / (target * np.sqrt(result.ratios)))
    assert np.median(realised) == pytest.approx(1.0, abs=0.05)
    assert target * 0.95 < np.median(widest) < target * 1.12
