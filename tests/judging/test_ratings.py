"""Tests for judging.ratings (pure numpy/scipy, no Django needed).

Expected numbers are derived by hand in the comments or by independent reference
implementations written here, never copied from the module's output.
"""

import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from judging import ratings as R  # noqa: E402

LOG10_2 = math.log10(2)


def rows(*spec):
    """rows(("x", "y", "A", 3), ...) -> three ("x", "y", "A") judgments."""
    return [(a, b, o) for a, b, o, k in spec for _ in range(k)]


def synthetic(true_elo, n, rng, tie_strength=0.5):
    """Draw n judgments from a BT model whose expected score (ties = 1/2) is exactly the BT
    probability p: P(tie) = 2*t*p*(1-p), P(A) = p - P(tie)/2, P(B) = 1 - p - P(tie)/2."""
    m = len(true_elo)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    p = 1 / (1 + 10 ** ((true_elo[b] - true_elo[a]) / 400))
    tie = 2 * tie_strength * p * (1 - p)
    u = rng.random(n)
    out = np.where(u < p - tie / 2, "A", np.where(u < p + tie / 2, "tie", "B"))
    names = [f"m{i:02d}" for i in range(m)]
    return [(names[i], names[j], o) for i, j, o in zip(a, b, out, strict=True)], names


# --------------------------------------------------------------------------- majority vote


@pytest.mark.parametrize(
    "votes, expected",
    [
        (["A"] * 5, ("A", 5, 5)),
        (["B", "B", "B", "B", "A"], ("B", 4, 5)),
        (["A", "A", "A", "B", "tie"], ("A", 3, 5)),  # 3/5
        (["A", "B", "A", "B", "tie"], ("tie", 2, 5)),  # A and B tied on votes
        (["tie", "tie", "tie", "A", "B"], ("tie", 3, 5)),  # 'tie' is itself the majority
        (["A", "B"], ("tie", 1, 2)),
        (["A", "tie"], ("tie", 1, 2)),  # any tie between the top choices -> 'tie'
        (["B"], ("B", 1, 1)),
    ],
)
def test_majority_vote(votes, expected):
    assert R.majority_vote(votes) == expected


def test_majority_vote_rejects_empty_and_unknown():
    with pytest.raises(ValueError, match="no votes"):
        R.majority_vote([])
    with pytest.raises(ValueError, match="unknown vote"):
        R.majority_vote(["A", "left"])


# --------------------------------------------------------------------------- online Elo


def test_elo_single_judgment():
    # Both start at 1000, expected score 1/(1+10^0) = 0.5, so the winner gains 4*0.5 = 2.
    assert R.online_elo([("x", "y", "A")]) == pytest.approx({"x": 1002.0, "y": 998.0})
    assert R.online_elo([("x", "y", "B")]) == pytest.approx({"x": 998.0, "y": 1002.0})


def test_elo_two_judgments_by_hand():
    # 1) x beats y: x = 1002, y = 998.
    # 2) y beats x: E_x = 1/(1 + 10^((998-1002)/400)) = 1/(1 + 10^-0.01)
    #    10^-0.01 = 0.97723722, E_x = 1/1.97723722 = 0.50575621
    #    x = 1002 - 4*0.50575621 = 999.97697516, y = 998 + 2.02302484 = 1000.02302484
    elo = R.online_elo([("x", "y", "A"), ("x", "y", "B")])
    assert elo["x"] == pytest.approx(999.97697516, abs=1e-6)
    assert elo["y"] == pytest.approx(1000.02302484, abs=1e-6)


def test_elo_tie_counts_half():
    # Tie at equal ratings: score 0.5 = expectation, nothing moves.
    assert R.online_elo([("x", "y", "tie")]) == pytest.approx({"x": 1000.0, "y": 1000.0})
    # After x won (1002 vs 998) a tie costs the favourite 4*(0.5 - 0.50575621) = -0.02302484.
    elo = R.online_elo([("x", "y", "A"), ("y", "x", "tie")])
    assert elo["x"] == pytest.approx(1001.97697516, abs=1e-6)
    assert elo["y"] == pytest.approx(998.02302484, abs=1e-6)


def test_elo_uses_given_order_and_ignores_timestamps():
    data = [("x", "y", "A", 3.0), ("x", "y", "B", 2.0), ("x", "z", "B", 1.0)]
    elo = R.online_elo(data)
    assert elo == pytest.approx(R.online_elo([r[:3] for r in data]))
    # Sorting by timestamp changes the result, so the function must not sort by itself.
    by_time = R.online_elo(sorted(data, key=lambda r: r[3]))
    assert elo["x"] != pytest.approx(by_time["x"], abs=1e-6)


def test_elo_matches_naive_fastchat_loop():
    def naive(battles, k=4, scale=400, base=10, init=1000):  # FastChat compute_elo
        rating = {}
        for a, b, w in battles:
            ra, rb = rating.get(a, init), rating.get(b, init)
            ea = 1 / (1 + base ** ((rb - ra) / scale))
            eb = 1 / (1 + base ** ((ra - rb) / scale))
            sa = {"A": 1, "B": 0, "tie": 0.5}[w]
            rating[a] = ra + k * (sa - ea)
            rating[b] = rb + k * (1 - sa - eb)
        return rating

    data, _ = synthetic(np.linspace(-200, 200, 7), 3000, np.random.default_rng(5))
    assert R.online_elo(data) == pytest.approx(naive(data), abs=1e-9)
    assert R.online_elo(data, k=32) == pytest.approx(naive(data, k=32), abs=1e-9)


# --------------------------------------------------------------------------- Bradley-Terry


@pytest.mark.parametrize("won, lost", [(30, 10), (7, 2), (1, 1), (2, 9)])
def test_bt_two_models_closed_form(won, lost):
    # MLE: p = w/(w+l) = 1/(1+10^(-d/400))  =>  d = 400*log10(w/l); mean anchored at 1000
    # (both models played every match, so the match-weighted mean is the plain mean).
    bt = R.bradley_terry(rows(("x", "y", "A", won), ("y", "x", "A", lost)))
    d = 400 * math.log10(won / lost)
    assert bt["x"] - bt["y"] == pytest.approx(d, abs=1e-2)
    assert (bt["x"] + bt["y"]) / 2 == pytest.approx(1000.0, abs=1e-9)


def test_bt_ties_count_half_a_win():
    # 6 wins, 2 losses, 4 ties -> 6+2 = 8 vs 2+2 = 4 effective wins -> d = 400*log10(2).
    data = rows(("x", "y", "A", 6), ("x", "y", "B", 2), ("x", "y", "tie", 4))
    bt = R.bradley_terry(data)
    assert bt["x"] - bt["y"] == pytest.approx(400 * LOG10_2, abs=1e-2)


def test_bt_three_models_exact_expected_counts():
    # Strengths pi = 4:2:1 -> P(a>b) = 2/3, P(b>c) = 2/3, P(a>c) = 4/5. Counts equal to their
    # expectations satisfy the likelihood equations exactly, so the MLE is pi itself:
    # a - b = b - c = 400*log10(2) = 120.41. Matches: a 80, b 60, c 80, so the
    # match-weighted mean is b + (80*120.41 - 80*120.41)/220 = b, i.e. b sits at 1000.
    data = rows(("a", "b", "A", 20), ("a", "b", "B", 10), ("b", "c", "A", 20),
                ("b", "c", "B", 10), ("c", "a", "B", 40), ("c", "a", "A", 10))
    bt = R.bradley_terry(data)
    assert bt["a"] == pytest.approx(1000 + 400 * LOG10_2, abs=1e-2)
    assert bt["b"] == pytest.approx(1000, abs=1e-2)
    assert bt["c"] == pytest.approx(1000 - 400 * LOG10_2, abs=1e-2)


def test_bt_anchor_fixes_one_model():
    data = rows(("x", "y", "A", 30), ("y", "x", "A", 10))
    bt = R.bradley_terry(data, anchor="y")
    assert bt["y"] == pytest.approx(1000.0, abs=1e-9)
    assert bt["x"] == pytest.approx(1000 + 400 * math.log10(3), abs=1e-2)
    with pytest.raises(ValueError, match="anchor"):
        R.bradley_terry(data, anchor="nope")


def test_bt_cyclic_symmetric_case_is_all_equal():
    # a>b, b>c, c>a all 2:1 -- symmetric under rotation, so all ratings must be equal.
    data = rows(("a", "b", "A", 2), ("a", "b", "B", 1), ("b", "c", "A", 2),
                ("b", "c", "B", 1), ("c", "a", "A", 2), ("c", "a", "B", 1))
    assert list(R.bradley_terry(data).values()) == pytest.approx([1000.0] * 3, abs=1e-6)


def test_bt_matches_scipy_lbfgs_reference():
    rng = np.random.default_rng(11)
    data, names = synthetic(rng.normal(0, 150, 9), 5000, rng)
    models, wins, ties = R.pair_counts(data)
    w = wins + 0.5 * ties

    def nll(beta):  # independent reference: same penalised likelihood, scipy L-BFGS
        d = beta[:, None] - beta[None, :]
        p = 1 / (1 + np.exp(-d))
        grad = ((w + w.T) * p - w).sum(1) + R.RIDGE * beta
        return -(w * np.log(p)).sum() + 0.5 * R.RIDGE * beta @ beta, grad

    res = minimize(nll, np.zeros(len(models)), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 10000})
    ref = 400 / math.log(10) * (res.x - res.x.mean())
    est = np.array(list(R.bradley_terry(data).values()))
    assert est - est.mean() == pytest.approx(ref, abs=1e-3)


def test_bootstrap_rounds_match_scipy_lbfgs_on_the_same_resampled_counts():
    """Oracle for the batched chord/Newton bootstrap: each round's refit equals scipy's
    L-BFGS on that round's counts (redrawn here: Multinomial(n, cell proportions), cells =
    upper-triangle pairs x {i won, j won, tie} that are non-empty, in row-major order)."""
    rng = np.random.default_rng(12)
    data, names = synthetic(rng.normal(0, 150, 12), 20_000, rng)
    data += [("m00", "m11", "A")] * 3  # a barely-seen pair, as real leaderboards have
    rounds = 25
    models, _, samples = R.bootstrap_bradley_terry(data, rounds=rounds, seed=9)
    _, wins, ties = R.pair_counts(data)
    iu, ju = np.triu_indices(len(models), 1)
    cells = np.stack([wins[iu, ju], wins[ju, iu], ties[iu, ju]], axis=1)
    pair, kind = np.nonzero(cells)
    counts = cells[pair, kind]
    draws = np.random.default_rng(9).multinomial(counts.sum(), counts / counts.sum(), rounds)
    for draw, got in zip(draws, samples, strict=True):
        w = np.zeros((len(models), len(models)))
        i, j = iu[pair], ju[pair]
        np.add.at(w, (i[kind == 0], j[kind == 0]), draw[kind == 0])
        np.add.at(w, (j[kind == 1], i[kind == 1]), draw[kind == 1])
        np.add.at(w, (i[kind == 2], j[kind == 2]), 0.5 * draw[kind == 2])
        np.add.at(w, (j[kind == 2], i[kind == 2]), 0.5 * draw[kind == 2])

        def nll(beta, w=w):
            p = 1 / (1 + np.exp(beta[None, :] - beta[:, None]))
            grad = ((w + w.T) * p - w).sum(1) + R.RIDGE * beta
            return -(w * np.log(p)).sum() + 0.5 * R.RIDGE * beta @ beta, grad

        res = minimize(nll, np.zeros(len(models)), jac=True, method="L-BFGS-B",
                       options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 10000})
        ref = 400 / math.log(10) * (res.x - res.x.mean())
        assert got - got.mean() == pytest.approx(ref, abs=1e-3)


def test_pair_counts_collapse_rows():
    data = rows(("x", "y", "A", 2), ("y", "x", "A", 1), ("x", "y", "tie", 3), ("z", "x", "B", 1))
    models, wins, ties = R.pair_counts(data)
    assert models == ("x", "y", "z")
    assert wins.tolist() == [[0, 2, 1], [1, 0, 0], [0, 0, 0]]
    assert ties.tolist() == [[0, 3, 0], [3, 0, 0], [0, 0, 0]]


def test_bt_from_counts_matches_rows():
    wins = np.array([[0, 30], [10, 0]])
    r = R.bradley_terry_from_counts(wins)
    assert r[0] - r[1] == pytest.approx(400 * math.log10(3), abs=1e-2)
    with pytest.raises(ValueError):
        R.bradley_terry_from_counts(np.array([[0, -1], [1, 0]]))
    with pytest.raises(ValueError, match="ridge"):
        R.bradley_terry_from_counts(wins, ridge=0)


def test_recovers_known_strengths():
    rng = np.random.default_rng(2024)
    true = rng.normal(0, 120, 12)
    true = true - true.mean() + 1000  # our default anchoring: mean rating 1000
    data, names = synthetic(true, 40_000, rng)
    bt = R.bradley_terry(data)
    est = np.array([bt[m] for m in names])
    # ~6,700 games per model -> SE ~ 7 Elo points; 25 is > 3.5 SE for the worst of 12.
    assert spearmanr(est, true)[0] > 0.95
    assert np.abs(est - true).max() < 25
    # The 95% bootstrap CIs should cover the truth for nearly every model.
    board = {r.model: r for r in R.leaderboard(data, bootstrap_rounds=300, seed=1)}
    covered = [board[m].ci_low <= t <= board[m].ci_high for m, t in zip(names, true, strict=True)]
    assert sum(covered) >= 10


# --------------------------------------------------------------------------- bootstrap & ranks


def test_bootstrap_reproducible_with_seed_and_row_order_free():
    rng = np.random.default_rng(3)
    data, _ = synthetic(np.array([0.0, 50, 100, 150]), 2000, rng)
    m1, p1, s1 = R.bootstrap_bradley_terry(data, rounds=200, seed=42)
    m2, p2, s2 = R.bootstrap_bradley_terry(data, rounds=200, seed=42)
    assert s1.shape == (200, 4)
    assert np.array_equal(s1, s2) and np.array_equal(p1, p2)
    _, _, s3 = R.bootstrap_bradley_terry(data, rounds=200, seed=43)
    assert not np.array_equal(s1, s3)
    shuffled = [data[i] for i in rng.permutation(len(data))]
    _, p4, s4 = R.bootstrap_bradley_terry(shuffled, rounds=200, seed=42)
    assert np.allclose(s4, s1) and np.allclose(p4, p1)


def test_bootstrap_spread_matches_theory():
    # Two models, 400 games, p = 0.75: SE(logit) = 1/sqrt(n p (1-p)) = 1/sqrt(75) = 0.1155,
    # i.e. 400/ln(10) * 0.1155 = 20.06 Elo points for the difference.
    data = rows(("x", "y", "A", 300), ("x", "y", "B", 100))
    _, _, s = R.bootstrap_bradley_terry(data, rounds=2000, seed=0)
    assert np.std(s[:, 0] - s[:, 1]) == pytest.approx(20.06, rel=0.1)


def test_ci_contains_point_estimate():
    rng = np.random.default_rng(8)
    data, _ = synthetic(rng.normal(0, 100, 8), 4000, rng)
    board = R.leaderboard(data, bootstrap_rounds=1000, seed=0)
    for r in board:
        assert r.ci_low < r.bt_rating < r.ci_high


def test_ranks_from_ci_by_hand():
    #        a: [1100, 1200]  b: [1050, 1150]  c: [900, 1000]  d: [950, 1040]
    # a: nobody's low > 1200                       -> 1
    # b: a's low 1100 < 1150                       -> 1
    # c: a (1100), b (1050) lows > 1000; d 950 not -> 3
    # d: a (1100), b (1050) lows > 1040            -> 3
    ranks = R.ranks_from_ci([1100, 1050, 900, 950], [1200, 1150, 1000, 1040])
    assert ranks.tolist() == [1, 1, 3, 3]


def test_leaderboard_ranks_from_non_overlapping_cis():
    # x1 ~ x2 and y1 ~ y2 are even within each pair; every x beats every y 90:10.
    # So the x's CIs overlap each other but sit far above both y's -> ranks 1, 1, 3, 3.
    spec = [("x1", "x2", "A", 100), ("x1", "x2", "B", 100),
            ("y1", "y2", "A", 100), ("y1", "y2", "B", 100)]
    for x in ("x1", "x2"):
        for y in ("y1", "y2"):
            spec += [(x, y, "A", 90), (x, y, "B", 10)]
    board = R.leaderboard(rows(*spec), bootstrap_rounds=500, seed=0)
    assert {r.model: r.rank for r in board} == {"x1": 1, "x2": 1, "y1": 3, "y2": 3}
    # 9:1 -> 400*log10(9) = 381.7 points between the groups.
    by = {r.model: r.bt_rating for r in board}
    assert by["x1"] - by["y1"] == pytest.approx(400 * math.log10(9), abs=1e-2)
    assert [r.model for r in board][:2] in (["x1", "x2"], ["x2", "x1"])


# --------------------------------------------------------------------------- win rate & leaderboard


def test_win_rate_vs_reference_and_matches():
    data = rows(("x", "ref", "A", 3), ("ref", "x", "A", 1), ("x", "ref", "tie", 2),
                ("y", "z", "A", 1))
    # x vs ref: 3 wins + 2 ties (half) out of 6 -> 4/6.
    assert R.win_rates_vs(data, "ref") == {"x": (pytest.approx(4 / 6), 6), "y": (None, 0),
                                           "z": (None, 0)}
    assert R.matches_per_model(data) == {"ref": 6, "x": 6, "y": 1, "z": 1}
    with pytest.raises(ValueError, match="reference model 'nobody'"):
        R.win_rates_vs(data, "nobody")


def test_leaderboard_rows():
    data = rows(("x", "ref", "A", 30), ("ref", "x", "A", 10), ("y", "ref", "A", 20),
                ("ref", "y", "A", 20), ("x", "y", "tie", 10))
    board = R.leaderboard(data, reference="ref", bootstrap_rounds=200, seed=0)
    assert [r.bt_rating for r in board] == sorted((r.bt_rating for r in board), reverse=True)
    by = {r.model: r for r in board}
    assert by["x"].win_rate_vs_reference == pytest.approx(0.75) and by["x"].n_vs_reference == 40
    assert by["y"].win_rate_vs_reference == pytest.approx(0.5) and by["y"].n_vs_reference == 40
    assert by["ref"].win_rate_vs_reference is None and by["ref"].n_vs_reference == 0
    assert by["x"].matches == 50 and by["ref"].matches == 80
    assert by["x"].elo == pytest.approx(R.online_elo(data)["x"])
    assert by["x"].bt_rating == pytest.approx(R.bradley_terry(data)["x"])
    board0 = R.leaderboard(data, bootstrap_rounds=0)
    assert all(r.ci_low == r.ci_high == r.bt_rating for r in board0)


# --------------------------------------------------------------------------- edge cases


def test_rejects_bad_input():
    with pytest.raises(ValueError, match="no judgments"):
        R.leaderboard([])
    with pytest.raises(ValueError, match="no judgments"):
        R.online_elo(iter([]))
    with pytest.raises(ValueError, match="unknown outcome 'left'"):
        R.bradley_terry([("x", "y", "A"), ("x", "y", "left")])
    with pytest.raises(ValueError, match="unknown outcome"):
        R.online_elo([("x", "y", None)])
    with pytest.raises(ValueError, match="model_a, model_b, outcome"):
        R.online_elo([("x", "y")])
    with pytest.raises(ValueError, match="itself"):
        R.bradley_terry([("x", "y", "A"), ("x", "x", "tie")])
    with pytest.raises(ValueError, match="rounds"):
        R.leaderboard([("x", "y", "A")] * 3 + [("y", "x", "A")], bootstrap_rounds=-1)


def test_model_seen_once_is_finite_flagged_and_uncertain():
    rng = np.random.default_rng(4)
    data, _ = synthetic(np.array([0.0, 40, 80]), 3000, rng)
    data.append(("newbie", "m00", "B"))  # newbie lost its only game
    with pytest.warns(R.RatingsWarning, match="newbie"):
        board = {r.model: r for r in R.leaderboard(data, bootstrap_rounds=300, seed=0)}
    newbie = board["newbie"]
    # The ridge pushes newbie far down, but the match-weighted anchor keeps the others put.
    without = R.bradley_terry(data[:-1])
    for m, r in without.items():
        assert board[m].bt_rating == pytest.approx(r, abs=1.0)
    assert newbie.matches == 1
    assert all(math.isfinite(v) for v in (newbie.bt_rating, newbie.ci_low, newbie.ci_high))
    assert newbie.bt_rating < min(r.bt_rating for m, r in board.items() if m != "newbie")
    width = {m: r.ci_high - r.ci_low for m, r in board.items()}
    assert width["newbie"] > 10 * max(w for m, w in width.items() if m != "newbie")


def test_disconnected_graph_warns_and_centres_each_component():
    # Component 1: a beats b 3:1 -> gap 400*log10(3); component 2: c, d even.
    data = rows(("a", "b", "A", 3), ("a", "b", "B", 1), ("c", "d", "A", 2), ("c", "d", "B", 2))
    with pytest.warns(R.RatingsWarning, match="disconnected"):
        bt = R.bradley_terry(data)
    assert bt["a"] - bt["b"] == pytest.approx(400 * math.log10(3), abs=1e-2)
    # The ridge centres each component on its own: both means sit at 1000.
    assert (bt["a"] + bt["b"]) / 2 == pytest.approx(1000, abs=1e-6)
    assert bt["c"] == pytest.approx(1000, abs=1e-6) and bt["d"] == pytest.approx(1000, abs=1e-6)


def test_all_ties():
    data = rows(("a", "b", "tie", 5), ("b", "c", "tie", 5), ("a", "c", "tie", 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # all ties is well-posed: no warning expected
        board = R.leaderboard(data, bootstrap_rounds=100, seed=0)
    for r in board:
        assert r.bt_rating == pytest.approx(1000.0, abs=1e-9)
        assert r.ci_low == pytest.approx(1000.0, abs=1e-9)
        assert r.ci_high == pytest.approx(1000.0, abs=1e-9)
        assert r.rank == 1


# ------------------------------------------------ raw rows: the same numbers without encoding


def test_online_elo_of_raw_rows_is_the_encoded_loops_to_the_bit():
    """Raw rows run through a loop keyed by name (no encoding): the same floats, in the same
    (sorted) model order, as the loop over encoded rows; lists, generators and rows with a
    timestamp column (which fall back to encoding) agree too."""
    data, _ = synthetic(np.linspace(-300, 300, 9), 20_000, np.random.default_rng(11))
    encoded = R.online_elo(R.encode(data))
    for given in (data, [list(r) for r in data], iter(data),
                  [(*r, i) for i, r in enumerate(data)]):
        elo = R.online_elo(given)
        assert elo == encoded and list(elo) == list(encoded)
    assert R.online_elo(data, k=32, init=1500) == R.online_elo(R.encode(data), k=32,
                                                                init=1500)


@pytest.mark.parametrize("bad, message", [
    ([("x", "y", "A"), ("y", "y", "B")], "judgment #1 compares 'y' with itself"),
    ([("x", "y", "A"), ("x", "y", "left")], "unknown outcome 'left'"),
    ([("x", "y", "A"), (["x"], "y", "A")], "unhashable|model_a"),
    ([("x", "y", "A"), ("x",)], "model_a, model_b, outcome"),
])
def test_raw_rows_the_fast_paths_cannot_take_get_encodings_errors(bad, message):
    with pytest.raises((ValueError, TypeError), match=message):
        R.online_elo(bad)
    with pytest.raises((ValueError, TypeError), match=message):
        R.bootstrap_bradley_terry(bad, rounds=5)


def test_bootstrap_of_raw_rows_counts_distinct_triples_to_the_same_bits():
    data, _ = synthetic(np.linspace(-200, 200, 6), 5_000, np.random.default_rng(12))
    expected = R.bootstrap_bradley_terry(R.encode(data), rounds=200, seed=4)
    for given in (data, iter(data), [list(r) for r in data],
                  [(*r, i) for i, r in enumerate(data)]):
        got = R.bootstrap_bradley_terry(given, rounds=200, seed=4)
        assert got[0] == expected[0]
        assert np.array_equal(got[1], expected[1]) and np.array_equal(got[2], expected[2])
