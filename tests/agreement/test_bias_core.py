"""Edge cases of agreement.statistics.bias worked by hand (Django-free, `make mutation`).

Each test pins a behaviour the broader tests in test_statistics.py leave open: which
bin a difference on an edge falls in, which input an error names, what an empty
selection reports, and that ``confidence`` reaches every interval.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agreement import statistics as st  # noqa: E402

# ---------------------------------------------------------------- position bias


def test_position_bias_unswaps_first_position_verdicts():
    # pair 0: A first, B when swapped (consistent); pair 1: A both ways (inconsistent);
    # pair 2: B first, A when swapped (consistent); pair 3: tie both ways (consistent)
    res = st.position_bias(["A", "A", "B", "tie"], ["B", "A", "A", "tie"], confidence=0.8)
    assert res.n_pairs == 4 and res.n_verdicts == 8 and res.n_ties == 2
    assert (res.consistency.successes, res.consistency.n) == (3, 4)
    assert res.consistency == st.proportion_ci(3, 4, 0.8)
    assert res.first_rate == st.proportion_ci(4, 6, 0.8)
    assert res.first_rate_p == pytest.approx(stats.binomtest(4, 6, 0.5).pvalue)


def test_position_bias_all_ties_has_no_p_value():
    res = st.position_bias(["tie", "tie"])
    assert res.first_rate.n == 0 and res.first_rate_p is None and res.n_ties == 2


@pytest.mark.parametrize(
    "verdicts, swapped, named",
    [(["A", "X"], None, "unknown verdict label"), (["A"], ["X"], "unknown swapped verdict label")],
)
def test_position_bias_names_the_input_with_a_bad_label(verdicts, swapped, named):
    with pytest.raises(ValueError, match=named):
        st.position_bias(verdicts, swapped)


# ---------------------------------------------------------------- length bias


def _bins(res):
    return [(b.low, b.high, b.n_items, b.n_ties) for b in res.bins]


def test_length_bias_edges_put_a_boundary_difference_in_the_upper_bin_and_close_the_last():
    # differences 1, 2, 2, 4 (A longer in the first two, B longer in the last two), and 0
    len_a, len_b = [3, 4, 1, 0, 5], [2, 2, 3, 4, 5]
    verdicts = ["A", "tie", "A", "B", "A"]
    res = st.length_bias(len_a, len_b, verdicts, bins=[1, 2, 4], confidence=0.8)
    assert _bins(res) == [(1.0, 2.0, 1, 0), (2.0, 4.0, 3, 1)]
    # bin [1, 2): A longer, A won; bin [2, 4]: a tie, B longer and A won, B longer and B won
    assert res.bins[0].longer_wins == st.proportion_ci(1, 1, 0.8)
    assert res.bins[1].longer_wins == st.proportion_ci(1, 2, 0.8)
    assert res.overall == st.proportion_ci(2, 3, 0.8)
    assert (res.n_equal_length, res.n_ties, res.n_out_of_range) == (1, 1, 0)


def test_length_bias_counts_differences_outside_the_edges():
    res = st.length_bias([1, 10, 3, 0.5], [0, 0, 0.5, 0], ["B", "A", "A", "A"],
                         bins=[0, 0.5, 1, 2])
    assert _bins(res) == [(0.0, 0.5, 0, 0), (0.5, 1.0, 1, 0), (1.0, 2.0, 1, 0)]
    assert res.n_out_of_range == 2  # differences 10 and 2.5
    assert res.bins[2].longer_wins.successes == 0  # A was longer by 1, B won


def test_length_bias_default_is_four_quantile_bins():
    res = st.length_bias([1, 2, 3, 4, 5], [0, 0, 0, 0, 0], ["A"] * 5)
    assert [(b.low, b.high) for b in res.bins] == [(1, 2), (2, 3), (3, 4), (4, 5)]
    assert [b.n_items for b in res.bins] == [1, 1, 1, 2]


def test_length_bias_one_bin_and_two_edges_are_allowed():
    one = st.length_bias([1, 2], [0, 0], ["A", "B"], bins=1)
    assert _bins(one) == [(1.0, 2.0, 2, 0)]
    two = st.length_bias([1, 2], [0, 0], ["A", "B"], bins=[0, 5])
    assert _bins(two) == [(0.0, 5.0, 2, 0)]


def test_length_bias_with_only_equal_lengths_has_one_empty_bin():
    res = st.length_bias([2, 3], [2, 3], ["A", "tie"], bins=3)
    assert _bins(res) == [(0.0, 0.0, 0, 0)]
    assert res.n_equal_length == 2 and res.overall.n == 0 and res.n_ties == 0


def test_length_bias_rejects_bad_lengths_and_edges():
    ok_a, ok_b, verdicts = [0, 0.5], [0.25, 0], ["A", "B"]
    assert st.length_bias(ok_a, ok_b, verdicts, bins=[0, 0.3, 0.6]).overall.n == 2
    for a, b in (([-1, 1], [1, 1]), ([1, 1], [1, -1]), ([float("nan"), 1], [1, 1]),
                 ([1, 1], [1, float("nan")]), ([None, 1], [1, 1]), ([1, 1], [1, None])):
        with pytest.raises(ValueError, match="non-negative numbers"):
            st.length_bias(a, b, verdicts)
    for edges in ([0, 5, 5], [0], [3, 1]):
        with pytest.raises(ValueError, match="strictly increasing"):
            st.length_bias(ok_a, ok_b, verdicts, bins=edges)
    with pytest.raises(ValueError, match="bins must be >= 1"):
        st.length_bias(ok_a, ok_b, verdicts, bins=0)
    with pytest.raises(ValueError, match="unknown verdict label"):
        st.length_bias(ok_a, ok_b, ["A", "C"])
    for a, b, v in (([1], [1, 2], ["A", "B"]), ([1, 2], [1], ["A", "B"]), ([1, 2], [1, 2], ["A"])):
        with pytest.raises(ValueError, match="'len_a'.*'len_b'.*'verdicts'"):
            st.length_bias(a, b, v)


# ---------------------------------------------------------------- lengths by score


def test_lengths_by_score_summaries_are_the_five_numbers_and_mean():
    scores, lengths = [2, None, 1, 1, 2, 1, 2, 1], [10, 99, 4, 1, 30, 3, None, 2]
    res = st.lengths_by_score(scores, lengths)
    assert res.lengths == {1: [4.0, 1.0, 3.0, 2.0], 2: [10.0, 30.0]}
    assert res.summary[1] == {"n": 4, "min": 1.0, "q1": 1.75, "median": 2.5, "q3": 3.25,
                              "max": 4.0, "mean": 2.5}
    assert res.summary[2] == {"n": 2, "min": 10.0, "q1": 15.0, "median": 20.0, "q3": 25.0,
                              "max": 30.0, "mean": 20.0}
    sr = stats.spearmanr([2, 1, 1, 2, 1, 1], [10, 4, 1, 30, 3, 2])
    assert (res.spearman, res.spearman_p) == pytest.approx((sr.statistic, sr.pvalue))


def test_lengths_by_score_correlates_two_pairs_and_skips_text_scores():
    two = st.lengths_by_score([1, 2], [5, 9])
    assert two.spearman == pytest.approx(1.0) and two.spearman_p is None  # p undefined at n=2
    text = st.lengths_by_score(["good", "bad", "good"], [3, 1, 5])
    assert text.lengths == {"bad": [1.0], "good": [3.0, 5.0]}
    assert text.spearman is None and text.spearman_p is None


def test_lengths_by_score_names_both_inputs_on_a_length_mismatch():
    for scores, lengths in (([1, 2], [1]), ([1], [1, 2])):
        with pytest.raises(ValueError, match="'scores'.*'lengths'"):
            st.lengths_by_score(scores, lengths)


# ---------------------------------------------------------------- self-preference

FAMILY_ROWS = dict(
    model_a=["gpt-4", "llava", "gpt-4", "claude", "gpt-4", "llava"],
    model_b=["llava", "gpt-4", "claude", "gpt-4o", "gpt-4", "qwen"],
    judge_verdicts=["A", "B", "A", "tie", "A", None],
    human_verdicts=["A", "A", None, "B", "B", "tie"],
)


def test_self_preference_with_a_name_set_and_ties_and_missing_verdicts():
    # Eligible (one side in {"gpt-4"}, both decisive): rows 0 and 1. Row 2: human missing;
    # row 3: judge tie; row 4: both sides gpt-4; row 5: neither side, judge missing.
    res = st.self_preference(**FAMILY_ROWS, family={"gpt-4"}, confidence=0.8)
    assert res.n_items == 2 and res.n_excluded == 4
    assert res.judge_win_rate == st.proportion_ci(2, 2, 0.8)  # gpt-4 won both per the judge
    assert res.human_win_rate == st.proportion_ci(1, 2, 0.8)  # and one per the humans
    assert res.difference == pytest.approx(0.5)
    t = res.paired_test
    assert (t.n_items, t.both_correct, t.only_a_correct, t.only_b_correct) == (2, 1, 1, 0)


def test_self_preference_with_no_eligible_item_has_no_difference():
    res = st.self_preference(**FAMILY_ROWS, family={"mistral"})
    assert res.n_items == 0 and res.n_excluded == 6
    assert res.difference is None and res.paired_test is None


def test_self_preference_names_the_odd_input():
    for key, bad in (("judge_verdicts", "X"), ("human_verdicts", "X")):
        rows = {**FAMILY_ROWS, key: ["A"] * 5 + [bad]}
        with pytest.raises(ValueError, match=f"unknown {key.split('_')[0]} label 'X'"):
            st.self_preference(**rows, family={"gpt-4"})
    for key in FAMILY_ROWS:
        rows = {**FAMILY_ROWS, key: FAMILY_ROWS[key][:-1]}
        with pytest.raises(ValueError, match="'model_a'.*'model_b'.*'judge_verdicts'.*'human_"):
            st.self_preference(**rows, family={"gpt-4"})


# ---------------------------------------------------------------- win-rate gap


def test_win_rate_gap_with_one_side_missing_has_no_gap():
    res = st.win_rate_gap(["m1", "m1", "m2"], [1, 0.5, None], [None, None, True])
    m1, m2 = res.per_model["m1"], res.per_model["m2"]
    assert (m1.n_human, m1.human_win_rate, m1.n_judge, m1.judge_win_rate, m1.gap) == (
        2, 0.75, 0, None, None)
    assert (m2.n_human, m2.human_win_rate, m2.n_judge, m2.judge_win_rate, m2.gap) == (
        0, None, 1, 1.0, None)
    assert res.mean_abs_gap is None and res.system is None


def test_win_rate_gap_of_one_model_has_no_system_correlation():
    res = st.win_rate_gap(["m1", "m1"], [1, 0], [1, 1])
    assert res.per_model["m1"].gap == pytest.approx(0.5) and res.mean_abs_gap == pytest.approx(0.5)
    assert res.system is None


def test_win_rate_gap_names_the_odd_input():
    with pytest.raises(ValueError, match="human outcome 2 at index 1"):
        st.win_rate_gap(["m", "m"], [1, 2], [1, 1])
    with pytest.raises(ValueError, match="judge outcome 'won' at index 0"):
        st.win_rate_gap(["m", "m"], [1, 1], ["won", 1])
    for m, h, j in ((["m"], [1, 1], [1, 1]), (["m", "m"], [1], [1, 1]), (["m", "m"], [1, 1], [1])):
        with pytest.raises(ValueError, match="'models'.*'human_outcomes'.*'judge_outcomes'"):
            st.win_rate_gap(m, h, j)


def test_position_bias_swapped_a_counts_as_b_first():
    # every pair says the same response both ways: B first = A when swapped, and so on
    res = st.position_bias(["A", "B", "B"], ["B", "A", "A"])
    assert (res.consistency.successes, res.consistency.n) == (3, 3)


def test_length_bias_shorter_a_winning_is_a_loss_for_the_longer():
    assert st.length_bias([1], [3], ["A"], bins=1).overall.successes == 0
    assert st.length_bias([1], [3], ["B"], bins=1).overall.successes == 1
