"""Reliability from vote counts alone (anonymous raters) and bootstrap CIs of every kappa.

Expected values are computed here from the textbook formulas (Fleiss 1971; Cohen 1960) or
by the ``krippendorff`` package, independently of ``agreement.statistics``.
"""
import json

import krippendorff
import numpy as np
import pytest

from agreement import statistics as st


def _fleiss_by_hand(table) -> float:
    """Fleiss' kappa, straight from the definition, one item at a time."""
    rows = [list(map(int, r)) for r in table]
    n = sum(rows[0])
    total = len(rows) * n
    p_j = [sum(r[j] for r in rows) / total for j in range(len(rows[0]))]
    p_i = [(sum(c * c for c in r) - n) / (n * (n - 1)) for r in rows]
    p_bar = sum(p_i) / len(p_i)
    p_e = sum(p * p for p in p_j)
    return (p_bar - p_e) / (1 - p_e)


def _cohen_by_hand(a, b) -> float:
    n = len(a)
    po = sum(x == y for x, y in zip(a, b, strict=True)) / n
    labels = set(a) | set(b)
    pe = sum(a.count(c) * b.count(c) for c in labels) / (n * n)
    return (po - pe) / (1 - pe)


def _anonymous_study(seed=1, items=60):
    """Items x (A, B, tie) counts of 5 anonymous votes each, with real agreement."""
    rng = np.random.default_rng(seed)
    lean = rng.choice([0.9, 0.5, 0.1], size=items)
    out = []
    for p in lean:
        a = rng.binomial(5, p)
        tie = int(rng.random() < 0.15)
        out.append([a - tie if a >= tie else a, 5 - a - (tie if a < tie else 0), tie])
    table = np.array(out)
    assert (table.sum(axis=1) == 5).all() and (table >= 0).all()
    return table


def test_five_anonymous_votes_per_item_fleiss_and_alpha():
    table = _anonymous_study()
    fleiss = st.fleiss_kappa_from_counts(table, ["A", "B", "tie"], n_boot=0)
    assert fleiss.kappa == pytest.approx(_fleiss_by_hand(table), abs=1e-12)
    assert (fleiss.n_items, fleiss.n_raters, fleiss.n_items_excluded) == (60, 5, 0)
    alpha = st.krippendorff_alpha_from_counts(table, "nominal", n_boot=0)
    assert alpha.alpha == pytest.approx(
        krippendorff.alpha(value_counts=table, level_of_measurement="nominal"), abs=1e-12)
    assert alpha.n_coders is None and alpha.n_units == 60 and alpha.n_pairable_values == 300


def test_alpha_from_counts_by_hand_with_unequal_votes():
    """Coincidence formula by hand: alpha = 1 - (n - 1) D_o / D_e with
    D_o = sum_u (m_u^2 - sum_c n_uc^2) / (m_u - 1), D_e = n^2 - sum_c n_c^2."""
    table = np.array([[3, 0], [2, 1], [1, 1], [0, 4], [1, 0], [2, 2], [0, 0]])
    pairable = [r for r in table.tolist() if sum(r) >= 2]
    n = sum(map(sum, pairable))
    d_o = sum((sum(r) ** 2 - sum(c * c for c in r)) / (sum(r) - 1) for r in pairable)
    n_c = [sum(r[j] for r in pairable) for j in range(2)]
    d_e = n * n - sum(c * c for c in n_c)
    expected = 1 - (n - 1) * d_o / d_e
    res = st.krippendorff_alpha_from_counts(table, n_boot=0)
    assert res.alpha == pytest.approx(expected, abs=1e-12)
    assert res.alpha == pytest.approx(krippendorff.alpha(value_counts=table,
                                                         level_of_measurement="nominal"))
    assert res.n_units == 5  # the 1-vote and the 0-vote units are not pairable


def test_alpha_from_counts_equals_alpha_from_coders_at_every_level():
    rng = np.random.default_rng(4)
    data = rng.integers(1, 5, size=(4, 80)).astype(float)
    data[rng.random(data.shape) < 0.3] = np.nan
    table = np.stack([(data == v).sum(axis=0) for v in (1, 2, 3, 4)], axis=1)
    for level in ("nominal", "ordinal", "interval", "ratio"):
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        got = st.krippendorff_alpha_from_counts(table, level, value_domain=[1, 2, 3, 4], n_boot=0)
        assert got.alpha == pytest.approx(expected, abs=1e-10), level
    with pytest.raises(ValueError, match="value_domain"):
        st.krippendorff_alpha_from_counts(table, "interval")
    with pytest.raises(ValueError, match="two distinct values"):
        st.krippendorff_alpha_from_counts([[3, 0], [2, 0]])
    with pytest.raises(ValueError, match="non-negative integers"):
        st.krippendorff_alpha_from_counts([[1.5, 1], [2, 0]])


def test_alpha_from_counts_ci_is_seeded_and_sensible():
    table = _anonymous_study(seed=3, items=200)
    a = st.krippendorff_alpha_from_counts(table, n_boot=500, seed=5)
    assert a.ci == st.krippendorff_alpha_from_counts(table, n_boot=500, seed=5).ci
    assert a.ci != st.krippendorff_alpha_from_counts(table, n_boot=500, seed=6).ci
    assert a.ci[0] < a.alpha < a.ci[1] and a.ci[1] - a.ci[0] < 0.3


def test_fleiss_modal_raters_and_rejection():
    table = np.array([[5, 0], [4, 1], [3, 2], [2, 2], [6, 0], [0, 5], [1, 0]])
    with pytest.raises(ValueError, match="same number of raters"):
        st.fleiss_kappa_from_counts(table)
    res = st.fleiss_kappa_from_counts(table, unequal_raters="modal", n_boot=0)
    kept = table[table.sum(axis=1) == 5]
    assert (res.n_raters, res.n_items, res.n_items_excluded) == (5, 4, 3)
    assert res.kappa == pytest.approx(_fleiss_by_hand(kept), abs=1e-12)
    with pytest.raises(ValueError, match="unequal_raters"):
        st.fleiss_kappa_from_counts(table, unequal_raters="mean")
    with pytest.raises(ValueError, match="at least 2 raters"):
        st.fleiss_kappa_from_counts([[1, 0], [0, 1]], unequal_raters="modal")


def _naive_bootstrap(stat, n_items, rounds, seed, confidence=0.95):
    """Percentile CI from an explicit resample of item indices (a different RNG stream from
    the implementation's multinomial draws: the two CIs agree only in distribution)."""
    rng = np.random.default_rng(seed + 1000)
    vals = []
    for _ in range(rounds):
        v = stat(rng.integers(n_items, size=n_items))
        if v is not None and np.isfinite(v):
            vals.append(v)
    return np.quantile(vals, [(1 - confidence) / 2, (1 + confidence) / 2])


def test_fleiss_ci_matches_a_naive_bootstrap_over_items():
    table = _anonymous_study(seed=7, items=150)
    res = st.fleiss_kappa_from_counts(table, n_boot=3000, seed=0)
    assert res.ci[0] < res.kappa < res.ci[1]
    assert (res.n_boot, res.seed, res.confidence) == (3000, 0, 0.95)
    naive = _naive_bootstrap(lambda idx: _fleiss_by_hand(table[idx]), len(table), 3000, 0)
    assert res.ci == pytest.approx(tuple(naive), abs=0.02)
    again = st.fleiss_kappa_from_counts(table, n_boot=3000, seed=0)
    assert again.ci == res.ci  # seeded
    assert st.fleiss_kappa_from_counts(table, n_boot=0).ci is None


@pytest.mark.parametrize("case", ["study", "modal", "degenerate resamples"])
def test_fleiss_ci_equals_the_textbook_formula_on_the_same_resamples(case):
    """Each resample of the seeded bootstrap (a multinomial draw over the distinct item rows,
    in ``np.unique`` order) scored by ``_fleiss_by_hand`` gives exactly the CI of the fast
    path; resamples whose chance agreement is 1 (kappa undefined) are left out of both."""
    table = {"study": _anonymous_study(seed=9, items=120),
             "modal": np.vstack([_anonymous_study(seed=2, items=40), [[2, 1, 0], [6, 0, 1]]]),
             "degenerate resamples": np.array([[3, 0], [3, 0], [3, 0], [2, 1], [3, 0], [3, 0]]),
             }[case]
    res = st.fleiss_kappa_from_counts(table, unequal_raters="modal", n_boot=400, seed=6)
    kept = table[table.sum(axis=1) == res.n_raters]
    profiles, freq = np.unique(kept, axis=0, return_counts=True)
    draws = np.random.default_rng(6).multinomial(len(kept), freq / freq.sum(), size=400)
    boots = []
    for w in draws:
        resample = np.repeat(profiles, w, axis=0)
        if resample.sum(axis=0).max() < resample.sum():  # chance agreement below 1
            boots.append(_fleiss_by_hand(resample))
    if case == "degenerate resamples":
        assert 50 < len(boots) < 350  # (5/6)^6 of the resamples hold no disagreement
    expected = np.quantile(boots, [0.025, 0.975])
    assert res.ci == pytest.approx(tuple(expected), abs=1e-12)
    assert res.kappa == pytest.approx(_fleiss_by_hand(kept), abs=1e-12)


def test_fleiss_kappa_from_labels_is_the_count_table_with_every_option_passed_on():
    table = np.vstack([_anonymous_study(seed=4, items=30), [[2, 1, 0]]])  # one item of 3 votes
    labels = ["A", "B", "tie"]
    ratings = [[lab for lab, n in zip(labels, row, strict=True) for _ in range(n)]
               for row in table]
    options = {"unequal_raters": "modal", "n_boot": 60, "confidence": 0.8, "seed": 3}
    assert st.fleiss_kappa(ratings, **options) == st.fleiss_kappa_from_counts(
        table, labels, **options)
    default = st.fleiss_kappa(ratings[:-1])  # 1000 resamples, seed 0, 95 %
    assert (default.n_boot, default.seed, default.confidence) == (1000, 0, 0.95)
    assert default.ci == st.fleiss_kappa_from_counts(table[:-1], n_boot=1000, seed=0).ci


def test_fleiss_kappa_categories_from_labels():
    """Sorted labels (numbers as numbers), a stable order for mixed types, and a second
    column only when every label is the same (kappa undefined then, not an error)."""
    assert st.fleiss_kappa([[10, 9], [9, 9]], n_boot=0).categories == [9, 10]
    assert st.fleiss_kappa([[1, "a"], ["a", "a"]], n_boot=0).categories == ["a", 1]  # by repr
    assert st.fleiss_kappa([["b", "a"], ["b", "b"]], n_boot=0).categories == ["a", "b"]
    lone = st.fleiss_kappa([["a", "a"], ["a", "a"]], n_boot=0)
    assert lone.categories == ["a", "<other>"] and lone.kappa is None


def test_cohen_defaults_and_unequal_lengths():
    a, b = list("AABBABAB"), list("ABBBAAAB")
    assert st.cohen_kappa_ci(a, b) == st.cohen_kappa_ci(a, b, n_boot=1000, seed=0)
    assert st.cohen_kappa_ci(a, b) != st.cohen_kappa_ci(a, b, n_boot=1000, seed=1)
    for kappa_or_ci in (st.cohen_kappa, st.cohen_kappa_ci):
        with pytest.raises(ValueError, match="same length"):
            kappa_or_ci(a, b[:-1])
    for left, right in ((["A", None], ["A", "B"]), (["A", "B"], ["A", None])):
        with pytest.raises(ValueError, match="complete pairs"):
            st.cohen_kappa(left, right)
    # a label only one side uses: po = 2/4, pe = (2*1 + 1*3 + 1*0) / 16 (C never in b)
    kappa, po, pe = st.cohen_kappa(["A", "A", "B", "C"], ["A", "B", "B", "B"])
    assert (po, pe) == (0.5, 5 / 16) and kappa == pytest.approx((0.5 - 5 / 16) / (1 - 5 / 16))
    (pair,) = st.pairwise_cohen_kappa({"x": {1: "A", 2: "B"}, "y": {2: "B", 3: "A"}})
    assert (pair.n_shared, pair.n_boot, pair.seed, pair.confidence) == (1, 1000, 0, 0.95)


def test_defaults_are_1000_resamples_seed_0_and_categories_pass_through():
    table = _anonymous_study(seed=5, items=20)
    for res in (st.fleiss_kappa_from_counts(table), st.krippendorff_alpha_from_counts(table),
                st.krippendorff_alpha(table.T)):
        assert (res.n_boot, res.seed, res.confidence) == (1000, 0, 0.95)
    assert st.fleiss_kappa_from_counts(table, ["A", "B", "tie"], n_boot=0).categories == [
        "A", "B", "tie"]
    assert st.fleiss_kappa_from_counts(table, n_boot=0).categories == [0, 1, 2]


def test_count_tables_at_their_edges():
    """One item is enough for Fleiss' kappa; an empty, negative or single-valued table is
    refused with the reason; the modal rater count may be 2."""
    one = st.fleiss_kappa_from_counts([[2, 1]], n_boot=0)
    assert (one.n_items, one.n_raters) == (1, 3)
    assert one.kappa == pytest.approx(_fleiss_by_hand([[2, 1]]), abs=1e-12)
    with pytest.raises(ValueError, match="items x categories"):
        st.fleiss_kappa_from_counts(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="non-negative integers"):
        st.fleiss_kappa_from_counts([[3, -1], [2, 0]])
    with pytest.raises(ValueError, match="two distinct values"):
        st.krippendorff_alpha_from_counts([[3], [2]])  # one value: no shape error, no alpha
    pairs = np.array([[1, 1], [2, 0], [0, 2], [3, 0], [1, 1]])
    modal = st.fleiss_kappa_from_counts(pairs, unequal_raters="modal", n_boot=0)
    assert (modal.n_raters, modal.n_items, modal.n_items_excluded) == (2, 4, 1)
    assert modal.kappa == pytest.approx(_fleiss_by_hand(pairs[pairs.sum(axis=1) == 2]))


def test_alpha_from_counts_with_a_value_seen_once_and_one_never():
    """Only values that occur count (as from raw ratings), including one seen a single time."""
    rng = np.random.default_rng(8)
    data = rng.choice([1.0, 2.0, 5.0], size=(4, 60))
    data[rng.random(data.shape) < 0.25] = np.nan
    data[0, 0], data[1, 0] = 4.0, 5.0  # value 4 once; value 3 never
    table = np.stack([(data == v).sum(axis=0) for v in (1, 2, 3, 4, 5)], axis=1)
    for level in ("nominal", "ordinal", "interval", "ratio"):
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        got = st.krippendorff_alpha_from_counts(table, level, value_domain=[1, 2, 3, 4, 5],
                                                n_boot=0)
        assert got.alpha == pytest.approx(expected, abs=1e-10), level
    with pytest.raises(ValueError, match="value_domain"):
        st.krippendorff_alpha_from_counts(table, "ratio")


def test_fleiss_of_each_row_once_is_the_point_estimate():
    from agreement.statistics.reliability import _fleiss

    table = _anonymous_study(seed=6, items=25)
    (kappa,) = _fleiss(table, 5)
    assert kappa == pytest.approx(_fleiss_by_hand(table), abs=1e-12)


def test_cohen_ci_matches_a_naive_bootstrap_over_shared_items():
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 3, size=120)
    a = [("A", "B", "tie")[t] for t in truth]
    b = [x if rng.random() < 0.75 else ("A", "B", "tie")[rng.integers(3)] for x in a]
    pairs = st.pairwise_cohen_kappa({"x": dict(enumerate(a)), "y": dict(enumerate(b))},
                                    n_boot=3000, seed=0)
    (p,) = pairs
    assert p.kappa == pytest.approx(_cohen_by_hand(a, b), abs=1e-12)
    assert p.ci[0] < p.kappa < p.ci[1] and (p.n_boot, p.seed) == (3000, 0)

    def kappa_of(idx):
        aa, bb = [a[i] for i in idx], [b[i] for i in idx]
        return _cohen_by_hand(aa, bb)

    naive = _naive_bootstrap(kappa_of, len(a), 3000, 0)
    assert p.ci == pytest.approx(tuple(naive), abs=0.03)
    assert st.cohen_kappa_ci(a, b, n_boot=3000, seed=0) == p.ci
    assert st.cohen_kappa_ci(a, b, n_boot=0) is None
    # one label on both sides in every resample: kappa undefined, no CI
    assert st.cohen_kappa_ci(["A"] * 5, ["A"] * 5, n_boot=50) is None


def test_alpha_ci_matches_a_naive_bootstrap_scored_by_the_package():
    """Oracle for the bootstrap fast path: resample items, score each with ``krippendorff``."""
    table = _anonymous_study(seed=11, items=150)
    res = st.krippendorff_alpha_from_counts(table, n_boot=2000, seed=0)
    assert res.ci[0] < res.alpha < res.ci[1]

    def package_alpha(idx):
        return krippendorff.alpha(value_counts=table[idx], level_of_measurement="nominal")

    naive = _naive_bootstrap(package_alpha, len(table), 2000, 0)
    assert res.ci == pytest.approx(tuple(naive), abs=0.02)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_ci_equals_the_package_on_the_same_resamples(level):
    """Each resample of the seeded bootstrap (a multinomial draw over the distinct units)
    scored by ``krippendorff.alpha`` gives exactly the CI of the fast path."""
    rng = np.random.default_rng(12)
    truth = rng.integers(1, 6, size=400)  # 5-point ratings, 2-6 per item
    data = np.clip(truth + rng.integers(-1, 2, size=(6, 400)), 1, 5).astype(float)
    data[rng.random(data.shape) < 0.35] = np.nan
    table = np.stack([(data == v).sum(axis=0) for v in range(1, 6)], axis=1)
    values = np.arange(1.0, 6.0)
    res = st.krippendorff_alpha_from_counts(table, level, value_domain=values, n_boot=300,
                                            seed=4)
    pairable = table[table.sum(axis=1) >= 2]
    profiles, freq = np.unique(pairable, axis=0, return_counts=True)
    draws = np.random.default_rng(4).multinomial(len(pairable), freq / freq.sum(), size=300)
    boots = [krippendorff.alpha(value_counts=np.repeat(profiles, w, axis=0), value_domain=values,
                                level_of_measurement=level) for w in draws]
    expected = np.quantile(boots, [0.025, 0.975])
    assert res.ci == pytest.approx(tuple(expected), abs=1e-10)
    assert res.alpha == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement=level), abs=1e-10)


def test_new_results_are_strict_json():
    table = _anonymous_study()
    for res in (st.fleiss_kappa_from_counts(table, n_boot=20),
                st.krippendorff_alpha_from_counts(table, n_boot=20),
                st.pairwise_cohen_kappa({"x": {1: "A", 2: "B"}, "y": {1: "A", 2: "A"}},
                                        n_boot=20)[0]):
        d = res.to_dict()
        assert json.loads(json.dumps(d, allow_nan=False)) == d
