"""Correctness tests for agreement.statistics against published or hand-computed values.

Run without Django: .venv/bin/python -m pytest tests/agreement/test_statistics.py -p no:django -q
"""

from __future__ import annotations

import json
import math
import random
import sys
from collections import Counter
from fractions import Fraction
from math import comb
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agreement import statistics as st  # noqa: E402

NAN = np.nan

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section D:
# 4 observers x 12 units, nominal-scale values 1..5, with missing values.
KRIPP_2011 = np.array([
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
])

# Fleiss (1971) as reproduced on Wikipedia: 10 subjects, 14 raters, 5 categories.
FLEISS_TABLE = np.array([
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
])


def _json_roundtrip(result) -> dict:
    """to_dict() must be strict JSON (no NaN, no numpy types)."""
    return json.loads(json.dumps(result.to_dict(), allow_nan=False))


# ---------------------------------------------------------------- Krippendorff's alpha


def _fast_alpha(data, level):
    """The exact coincidence computation every bootstrap resample (and many-valued data) uses."""
    codes, values = st._to_codes(data, level, None)
    return st._alpha_from(st._Coincidences(codes, len(values)), level, values)


@pytest.mark.parametrize("level, expected", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849),
                                             ("ratio", 0.797)])
def test_krippendorff_2011_worked_example(level, expected):
    res = st.krippendorff_alpha(KRIPP_2011, level, n_boot=0)
    assert round(res.alpha, 3) == expected
    assert round(_fast_alpha(KRIPP_2011, level), 3) == expected
    # unit 12 has a single value, so 11 pairable units holding 40 pairable values
    assert res.n_units == 11 and res.n_pairable_values == 40 and res.n_coders == 4
    assert res.ci is None


def test_krippendorff_2011_with_none_and_strings():
    as_lists = [[None if math.isnan(v) else int(v) for v in row] for row in KRIPP_2011]
    assert round(st.krippendorff_alpha(as_lists, "nominal", n_boot=0).alpha, 3) == 0.743
    names = {1: "very low", 2: "low", 3: "mid", 4: "high", 5: "very high"}
    words = [[None if v is None else names[v] for v in row] for row in as_lists]
    assert round(st.krippendorff_alpha(words, "nominal", n_boot=0).alpha, 3) == 0.743
    order = ["very low", "low", "mid", "high", "very high"]
    assert round(st.krippendorff_alpha(words, "ordinal", value_domain=order, n_boot=0).alpha, 3) == 0.815
    with pytest.raises(ValueError, match="orderable|value_domain"):
        st.krippendorff_alpha([["b", "a", {"x"}], ["a", "a", "b"]], "ordinal", n_boot=0)
    with pytest.raises(ValueError, match="numeric"):
        st.krippendorff_alpha(words, "interval", value_domain=order, n_boot=0)


def test_krippendorff_2011_binary_and_nominal_two_observers():
    # Krippendorff (2011) sections A (binary, alpha = 0.095) and C (nominal, alpha = 0.692)
    binary = [[0, 1, 0, 0, 0, 0, 0, 0, 1, 0], [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]]
    assert round(st.krippendorff_alpha(binary, n_boot=0).alpha, 3) == 0.095
    a = "a a b b d c c c e d d a".split()
    b = "b a b b b c c c e d d d".split()
    assert round(st.krippendorff_alpha([a, b], n_boot=0).alpha, 3) == 0.692


@pytest.mark.parametrize("level", st.LEVELS)
@pytest.mark.parametrize("coders, units, n_values, missing", [(2, 50, 2, 0.0), (5, 400, 5, 0.3),
                                                              (12, 300, 7, 0.7), (40, 200, 3, 0.85)])
def test_alpha_fast_path_equals_package_on_random_data(level, coders, units, n_values, missing):
    rng = np.random.default_rng(coders * 1000 + units)
    # correlated coders so alpha is far from 0 and the comparison is not trivial
    truth = rng.integers(1, n_values + 1, size=units)
    data = np.where(rng.random((coders, units)) < 0.6, truth, rng.integers(1, n_values + 1, (coders, units)))
    data = data.astype(float)
    data[rng.random(data.shape) < missing] = NAN
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert _fast_alpha(data, level) == pytest.approx(expected, abs=1e-10)
    assert st.krippendorff_alpha(data, level, n_boot=0).alpha == pytest.approx(expected, abs=1e-10)


def test_alpha_fast_path_with_many_distinct_values_matches_package():
    rng = np.random.default_rng(3)
    base = rng.normal(size=150)
    data = np.round(base + rng.normal(scale=0.5, size=(4, 150)), 1)  # ~50 distinct values
    data[rng.random(data.shape) < 0.2] = NAN
    for level in ("interval", "ordinal"):
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert _fast_alpha(data, level) == pytest.approx(expected, abs=1e-10)


@pytest.mark.parametrize("coders, n_values", [(4, 3), (40, 3), (6, 300)])
def test_alpha_is_the_same_from_float32_and_from_objects(coders, n_values):
    """Narrow inputs (float32 choice codes) and narrow codes (int8 up to 126 values, int16
    beyond) give the same point estimate and the same seeded CI, to the bit, as the int64
    codes of the object path; both the one-key and the value-count profile paths (40 coders)."""
    rng = np.random.default_rng(coders + n_values)
    truth = rng.integers(0, n_values, size=500)
    data = np.where(rng.random((coders, 500)) < 0.7, truth,
                    rng.integers(0, n_values, (coders, 500))).astype(float)
    data[rng.random(data.shape) < 0.3] = NAN
    codes = st._to_codes(data.astype(np.float32), "nominal", None)[0]
    assert codes.dtype == (np.int8 if n_values < 127 else np.int16)
    as_objects = [[None if math.isnan(v) else int(v) for v in row] for row in data]
    for level in ("nominal", "interval"):
        domain = {"value_domain": sorted({v for row in as_objects for v in row} - {None})}
        expected = st.krippendorff_alpha(np.array(as_objects, dtype=object), level, n_boot=200,
                                         seed=3, **domain)
        for narrow in (data.astype(np.float32), data):
            got = st.krippendorff_alpha(narrow, level, n_boot=200, seed=3)
            assert (got.alpha, got.ci) == (expected.alpha, expected.ci)


def test_alpha_bootstrap_ci_is_seeded_and_sensible():
    rng = np.random.default_rng(0)
    truth = rng.integers(1, 4, size=300)
    data = np.where(rng.random((3, 300)) < 0.7, truth, rng.integers(1, 4, (3, 300))).astype(float)
    r1 = st.krippendorff_alpha(data, "nominal", n_boot=500, seed=7)
    r2 = st.krippendorff_alpha(data, "nominal", n_boot=500, seed=7)
    r3 = st.krippendorff_alpha(data, "nominal", n_boot=500, seed=8)
    assert r1.ci == r2.ci
    assert r1.ci != r3.ci
    lo, hi = r1.ci
    assert lo < r1.alpha < hi
    assert 0.02 < hi - lo < 0.3  # 300 units: neither degenerate nor uninformative
    narrower = st.krippendorff_alpha(data, "nominal", n_boot=500, seed=7, confidence=0.5).ci
    assert lo < narrower[0] < narrower[1] < hi


def test_alpha_bootstrap_matches_package_on_resampled_units():
    """A bootstrap replicate must equal the package's alpha on the resampled units."""
    rng = np.random.default_rng(5)
    data = rng.integers(1, 4, size=(3, 40)).astype(float)
    data[0, :20] = data[1, :20]  # some agreement
    co = st._Coincidences(st._to_codes(data, "ordinal", None)[0], 3)
    weights = rng.multinomial(co.n_units, co.freq / co.freq.sum())
    # rebuild the same resample as explicit units: profile p repeated weights[p] times
    codes = st._to_codes(data, "ordinal", None)[0]
    units = np.sort(codes.T, axis=1)
    profile_rows = []
    for p, w in enumerate(weights):
        idx = np.nonzero(co.counts[p].toarray().ravel())[0]
        row = np.repeat(idx, co.counts[p].toarray().ravel()[idx].astype(int))
        profile_rows += [row] * int(w)
    assert len(profile_rows) == len(units)
    resampled = np.array(profile_rows, dtype=float).T + 1  # codes 0..2 -> values 1..3
    expected = krippendorff.alpha(reliability_data=resampled, level_of_measurement="ordinal")
    values = np.array([1.0, 2.0, 3.0])
    assert st._alpha_from(co, "ordinal", values, weights) == pytest.approx(expected, abs=1e-10)


def test_many_coders_profiles_come_in_np_unique_order():
    """Past ~30 coders the units are compressed from value counts instead of ``np.unique(
    axis=0)`` on the sorted rows: the same profiles, in the same order, with the same
    frequencies, so the bootstrap's seeded draws (and so its CI) do not change."""
    from agreement.statistics.reliability import _row_profiles

    rng = np.random.default_rng(11)
    for coders, units, n_values in [(40, 300, 3), (90, 2000, 2), (35, 50, 6)]:
        codes = rng.integers(0, n_values, size=(units, coders))
        codes[rng.random(codes.shape) < 0.9] = -1
        rows = np.sort(codes, axis=1)
        expected, freq = np.unique(rows, axis=0, return_counts=True)
        table, got_freq = _row_profiles(rows, n_values)
        assert np.array_equal(got_freq, freq)
        assert np.array_equal(table, np.stack([(expected == v).sum(axis=1)
                                               for v in range(n_values)], axis=1))


def test_alpha_bad_input():
    with pytest.raises(ValueError, match="unknown level"):
        st.krippendorff_alpha(KRIPP_2011, "cardinal")
    with pytest.raises(ValueError, match="2-D"):
        st.krippendorff_alpha([1, 2, 3])
    with pytest.raises(ValueError, match="at least two coders|at least 2 coders"):
        st.krippendorff_alpha([[1, 2, 3]])
    with pytest.raises(ValueError, match="two distinct values"):
        st.krippendorff_alpha([[1, 1], [1, 1]])
    with pytest.raises(ValueError, match="at least two coders"):
        st.krippendorff_alpha([[1, NAN], [NAN, 2]])
    with pytest.raises(ValueError, match="outside value_domain"):
        st.krippendorff_alpha([[1, 2], [2, 3]], "ordinal", value_domain=[1, 2])


def test_annotations_to_matrix_feeds_alpha():
    ann = {"ann1": {"i1": "A", "i2": "B", "i3": "A"}, "ann2": {"i1": "A", "i2": "B"}, "ann3": {"i3": "B"}}
    mat, coders, items = st.annotations_to_matrix(ann)
    assert coders == ["ann1", "ann2", "ann3"] and items == ["i1", "i2", "i3"]
    assert mat[2].tolist() == [None, None, "B"]
    # i1, i2 agree, i3 disagrees: o = {AA: 2, BB: 2, AB: 1, BA: 1}, n = 6, n_A = n_B = 3
    # alpha = 1 - (n-1) * 2 / (n^2 - 18) = 1 - 5 * 2 / 18
    assert st.krippendorff_alpha(mat, n_boot=0).alpha == pytest.approx(1 - 10 / 18)


# ---------------------------------------------------------------- kappas


def test_fleiss_kappa_wikipedia_example():
    res = st.fleiss_kappa_from_counts(FLEISS_TABLE)
    assert res.kappa == pytest.approx(0.210, abs=5e-4)
    assert res.observed_agreement == pytest.approx(0.378, abs=5e-4)
    assert res.expected_agreement == pytest.approx(0.213, abs=5e-4)
    # column sums 20, 28, 39, 21, 32 of 140 ratings (Wikipedia: 0.143 0.200 0.279 0.150 0.229)
    assert res.category_proportions == pytest.approx([20 / 140, 28 / 140, 39 / 140, 21 / 140, 32 / 140])
    assert (res.n_items, res.n_raters) == (10, 14)
    unanimous = st.fleiss_kappa([["a", "a"], ["a", "a"]])
    assert unanimous.kappa is None and unanimous.expected_agreement == 1.0  # chance agreement 1
    ratings = [[c for c, n in enumerate(row) for _ in range(n)] for row in FLEISS_TABLE]
    assert st.fleiss_kappa(ratings).kappa == pytest.approx(res.kappa)
    _json_roundtrip(res)


def test_fleiss_kappa_rejects_unequal_raters():
    with pytest.raises(ValueError, match="same number of raters"):
        st.fleiss_kappa([["a", "b", "a"], ["a", "b"]])
    with pytest.raises(ValueError, match="unknown label"):
        st.fleiss_kappa([["a", "b"], ["a", "c"]], categories=["a", "b"])
    with pytest.raises(ValueError, match="empty"):
        st.fleiss_kappa([])


def test_cohen_kappa_hand_computed():
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    kappa, po, pe = st.cohen_kappa(a, b)
    # po = 35/50; pe = (25/50)(30/50) + (25/50)(20/50) = 0.5; kappa = (0.7 - 0.5) / 0.5
    assert po == pytest.approx(0.7) and pe == pytest.approx(0.5) and kappa == pytest.approx(0.4)
    assert st.cohen_kappa(["x", "x"], ["x", "x"])[0] is None  # chance agreement 1: undefined


def test_pairwise_cohen_kappa_uses_shared_items_only():
    ann = {
        "w1": {1: "A", 2: "B", 3: "A", 4: "B"},
        "w2": {1: "A", 2: "B", 3: "B", 5: "A"},
        "w3": {6: "A", 7: "B"},
    }
    pairs = st.pairwise_cohen_kappa(ann)
    assert [(p.annotator_a, p.annotator_b) for p in pairs] == [("w1", "w2")]  # w3 shares nothing
    p = pairs[0]
    assert p.n_shared == 3
    # shared: (A,A),(B,B),(A,B): po = 2/3, pe = (2/3)(1/3) + (1/3)(2/3) = 4/9
    assert p.kappa == pytest.approx((2 / 3 - 4 / 9) / (1 - 4 / 9))
    assert st.pairwise_cohen_kappa(ann, min_shared=4) == []


def test_leave_one_out_agreement_excludes_ties():
    ann = {
        "a": {1: "A", 2: "A", 3: "B"},
        "b": {1: "A", 2: "B", 3: "B"},
        "c": {1: "A", 2: "A", 3: "A", 4: "B"},
    }
    loo = st.leave_one_out_agreement(ann)
    # a: item1 others AA -> agree; item2 others B,A -> tie; item3 others B,A -> tie
    assert (loo["a"].agreement.successes, loo["a"].agreement.n, loo["a"].n_excluded_ties) == (1, 1, 2)
    # b: item1 agree; item2 others AA vs B -> disagree; item3 others B,A -> tie
    assert (loo["b"].agreement.successes, loo["b"].agreement.n, loo["b"].n_excluded_ties) == (1, 2, 1)
    # c: item1 agree; item2 others A,B tie; item3 others BB vs A -> disagree; item4 alone
    assert (loo["c"].agreement.successes, loo["c"].agreement.n) == (1, 2)
    assert loo["c"].n_excluded_ties == 1 and loo["c"].n_excluded_alone == 1


def test_leave_one_out_agreement_matches_counting_by_hand_on_random_panels():
    """The array version against the definition, vote by vote: the others' labels on the item,
    their top label unique (else a tie), nobody else (alone); unlabelled votes skipped."""
    rng = random.Random(7)
    for _ in range(200):
        labels = rng.choice([["A", "B", "tie"], [1, 2, 3, 4, 5], ["only"]])
        ann = {f"w{a}": {i: rng.choice([*labels, None]) for i in range(rng.randint(1, 12))
                         if rng.random() < 0.6} for a in range(rng.randint(2, 7))}
        loo = st.leave_one_out_agreement(ann)
        assert list(loo) == list(ann)
        for a, items in ann.items():
            agree = total = ties = alone = 0
            for it, lab in items.items():
                if lab is None:
                    continue
                others = Counter(o[it] for b, o in ann.items()
                                 if b != a and o.get(it) is not None)
                ranked = others.most_common()
                if not ranked:
                    alone += 1
                elif len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
                    ties += 1
                else:
                    total += 1
                    agree += ranked[0][0] == lab
            got = loo[a]
            assert (got.agreement.successes, got.agreement.n, got.n_excluded_ties,
                    got.n_excluded_alone) == (agree, total, ties, alone), (ann, a)


# ---------------------------------------------------------------- proportions and tests


def test_wilson_interval_hand_computed():
    k, n, z = 8, 10, stats.norm.ppf(0.975)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    res = st.proportion_ci(k, n)
    assert res.estimate == 0.8
    assert res.wilson == pytest.approx((centre - half, centre + half), abs=1e-9)
    assert res.wilson == pytest.approx((0.4902, 0.9433), abs=1e-4)


@pytest.mark.parametrize("k, n, conf", [(0, 10, 0.95), (3, 10, 0.95), (10, 10, 0.9), (93, 336, 0.99)])
def test_clopper_pearson_against_beta_quantiles(k, n, conf):
    a = 1 - conf
    lo = stats.beta.ppf(a / 2, k, n - k + 1) if k > 0 else 0.0
    hi = stats.beta.ppf(1 - a / 2, k + 1, n - k) if k < n else 1.0
    assert st.proportion_ci(k, n, conf).clopper_pearson == pytest.approx((lo, hi), abs=1e-9)


def test_proportion_ci_equals_binomtest_on_a_grid():
    """The closed forms give scipy's binomtest intervals: Wilson to the bit, Clopper-Pearson
    within brentq's own tolerance (its root search stops at ~1e-12)."""
    for n in [*range(1, 41), 100, 336, 1000, 80_000]:
        for k in sorted({0, 1, 2, n // 3, n // 2, n - 1, n} & set(range(n + 1))):
            for conf in (0.9, 0.95, 0.99):
                res, ref = st.proportion_ci(k, n, conf), stats.binomtest(k, n)
                wilson = ref.proportion_ci(conf, method="wilson")
                exact = ref.proportion_ci(conf, method="exact")
                assert res.wilson == (wilson.low, wilson.high), (k, n, conf)
                assert res.clopper_pearson == pytest.approx((exact.low, exact.high),
                                                            abs=1e-11), (k, n, conf)


def test_proportion_ci_edge_cases():
    empty = st.proportion_ci(0, 0)
    assert empty.estimate is None and empty.wilson is None
    assert _json_roundtrip(empty)["clopper_pearson"] is None
    with pytest.raises(ValueError):
        st.proportion_ci(5, 3)


def test_mcnemar_exact_hand_computed():
    # only_a = 2, only_b = 8: p = 2 * P(X <= 2), X ~ Bin(10, 1/2) = 2 * (1 + 10 + 45) / 1024
    a = [True] * 5 + [True] * 2 + [False] * 8 + [False] * 3
    b = [True] * 5 + [False] * 2 + [True] * 8 + [False] * 3
    res = st.mcnemar_exact(a, b)
    assert (res.both_correct, res.only_a_correct, res.only_b_correct, res.both_wrong) == (5, 2, 8, 3)
    expected = 2 * sum(Fraction(comb(10, i), 2 ** 10) for i in range(3))
    assert res.p_value == pytest.approx(float(expected), rel=1e-12)
    assert res.p_value == pytest.approx(0.109375)
    assert st.mcnemar_exact([True, False], [True, False]).p_value == 1.0


def test_compare_judges_on_majority():
    votes = [["A"] * 3, ["B"] * 3, ["A", "A", "B"], ["B", "B", "A"]]
    res = st.compare_judges(votes, ["A", "B", "A", "B"], ["B", "A", "A", "B"])
    assert (res.only_a_correct, res.only_b_correct, res.both_correct) == (2, 0, 2)
    assert res.p_value == pytest.approx(0.5)  # 2 * (1/2)^2
    # both judges tie on the same item -> resolved identically -> concordant
    both_tie = st.compare_judges(votes, ["tie", "B", "A", "B"], ["tie", "B", "A", "B"], seed=3)
    assert both_tie.only_a_correct == both_tie.only_b_correct == 0
    excl = st.compare_judges(votes, ["tie", "B", "A", "B"], ["A", "B", "A", "B"], exclude_ties=True)
    assert excl.n_items == 3


# ---------------------------------------------------------------- accuracy vs majority

HAND_VOTES = [
    list("AAAAA"),  # 5/5 A, judge A -> right
    list("BBBBB"),  # 5/5 B, judge A -> wrong
    list("AAAAB"),  # 4/5 A, judge A -> right
    list("ABBBB"),  # 4/5 B, judge B -> right
    list("AABBB"),  # 3/5 B, judge tie
    list("AAABB"),  # 3/5 A, judge B -> wrong
    list("AABB"),   # 2/4: no majority, excluded
]
HAND_JUDGE = ["A", "A", "A", "B", "tie", "B", "A"]


def test_accuracy_by_agreement_level_hand_built():
    res = st.accuracy_vs_majority(HAND_VOTES, HAND_JUDGE, seed=0)
    assert list(res.by_level) == ["5/5", "4/5", "3/5"]
    assert res.n_items == 6 and res.n_no_majority == 1 and res.n_judge_ties == 1
    lv = res.by_level
    assert (lv["5/5"].tie_broken.successes, lv["5/5"].tie_broken.n) == (1, 2)
    assert (lv["4/5"].tie_broken.successes, lv["4/5"].tie_broken.n) == (2, 2)
    assert (lv["3/5"].ties_excluded.successes, lv["3/5"].ties_excluded.n) == (0, 1)
    assert (res.overall_ties_excluded.successes, res.overall_ties_excluded.n) == (3, 5)
    # tie broken at random: the tied item (majority B) is right iff the draw picks B
    tie_right = int(np.random.default_rng(0).integers(2, size=7)[4] == 1)
    assert res.overall.successes == 3 + tie_right and res.overall.n == 6
    assert lv["3/5"].tie_broken.successes == tie_right
    assert _json_roundtrip(res)["by_level"]["4/5"]["tie_broken"]["estimate"] == 1.0


def test_accuracy_numpy_input_matches_lists():
    rng = np.random.default_rng(2)
    votes = np.where(rng.random((500, 5)) < 0.6, "A", "B")
    judge = rng.choice(["A", "B", "tie"], 500)
    from_np = st.accuracy_vs_majority(votes, judge, seed=4).to_dict()
    from_lists = st.accuracy_vs_majority(votes.tolist(), judge.tolist(), seed=4).to_dict()
    assert from_np == from_lists
    assert sum(v["n_items"] for v in from_np["by_level"].values()) == 500


def test_a_majority_counted_once_serves_every_subset():
    """A report counts the majority of every item once and hands each judge (and each pair
    of judges) its items' part: the results equal counting from those items' votes."""
    rng = np.random.default_rng(9)
    votes = [list(v) for v in np.where(rng.random((300, 5)) < 0.55, "A", "B")]
    majority = st.human_majority(votes)
    idx = sorted(rng.choice(300, 120, replace=False).tolist())
    judge_a = rng.choice(["A", "B", "tie"], 120).tolist()
    judge_b = rng.choice(["A", "B", "tie"], 120).tolist()
    subset = [votes[i] for i in idx]
    assert (st.accuracy_vs_majority(majority.take(idx), judge_a, seed=2).to_dict()
            == st.accuracy_vs_majority(subset, judge_a, seed=2).to_dict())
    assert (st.compare_judges(majority.take(idx), judge_a, judge_b, seed=2).to_dict()
            == st.compare_judges(subset, judge_a, judge_b, seed=2).to_dict())
    with pytest.raises(ValueError, match="same length"):
        st.accuracy_vs_majority(majority.take(idx[:-1]), judge_a)
    with pytest.raises(ValueError, match="majority over labels"):
        st.accuracy_vs_majority(majority.take(idx), judge_a, labels=("A", "B", "C"))


def test_tie_breaking_reproducible_by_seed():
    rng = np.random.default_rng(1)
    votes = [list(v) for v in np.where(rng.random((400, 5)) < 0.5, "A", "B")]
    judge = ["tie"] * 200 + list(rng.choice(["A", "B"], 200))
    runs = {s: st.accuracy_vs_majority(votes, judge, seed=s) for s in range(5)}
    again = st.accuracy_vs_majority(votes, judge, seed=3)
    assert again.to_dict() == runs[3].to_dict()
    assert len({r.overall.successes for r in runs.values()}) > 1  # seed matters with 200 ties
    assert len({r.overall_ties_excluded.successes for r in runs.values()}) == 1  # ... but not here


def test_accuracy_bad_input():
    with pytest.raises(ValueError, match="same length"):
        st.accuracy_vs_majority(HAND_VOTES, HAND_JUDGE[:-1])
    with pytest.raises(ValueError, match="unknown judge label 'C'"):
        st.accuracy_vs_majority([["A"]], ["C"])
    with pytest.raises(ValueError, match="unknown human vote 'tie' for item 1"):
        st.accuracy_vs_majority([["A"], ["A", "tie"]], ["A", "A"])
    with pytest.raises(ValueError, match="None"):
        st.accuracy_vs_majority([["A"]], [None])
    with pytest.raises(ValueError, match="empty"):
        st.accuracy_vs_majority([], [])
    with pytest.raises(ValueError, match="no human votes"):
        st.accuracy_vs_majority([["A"], []], ["A", "B"])


def test_majority_labels():
    assert st.majority_labels(HAND_VOTES) == ["A", "B", "A", "B", "B", "A", None]
    assert st.majority_labels([[1, 1, 2]], labels=(1, 2, 3)) == [1]


# ---------------------------------------------------------------- agreement matrix


def test_agreement_matrix_hand_computed():
    res = st.agreement_matrix({
        "human": ["A", "B", "A", None, "B"],
        "j1": ["A", "B", "B", "A", "B"],
        "j2": ["B", None, "B", "A", "A"],
    })
    assert res.sources == ["human", "j1", "j2"]
    assert res.get("human", "j1") == pytest.approx(3 / 4) and res.counts[0][1] == 4
    assert res.get("human", "j2") == 0.0 and res.counts[0][2] == 3
    assert res.get("j1", "j2") == pytest.approx(2 / 4) and res.counts[1][2] == 4
    assert res.get("j2", "j1") == res.get("j1", "j2")
    assert res.matrix[0][0] == 1.0 and res.counts[0][0] == 4
    by_id = st.agreement_matrix({"x": {"i1": "A", "i2": "B"}, "y": {"i2": "B", "i3": "A"}})
    assert by_id.get("x", "y") == 1.0 and by_id.counts[0][1] == 1
    disjoint = st.agreement_matrix({"x": {"i1": "A"}, "y": {"i2": "A"}})
    assert disjoint.get("x", "y") is None and disjoint.counts[0][1] == 0
    with pytest.raises(ValueError, match="same length"):
        st.agreement_matrix({"x": ["A"], "y": ["A", "B"]})
    with pytest.raises(ValueError, match="two sources"):
        st.agreement_matrix({"x": ["A"]})


def test_agreement_matrix_of_string_labels_counts_like_comparing_each_pair():
    """Strings are compared as codes, all at once; other labels one pair at a time, as
    before: both count exactly what comparing the labels of each item counts."""
    rng = np.random.default_rng(3)
    names = ["A", "B", "tie", None]
    columns = {f"s{i}": [names[j] for j in rng.integers(0, 4, 500)] for i in range(4)}
    mixed = {**columns, "numbers": [None if j == 3 else j for j in rng.integers(0, 4, 500)]}
    for labels in (columns, mixed):
        res = st.agreement_matrix(labels)
        cols = list(labels.values())
        for i, x in enumerate(cols):
            for j, y in enumerate(cols):
                both = [(p, q) for p, q in zip(x, y, strict=True)
                        if p is not None and q is not None]
                assert res.counts[i][j] == len(both)
                assert res.matrix[i][j] == sum(p == q for p, q in both) / len(both)


# ---------------------------------------------------------------- correlations


def test_score_correlation_matches_scipy():
    rng = np.random.default_rng(0)
    human = rng.integers(1, 6, 60).astype(float)
    judge = np.clip(human + rng.integers(-1, 2, 60), 1, 5)
    res = st.score_correlation(list(human) + [None], list(judge) + [3.0])
    assert res.n == 60
    pr, kt, sr = stats.pearsonr(human, judge), stats.kendalltau(human, judge), stats.spearmanr(human, judge)
    assert (res.pearson, res.pearson_p) == pytest.approx((pr.statistic, pr.pvalue))
    assert (res.kendall_tau, res.kendall_p) == pytest.approx((kt.statistic, kt.pvalue))
    assert (res.spearman, res.spearman_p) == pytest.approx((sr.statistic, sr.pvalue))
    assert res.pearson > 0.5
    constant = st.score_correlation([1, 2, 3], [2, 2, 2])
    assert constant.pearson is None and _json_roundtrip(constant)["spearman"] is None
    with pytest.raises(ValueError, match="same length"):
        st.score_correlation([1, 2], [1])
    with pytest.raises(ValueError, match="at least 2"):
        st.score_correlation([1, None], [1, 2])


def test_system_correlation_common_models():
    human = {"m1": 0.9, "m2": 0.5, "m3": 0.7, "m4": 0.1, "only_h": 0.3}
    judge = {"m1": 0.8, "m2": 0.6, "m3": 0.4, "m4": 0.2, "only_j": 1.0}
    res = st.system_correlation(human, judge)
    assert res.models == ["m1", "m2", "m3", "m4"] and res.n == 4
    x, y = [0.9, 0.5, 0.7, 0.1], [0.8, 0.6, 0.4, 0.2]
    assert res.spearman == pytest.approx(stats.spearmanr(x, y).statistic)  # = 0.8
    assert res.spearman == pytest.approx(0.8)
    assert res.kendall_tau == pytest.approx(stats.kendalltau(x, y).statistic)  # = 4/6
    assert res.kendall_p == pytest.approx(stats.kendalltau(x, y).pvalue)
    with pytest.raises(ValueError, match="2 models in common"):
        st.system_correlation({"a": 1}, {"a": 2, "b": 3})


# ---------------------------------------------------------------- biases


def test_position_bias_and_consistency():
    first = ["A", "A", "A", "B", "tie"]
    # swapped order, positional labels: pair0 consistent (B = original A), pair1 flips to
    # the first slot again (A -> inconsistent), pair2 consistent, pair3 consistent, tie-tie consistent
    swapped = ["B", "A", "B", "A", "tie"]
    res = st.position_bias(first, swapped)
    assert res.n_pairs == 5 and res.n_verdicts == 10 and res.n_ties == 2
    assert (res.first_rate.successes, res.first_rate.n) == (5, 8)  # A chosen 4 + 1 times of 8
    assert res.first_rate_p == pytest.approx(stats.binomtest(5, 8).pvalue)
    assert (res.consistency.successes, res.consistency.n) == (4, 5)
    alone = st.position_bias(["A", "A", "A", "A"])
    assert alone.consistency is None and alone.first_rate_p == pytest.approx(0.125)
    with pytest.raises(ValueError, match="same length"):
        st.position_bias(["A"], ["A", "B"])


def test_length_bias_bins_hand_built():
    len_a = [10, 50, 100, 20, 30, 40]
    len_b = [12, 40, 10, 20, 130, 45]
    verdicts = ["B", "A", "B", "A", "tie", "A"]
    # diffs 2, 10, 90, 0(equal), 100, 5; longer = B, A, A, -, B, B
    # longer wins: yes, yes, no, -, (tie), no
    res = st.length_bias(len_a, len_b, verdicts, bins=[0, 8, 50, 200])
    assert res.n_equal_length == 1 and res.n_ties == 1 and res.n_out_of_range == 0
    assert (res.overall.successes, res.overall.n) == (2, 4)
    assert [(b.n_items, b.longer_wins.successes, b.longer_wins.n) for b in res.bins] == [
        (2, 1, 2), (1, 1, 1), (2, 0, 1)]
    assert len(st.length_bias(len_a, len_b, verdicts, bins=2).bins) == 2
    with pytest.raises(ValueError, match="increasing"):
        st.length_bias(len_a, len_b, verdicts, bins=[5, 1])


def test_lengths_by_score_for_box_plots():
    res = st.lengths_by_score([3, 1, 3, 5, None], [30, 10, 50, 80, 99])
    assert res.lengths == {1: [10.0], 3: [30.0, 50.0], 5: [80.0]}
    assert res.summary[3]["median"] == 40 and res.summary[3]["n"] == 2
    assert res.spearman == pytest.approx(stats.spearmanr([3, 1, 3, 5], [30, 10, 50, 80]).statistic)
    assert res.spearman > 0.9
    assert _json_roundtrip(res)["lengths"]["3"] == [30.0, 50.0]


def test_self_preference_hand_built():
    model_a = ["gpt-4v", "llava", "gpt-4v", "llava", "gpt-4v", "claude"]
    model_b = ["llava", "gpt-4v", "claude", "claude", "gpt-4o", "gpt-4v"]
    judge = ["A", "B", "A", "A", "A", "B"]
    human = ["A", "A", "B", "A", "B", None]
    res = st.self_preference(model_a, model_b, judge, human, family=lambda m: m.startswith("gpt-4"))
    # cross-family items 0, 1, 2 (3: no family model, 4: both family, 5: no human label)
    assert res.n_items == 3 and res.n_excluded == 3
    assert res.judge_win_rate.successes == 3 and res.human_win_rate.successes == 1
    assert res.difference == pytest.approx(2 / 3)
    assert (res.paired_test.only_a_correct, res.paired_test.only_b_correct) == (2, 0)
    same = st.self_preference(model_a, model_b, judge, human, family={"gpt-4v"})
    assert same.n_items == 4  # item 4 now counts (gpt-4o is outside the family)


def test_win_rate_gap_per_model():
    models = ["m1", "m1", "m1", "m2", "m2"]
    human = [1, 0, None, 0, 0.5]
    judge = [True, True, True, False, 1]
    res = st.win_rate_gap(models, human, judge)
    m1, m2 = res.per_model["m1"], res.per_model["m2"]
    assert (m1.n_human, m1.human_win_rate, m1.judge_win_rate) == (2, 0.5, 1.0)
    assert m1.gap == pytest.approx(0.5) and m2.gap == pytest.approx(0.5 - 0.25)
    assert res.mean_abs_gap == pytest.approx(0.375)
    assert res.system is not None and res.system.n == 2
    with pytest.raises(ValueError, match="outcome 'win'"):
        st.win_rate_gap(["m1"], ["win"], [1])


def test_all_results_are_strict_json():
    results = [
        st.accuracy_vs_majority(HAND_VOTES, HAND_JUDGE),
        st.krippendorff_alpha(KRIPP_2011, "ordinal", n_boot=50),
        st.fleiss_kappa_from_counts(FLEISS_TABLE),
        st.position_bias(["A", "B"], ["A", "B"]),
        st.agreement_matrix({"x": ["A", None], "y": ["B", None]}),
        st.system_correlation({"a": 1, "b": 2}, {"a": 1, "b": 2}),
    ]
    for r in results:
        assert isinstance(_json_roundtrip(r), dict)


def test_results_are_plain_json_values_and_bad_labels_are_named():
    """``to_dict`` turns NumPy values into plain ones (non-finite -> None), and an unknown
    label is named with its index, the labels allowed and, for None, why."""
    from agreement.statistics._common import _encode, _jsonable

    got = _jsonable({"a": np.array([1.5, np.nan]), "b": np.bool_(True), "c": np.int64(3),
                     "d": (np.float32(2.5), float("inf"))})
    assert got == {"a": [1.5, None], "b": True, "c": 3, "d": [2.5, None]}
    assert [type(v) for v in (got["b"], got["c"], got["d"][0])] == [bool, int, float]
    with pytest.raises(ValueError, match=r"label 'C' at index 2; expected one of \['A', 'B', "
                                         r"'tie'\]$"):
        _encode(["A", "tie", "C"], ("A", "B"), "tie", "judge")
    with pytest.raises(ValueError, match=r"label None at index 1; expected one of \['A', 'B'\] "
                                         r"\(None = missing is not allowed here\)"):
        _encode(["A", None], ("A", "B"), None, "judge")
    assert _encode(["B", None, "tie"], ("A", "B"), "tie", "judge",
                   allow_missing=True).tolist() == [1, -2, -1]
