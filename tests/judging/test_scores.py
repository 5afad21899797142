"""The score leaderboard's numeric core (``judging.scores``), without a database: hand-computed
means, item averaging, the bootstrap against naive resampling, seeding and row-order freedom."""
import random

import numpy as np
import pytest

from judging.scores import bootstrap_means, score_board


def test_means_are_over_items_and_grades_of_one_item_are_averaged_first():
    rows = [("a", "r1", 5), ("a", "r1", 3), ("a", "r2", 1),  # items 4 and 1 -> mean 2.5
            ("b", "r3", 2), ("b", "r4", 2)]
    board = {r.model: r for r in score_board(rows, rounds=0)}
    assert board["a"].mean == 2.5 and (board["a"].n, board["a"].judgments) == (2, 3)
    assert board["b"].mean == 2.0 and (board["b"].n, board["b"].judgments) == (2, 2)
    assert (board["a"].ci_low, board["a"].ci_high) == (2.5, 2.5)  # no rounds: CI = mean
    assert [r.model for r in score_board(rows, rounds=0)] == ["a", "b"]


def test_ci_covers_the_mean_and_separated_models_get_distinct_ranks():
    rng = random.Random(1)
    rows = [("good", f"g{i}", rng.choice([4, 5])) for i in range(60)]
    rows += [("bad", f"b{i}", rng.choice([1, 2])) for i in range(60)]
    rows += [("also-bad", f"c{i}", rng.choice([1, 2])) for i in range(60)]
    board = score_board(rows, rounds=500, seed=3)
    assert [r.model for r in board][0] == "good"
    assert all(r.ci_low < r.mean < r.ci_high for r in board)
    ranks = {r.model: r.rank for r in board}
    assert ranks["good"] == 1 and ranks["bad"] == ranks["also-bad"] == 2  # overlapping CIs


def test_seeded_and_independent_of_row_order():
    rows = [(m, f"{m}{i}", (i * 7 + len(m)) % 11) for m in ("x", "yy", "zzz") for i in range(40)]
    shuffled = rows[:]
    random.Random(5).shuffle(shuffled)
    assert score_board(rows, rounds=300, seed=9) == score_board(shuffled, rounds=300, seed=9)
    assert score_board(rows, rounds=300, seed=9) != score_board(rows, rounds=300, seed=10)


def test_multinomial_bootstrap_matches_naive_resampling():
    values = np.array([1.0, 2.0, 2.0, 3.0, 5.0, 5.0, 4.5, 0.0, 10.0, 7.0])
    fast = bootstrap_means(values, 20000, np.random.default_rng(0))
    naive = np.random.default_rng(1).choice(values, size=(20000, len(values))).mean(1)
    assert fast.shape == (20000,)
    assert fast.mean() == pytest.approx(values.mean(), abs=0.03)
    assert fast.std() == pytest.approx(naive.std(), rel=0.03)  # sd of the mean, ~ sigma/sqrt(n)
    assert fast.std() == pytest.approx(values.std() / np.sqrt(len(values)), rel=0.03)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="finite"):
        score_board([("a", "r", float("nan"))])
    with pytest.raises(ValueError, match="rounds"):
        score_board([("a", "r", 1)], rounds=-1)
    assert score_board([]) == []


def test_ci_is_the_percentile_interval_of_the_seeded_item_resamples():
    """The CI exactly: models in sorted order draw from one ``default_rng(seed)``, each round a
    multinomial over the model's distinct item means; the 2.5 and 97.5 percentiles of the
    round means. The defaults are 1000 rounds and seed 0."""
    rows = [("b", f"b{i}", i % 4) for i in range(30)] + [("a", f"a{i}", i % 7) for i in range(25)]
    rows += [("a", "a0", 6)]  # item a0 graded twice: its mean 3.0 is the resampled value
    board = {r.model: r for r in score_board(rows, rounds=300, seed=4)}
    rng = np.random.default_rng(4)
    for model in ("a", "b"):
        per_item = {}
        for m, item, grade in rows:
            if m == model:
                per_item.setdefault(item, []).append(grade)
        values = np.array([np.mean(g) for g in per_item.values()])
        distinct, counts = np.unique(values, return_counts=True)
        means = rng.multinomial(len(values), counts / len(values), size=300) @ distinct
        expected = np.percentile(means / len(values), [2.5, 97.5])
        assert (board[model].ci_low, board[model].ci_high) == pytest.approx(tuple(expected),
                                                                             abs=1e-12)
    assert score_board(rows) == score_board(rows, rounds=1000, seed=0)
    assert score_board(rows) != score_board(rows, rounds=999, seed=0)


def test_bootstrap_chunks_draw_exactly_the_rounds_asked(monkeypatch):
    """Many distinct values split the draws into chunks: every round is drawn once, the
    same draws as in one piece."""
    values = np.array([1.0, 2.0, 2.0, 3.0, 5.0])
    whole = bootstrap_means(values, 7, np.random.default_rng(2))
    monkeypatch.setattr("judging.scores._CELLS", 8)  # 4 distinct values: chunks of 2 rounds
    chunked = bootstrap_means(values, 7, np.random.default_rng(2))
    assert chunked.shape == (7,)
    assert np.array_equal(chunked, whole)
