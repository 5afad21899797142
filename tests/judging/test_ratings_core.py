"""Edge cases of judging.ratings that test_ratings.py leaves open (Django-free, part of
`make mutation`): the counts entry point of the bootstrap, model order for non-text names,
``times`` checks, warnings' text, and the leaderboard's CI."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from judging import ratings as R  # noqa: E402

ROWS = [("a", "b", "A")] * 5 + [("b", "a", "A")] * 3 + [("a", "c", "tie")] * 2 + [
    ("c", "b", "A")] * 4 + [("b", "c", "A")] * 2 + [("c", "a", "B")] * 3 + [("a", "c", "B")]


def test_bootstrap_from_counts_is_the_bootstrap_of_the_rows():
    models, wins, ties = R.pair_counts(ROWS)
    for kw in ({}, {"anchor": "b", "ridge": 0.5}):
        exp_models, exp_point, exp_samples = R.bootstrap_bradley_terry(ROWS, 30, 5, **kw)
        got_models, point, samples = R.bootstrap_bradley_terry_from_counts(
            list(models), wins, ties, 30, 5, **kw)
        assert got_models == exp_models == ("a", "b", "c")
        assert np.array_equal(point, exp_point) and np.array_equal(samples, exp_samples)
    # an anchored model sits at INIT in the point fit and in every round
    _, point, samples = R.bootstrap_bradley_terry_from_counts(models, wins, ties, 20,
                                                              anchor="c")
    assert point[2] == pytest.approx(R.INIT) and np.allclose(samples[:, 2], R.INIT)
    assert samples.shape == (20, 3)
    # the ridge is passed on: a strong ridge pulls every rating towards the centre
    _, shrunk, _ = R.bootstrap_bradley_terry_from_counts(models, wins, ties, 0, ridge=50.0)
    assert np.ptp(shrunk) < np.ptp(point) / 2
    # and so is the seed
    _, _, other = R.bootstrap_bradley_terry_from_counts(models, wins, ties, 20, seed=1,
                                                        anchor="c")
    _, _, seed0 = R.bootstrap_bradley_terry_from_counts(models, wins, ties, 20, anchor="c")
    assert not np.array_equal(other, seed0)


def test_models_are_ordered_by_their_text_even_when_they_are_numbers():
    rows = [(10, 9, "A"), (9, 10, "tie"), (10, "x", "B")]
    assert R.encode(rows).models == (10, 9, "x")  # "10" < "9" < "x"
    assert list(R.online_elo(rows)) == [10, 9, "x"]
    assert R.pair_counts(rows)[0] == (10, 9, "x")


def test_pair_counts_errors_name_the_row_not_the_distinct_triple():
    rows = [("a", "b", "A"), ("a", "b", "A"), ("a", "a", "A")]
    with pytest.raises(ValueError, match="judgment #2 compares 'a' with itself"):
        R.pair_counts(rows)


def test_pair_counts_times_checks():
    rows = [("a", "b", "A"), ("b", "a", "tie")]
    models, wins, ties = R.pair_counts(rows, times=[0, 3])  # a row that occurred 0 times
    assert wins.tolist() == [[0, 0], [0, 0]] and ties.tolist() == [[0, 3], [3, 0]]
    for times in ([1], [1, -1]):
        with pytest.raises(ValueError, match="one non-negative count per judgment"):
            R.pair_counts(rows, times=times)
    assert R.win_rates_vs(rows, "b", times=[2, 1]) == {"a": (pytest.approx(2.5 / 3), 3)}


def test_win_rate_against_the_reference_after_one_match():
    assert R.win_rates_vs([("a", "ref", "A")], "ref") == {"a": (1.0, 1)}


def test_bradley_terry_without_matches_rates_everyone_at_init():
    assert R.bradley_terry_from_counts(np.zeros((2, 2))).tolist() == [R.INIT, R.INIT]


def test_square_wins_are_required_even_in_the_second_dimension():
    with pytest.raises(ValueError, match="square matrix"):
        R.bradley_terry_from_counts(np.ones((2, 3)))
    with pytest.raises(ValueError, match="square matrix"):
        R.bradley_terry_from_counts(np.ones(4))


def _caught(call):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        call()
    return [w for w in seen if issubclass(w.category, R.RatingsWarning)]


def test_identifiability_warnings_say_why():
    split = [("a", "b", "A"), ("b", "a", "A"), ("c", "d", "A"), ("d", "c", "A")]
    (w,) = _caught(lambda: R.bradley_terry(split))
    assert str(w.message) == ("comparison graph has 2 disconnected components; each is centred "
                              "on its own and ratings across components are not comparable")
    # every model won and lost, but nobody in {c, d} ever beat a or b
    chain = [("a", "b", "A"), ("b", "a", "A"), ("c", "d", "A"), ("d", "c", "A"),
             ("a", "c", "A")]
    (w,) = _caught(lambda: R.bradley_terry(chain))
    assert str(w.message) == ("some models never lost (or never won) against the rest; "
                              "their rating gaps are set by the ridge and are unreliable")
    (w,) = _caught(lambda: R.leaderboard([("a", "b", "A")], bootstrap_rounds=0))
    assert "e.g. never lost / never won: ['a', 'b']" in str(w.message)


def test_a_tie_is_enough_to_connect_two_models():
    assert _caught(lambda: R.bradley_terry([("a", "b", "A"), ("a", "b", "tie")])) == []


def test_leaderboard_ci_is_the_2_5_and_97_5_percentile_of_the_seeded_bootstrap():
    models, point, samples = R.bootstrap_bradley_terry(ROWS, 40, seed=3, anchor="a")
    rows = {r.model: r for r in R.leaderboard(ROWS, bootstrap_rounds=40, seed=3, anchor="a")}
    lo, hi = np.percentile(samples, 2.5, axis=0), np.percentile(samples, 97.5, axis=0)
    for i, m in enumerate(models):
        assert rows[m].bt_rating == point[i]
        assert (rows[m].ci_low, rows[m].ci_high) == (lo[i], hi[i])
    assert rows["a"].bt_rating == pytest.approx(R.INIT)


def test_any_iterable_of_rows_is_accepted():
    assert R.encode(iter(ROWS)).models == ("a", "b", "c")
    assert R.pair_counts(iter(ROWS))[1].sum() == R.pair_counts(ROWS)[1].sum() == 18
    assert R.online_elo(iter(ROWS)) == R.online_elo(ROWS)


def test_pair_counts_with_times_stay_integer_counts():
    _, wins, ties = R.pair_counts([("a", "b", "A"), ("a", "b", "tie")], times=[2, 1])
    assert wins.dtype.kind == ties.dtype.kind == "i"
    assert wins.tolist() == [[0, 2], [0, 0]] and ties.tolist() == [[0, 1], [1, 0]]


def test_bradley_terry_passes_the_ridge_on():
    loose, tight = R.bradley_terry(ROWS), R.bradley_terry(ROWS, ridge=50.0)
    assert np.ptp(list(tight.values())) < np.ptp(list(loose.values())) / 2


def test_a_fit_stopped_early_warns_and_returns_its_last_step():
    w = np.array([[[0.0, 3.0], [1.0, 0.0]]])
    with pytest.warns(R.RatingsWarning, match="^Bradley-Terry fit did not converge$"):
        beta = R._fit_bt(w, R.RIDGE, max_iter=1)
    assert np.isfinite(beta).all() and beta[0, 0] > beta[0, 1]


def test_bootstrap_defaults_are_1000_rounds_from_seed_0():
    _, _, samples = R.bootstrap_bradley_terry(ROWS)
    assert np.array_equal(samples, R.bootstrap_bradley_terry(ROWS, 1000, 0)[2])
    models, wins, ties = R.pair_counts(ROWS)
    _, _, from_counts = R.bootstrap_bradley_terry_from_counts(models, wins, ties)
    assert np.array_equal(from_counts, samples)
    board = R.leaderboard(ROWS)
    assert board == R.leaderboard(ROWS, bootstrap_rounds=1000, seed=0)
    assert board != R.leaderboard(ROWS, bootstrap_rounds=1000, seed=1)


def test_unknown_anchor_and_reference_are_named_as_such():
    with pytest.raises(ValueError, match="^anchor model 'zz' does not appear"):
        R.bradley_terry(ROWS, anchor="zz")
    with pytest.raises(ValueError, match="^reference model 'zz' does not appear"):
        R.win_rates_vs(ROWS, "zz")
