"""Inter-rater reliability: Krippendorff's alpha, Fleiss' / Cohen's kappa, leave-one-out."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import krippendorff
import numpy as np
from scipy import sparse

from ._common import (
    LEVELS,
    _f,
    _is_missing,
    _Result,
    _same_length,
)
from .proportions import ProportionCI, proportion_ci


@dataclasses.dataclass(frozen=True)
class AlphaResult(_Result):
    """Krippendorff's alpha with a percentile bootstrap CI over units."""

    alpha: float | None
    level: str
    n_units: int
    n_coders: int | None  # None when computed from counts (who rated is unknown)
    n_pairable_values: int
    ci: tuple[float, float] | None
    confidence: float
    n_boot: int
    seed: int


def _to_codes(
    data: Any, level: str, value_domain: Sequence[Any] | None
) -> tuple[np.ndarray, np.ndarray]:
    """coders x units data -> (int codes with -1 = missing, numeric value of each code).

    Nominal accepts any hashable values. Ordinal needs orderable values or an ordered
    ``value_domain`` (ranks are all that matter). Interval/ratio need numbers.
    """
    arr = np.asarray(data) if not isinstance(data, np.ndarray) else data
    if arr.ndim != 2:
        raise ValueError(f"reliability data must be 2-D (coders x units), got shape {arr.shape}")
    if arr.shape[0] < 2 or arr.shape[1] < 1:
        raise ValueError(f"need at least 2 coders and 1 unit, got shape {arr.shape}")
    if value_domain is None and arr.dtype.kind in "iuf":
        # Floats are read as they are (float32 to float64 is exact) and codes are as narrow
        # as the values allow: at 200 coders x 160K units, float64 copies and int64 codes
        # took the bootstrap's process from 400 MB to 1.4 GB.
        flat = (arr if arr.dtype.kind == "f" else arr.astype(float)).ravel()
        present = ~np.isnan(flat)
        domain, inv = np.unique(flat[present], return_inverse=True)
        codes = np.full(flat.shape, -1, dtype=_code_dtype(len(domain)))
        codes[present] = inv
        return codes.reshape(arr.shape), domain.astype(float)
    obj = np.asarray(data, dtype=object)
    cells = [v for v in obj.ravel() if not _is_missing(v)]
    if value_domain is not None:
        domain_list = list(value_domain)
        if len(set(domain_list)) != len(domain_list):
            raise ValueError("value_domain has duplicates")
        extra = set(cells) - set(domain_list)
        if extra:
            raise ValueError(f"values outside value_domain: {sorted(map(repr, extra))[:5]}")
    else:
        try:
            domain_list = sorted(set(cells))
        except TypeError:
            if level != "nominal":
                raise ValueError(
                    f"{level} alpha needs orderable values or an ordered value_domain"
                ) from None
            domain_list = list(dict.fromkeys(cells))
    lookup = {v: i for i, v in enumerate(domain_list)}
    codes = np.array([-1 if _is_missing(v) else lookup[v] for v in obj.ravel()], dtype=np.int64)
    if level in ("interval", "ratio"):
        try:
            numeric = np.array(domain_list, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{level} alpha needs numeric values, got {domain_list[:5]}") from None
    else:
        numeric = np.arange(len(domain_list), dtype=float)
    return codes.reshape(arr.shape), numeric


def _code_dtype(n_values: int):
    """The narrowest signed integer holding codes -1 .. n_values (the +1 keys add one)."""
    return next(t for t in (np.int8, np.int16, np.int32, np.int64)
                if n_values < np.iinfo(t).max)


class _Coincidences:
    """Units compressed to distinct value profiles, each with its coincidence entries.

    o_ck = sum_u (n_uc n_uk - [c=k] n_uc) / (m_u - 1) over pairable units (m_u >= 2).
    Units with the same multiset of values contribute identically, so resampling units
    is resampling profiles with multinomial weights: exact and cheap for bootstraps.
    """

    def __init__(self, codes: np.ndarray, n_values: int):
        units = np.sort(codes.T, axis=1)  # units x coders, -1 (missing) first
        m = (units >= 0).sum(axis=1)
        units = units[m >= 2]
        self.n_units = len(units)
        if self.n_units == 0:
            raise ValueError("no unit has values from at least two coders; alpha is undefined")
        base = n_values + 1
        if units.shape[1] * math.log2(base) < 62:  # one int64 key per row: far faster
            key = (units + 1) @ (base ** np.arange(units.shape[1], dtype=np.int64))
            _, first, self.freq = np.unique(key, return_index=True, return_counts=True)
            profiles = units[first]
        else:
            table, self.freq = _row_profiles(units, n_values)
            prof, val = np.nonzero(table)
            self._finish(prof, val, table[prof, val], len(table), n_values)
            return
        p_idx, col = np.nonzero(profiles >= 0)
        keys, cnt = np.unique(p_idx * n_values + profiles[p_idx, col], return_counts=True)
        prof, val = keys // n_values, keys % n_values  # sorted by profile
        self._finish(prof, val, cnt, len(profiles), n_values)

    @classmethod
    def from_counts(cls, table: np.ndarray) -> _Coincidences:
        """From a units x values table of counts (n_uc): the same compression without
        coder rows, exact for any number of values per unit (alpha needs no identities)."""
        table = table[table.sum(axis=1) >= 2]
        self = cls.__new__(cls)
        self.n_units = len(table)
        if self.n_units == 0:
            raise ValueError("no unit has at least two values; alpha is undefined")
        profiles, self.freq = np.unique(table, axis=0, return_counts=True)
        prof, val = np.nonzero(profiles)  # row-major: grouped by profile, as _finish needs
        self._finish(prof, val, profiles[prof, val], len(profiles), table.shape[1])
        return self

    def _finish(
        self, prof: np.ndarray, val: np.ndarray, cnt: np.ndarray, n_prof: int, n_values: int
    ) -> None:
        """Coincidence entries from (profile, value, count) triples grouped by profile."""
        self.counts = sparse.csr_matrix((cnt.astype(float), (prof, val)), shape=(n_prof, n_values))
        m_prof = np.bincount(prof, weights=cnt, minlength=n_prof)
        # all (c, k) combinations of distinct values inside each profile
        r = np.bincount(prof, minlength=n_prof)
        start = np.concatenate(([0], np.cumsum(r)[:-1]))
        combo_prof = np.repeat(np.arange(n_prof), r * r)
        local = np.arange(len(combo_prof)) - np.repeat(np.cumsum(r * r) - r * r, r * r)
        rr = r[combo_prof]
        e1, e2 = start[combo_prof] + local // rr, start[combo_prof] + local % rr
        contrib = (cnt[e1] * cnt[e2] - (e1 == e2) * cnt[e1]) / (m_prof[combo_prof] - 1)
        keep = (contrib > 0) & (e1 != e2)  # delta(c, c) = 0 for every metric: skip the diagonal
        self.prof, self.c, self.k, self.w = (
            combo_prof[keep],
            val[e1][keep],
            val[e2][keep],
            contrib[keep],
        )
        self.n_values = n_values


def _row_profiles(units: np.ndarray, n_values: int) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows as value counts, how often each occurs) of sorted unit rows (-1 =
    missing first), in the order of ``np.unique(units, axis=0)`` (the bootstrap's draws follow
    that order, so a seed's CI stays the same) without its row sort, which costs ~0.4 s at
    16K units x 100 coders. A sorted row is its counts; rows compare as: more missing values
    first, then more of value 0, of value 1, ..."""
    table = np.stack([(units == v).sum(axis=1) for v in range(n_values)], axis=1)
    missing = units.shape[1] - table.sum(axis=1)
    order = np.lexsort([*(-table[:, v] for v in reversed(range(n_values))), -missing])
    table = table[order]
    starts = np.flatnonzero(np.r_[True, (table[1:] != table[:-1]).any(axis=1)])
    return table[starts], np.diff(np.r_[starts, len(table)])


def _delta(
    level: str, values: np.ndarray, n: np.ndarray, c: np.ndarray, k: np.ndarray
) -> np.ndarray:
    """Squared distance delta(c, k) between value codes (n: marginals, for ordinal)."""
    vc, vk = values[c], values[k]
    if level == "nominal":
        return (c != k).astype(float)
    if level == "interval":
        return (vc - vk) ** 2
    if level == "ratio":
        s = vc + vk
        return np.divide(vc - vk, s, out=np.zeros(np.broadcast(vc, vk).shape), where=s != 0) ** 2
    cum = np.concatenate(([0.0], np.cumsum(n)))
    lo, hi = np.minimum(c, k), np.maximum(c, k)
    return (cum[hi + 1] - cum[lo] - (n[c] + n[k]) / 2) ** 2


def _alpha_from(
    co: _Coincidences, level: str, values: np.ndarray, weights: np.ndarray | None = None
) -> float:
    """alpha = 1 - (n - 1) * sum(o * delta) / sum(n_c n_k delta) for one weighting."""
    w = co.freq if weights is None else weights
    ow = co.w * w[co.prof]
    n_c = np.asarray(co.counts.T @ w, dtype=float).ravel()  # pairable values per code
    n = n_c.sum()
    d_obs = float((ow * _delta(level, values, n_c, co.c, co.k)).sum())
    if level == "nominal":
        d_exp = n * n - float((n_c**2).sum())
    elif level == "interval":
        d_exp = 2 * (n * float(n_c @ values**2) - float(n_c @ values) ** 2)
    else:
        idx = np.nonzero(n_c)[0]
        d_exp = float(n_c[idx] @ _delta(level, values, n_c, idx[:, None], idx[None, :]) @ n_c[idx])
    if d_exp <= 0:
        return math.nan
    return 1.0 - (n - 1) * d_obs / d_exp


def _check_ci_args(n_boot: int, confidence: float) -> None:
    if n_boot < 0:
        raise ValueError("n_boot must be >= 0")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _multinomial_draws(rng: np.random.Generator, n: int, p: np.ndarray, n_boot: int):
    """Bootstrap resamples of ``n`` units as multinomial counts over distinct profiles
    (probabilities ``p``), in chunks bounding the draws array to ~16 MB."""
    chunk = max(1, 2_000_000 // len(p))
    for start in range(0, n_boot, chunk):
        yield rng.multinomial(n, p, size=min(chunk, n_boot - start))


def _percentile_ci(boots: np.ndarray, confidence: float) -> tuple[float, float] | None:
    """Percentile interval of the finite replicates (None when there are none)."""
    boots = boots[np.isfinite(boots)]
    if not len(boots):
        return None
    lo, hi = np.quantile(boots, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(lo), float(hi)


def _alpha_result(
    co: _Coincidences,
    level: str,
    values: np.ndarray,
    n_coders: int | None,
    n_boot: int,
    confidence: float,
    seed: int,
) -> AlphaResult:
    """Point estimate (the ``krippendorff`` package) and percentile bootstrap CI over units
    for compressed units."""
    # Past ~10M cells the package's units x V x V arrays outgrow memory: same exact value here.
    if co.n_units * len(values) ** 2 <= 10_000_000:
        unit_counts = np.repeat(co.counts.toarray(), co.freq, axis=0)
        point = float(
            krippendorff.alpha(
                value_counts=unit_counts, value_domain=values, level_of_measurement=level
            )
        )
    else:
        point = _alpha_from(co, level, values)
    ci = None
    if n_boot:
        rng = np.random.default_rng(seed)
        p = co.freq / co.freq.sum()
        # Kept: 6-7x faster than the package per resample (bench/library_first.py); oracle-tested.
        boots = np.array(
            [
                _alpha_from(co, level, values, w)
                for draws in _multinomial_draws(rng, co.n_units, p, n_boot)
                for w in draws
            ]
        )
        ci = _percentile_ci(boots, confidence)
    n_pairable = int(co.counts.sum(axis=1).A1 @ co.freq)
    return AlphaResult(
        _f(point), level, co.n_units, n_coders, n_pairable, ci, confidence, n_boot, seed
    )


def krippendorff_alpha(
    data: Any,
    level: str = "nominal",
    *,
    value_domain: Sequence[Any] | None = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> AlphaResult:
    """Krippendorff's alpha (coders x units; None/NaN = missing) with a bootstrap CI.

    The point estimate comes from the ``krippendorff`` package while its units x V x V
    working arrays stay under 10M cells; beyond that (many distinct values) the
    identical exact computation from the compressed coincidences is used. The CI is a percentile
    bootstrap resampling pairable units with replacement (``n_boot`` times, seeded);
    resamples with no variation (alpha undefined) are skipped. ``n_boot=0``: no CI.
    Cost per resample is O(distinct unit profiles), plus O(V^2) for ordinal/ratio.
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {LEVELS}")
    _check_ci_args(n_boot, confidence)
    codes, values = _to_codes(data, level, value_domain)
    if len(values) < 2:
        raise ValueError("alpha needs at least two distinct values in the data")
    co = _Coincidences(codes, len(values))
    return _alpha_result(co, level, values, int(codes.shape[0]), n_boot, confidence, seed)


def krippendorff_alpha_from_counts(
    value_counts: Any,
    level: str = "nominal",
    *,
    value_domain: Sequence[float] | None = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> AlphaResult:
    """Krippendorff's alpha from a units x values table of counts, for anonymous ratings.

    ``value_counts[u][c]`` is how many ratings unit u received with value c. alpha only
    ever uses these per-unit counts (the coincidence matrix sums n_uc n_uk / (m_u - 1)
    over units), so this is exact without knowing who rated what, for any number of
    ratings per unit; units with fewer than two ratings are not pairable and are left
    out, as always. Columns are nominal categories, or ordered values for ``ordinal``;
    ``interval`` / ``ratio`` need ``value_domain`` (the number each column stands for).
    Same point estimate and bootstrap CI over units as ``krippendorff_alpha``;
    ``n_coders`` is None (unknown).
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {LEVELS}")
    _check_ci_args(n_boot, confidence)
    table = _count_table(value_counts, min_columns=1)
    if value_domain is not None:
        values = np.asarray(value_domain, dtype=float)
        if values.shape != (table.shape[1],):
            raise ValueError(f"{len(values)} values given for {table.shape[1]} columns")
    elif level in ("interval", "ratio"):
        raise ValueError(f"{level} alpha from counts needs value_domain (a number per column)")
    else:
        values = np.arange(table.shape[1], dtype=float)
    used = table.sum(axis=0) > 0  # as from raw ratings: only values that occur count
    table, values = table[:, used], values[used]
    if len(values) < 2:
        raise ValueError("alpha needs at least two distinct values in the data")
    if level == "ordinal":
        values = np.arange(len(values), dtype=float)  # ranks are all that matter
    co = _Coincidences.from_counts(table)
    return _alpha_result(co, level, values, None, n_boot, confidence, seed)


def _count_table(counts: Any, min_columns: int = 2) -> np.ndarray:
    """A checked items x categories table of non-negative whole counts, as int64."""
    table = np.asarray(counts, dtype=float)
    if table.ndim != 2 or table.shape[0] == 0 or table.shape[1] < min_columns:
        raise ValueError(
            f"counts must be items x categories (>= 1 item, >= {min_columns} categories), "
            f"got shape {table.shape}"
        )
    if not np.isfinite(table).all() or (table < 0).any() or (table != np.round(table)).any():
        raise ValueError("counts must be non-negative integers")
    return table.astype(np.int64)


def label_counts(
    ratings: Sequence[Sequence[Hashable]], categories: Sequence[Hashable] | None = None
) -> tuple[np.ndarray, list]:
    """Per-item label lists -> (items x categories count table, categories).

    Categories default to the sorted labels seen (any stable order for mixed types).
    """
    if len(ratings) == 0:
        raise ValueError("ratings is empty")
    if categories is not None:
        cats = list(categories)
    else:
        seen = {v for item in ratings for v in item}
        try:
            cats = sorted(seen)
        except TypeError:  # mixed types: any stable order will do
            cats = sorted(seen, key=repr)
    col = {c: j for j, c in enumerate(cats)}
    table = np.zeros((len(ratings), len(cats)), dtype=np.int64)
    for i, item in enumerate(ratings):
        for v in item:
            if v not in col:
                raise ValueError(f"unknown label {v!r} in item {i}; categories are {cats}")
            table[i, col[v]] += 1
    return table, cats


def annotations_to_matrix(
    annotations: Mapping[Hashable, Mapping[Hashable, Hashable | None]],
) -> tuple[np.ndarray, list, list]:
    """{annotator: {item: label}} -> (coders x items object matrix with None, coders, items)."""
    if not annotations:
        raise ValueError("annotations is empty")
    coders = list(annotations)
    items = list(dict.fromkeys(i for a in coders for i in annotations[a]))
    mat = np.full((len(coders), len(items)), None, dtype=object)
    col = {it: j for j, it in enumerate(items)}
    for r, a in enumerate(coders):
        for it, lab in annotations[a].items():
            mat[r, col[it]] = lab
    return mat, coders, items


# ------------------------------------------------------------------ kappas


@dataclasses.dataclass(frozen=True)
class FleissKappa(_Result):
    """Fleiss' kappa with its ingredients (mean observed / chance agreement) and a
    percentile bootstrap CI over items."""

    kappa: float | None
    n_items: int
    n_raters: int
    categories: list[Any]
    category_proportions: list[float]
    observed_agreement: float
    expected_agreement: float
    n_items_excluded: int = 0  # items left out for another number of raters (``modal``)
    ci: tuple[float, float] | None = None
    confidence: float = 0.95
    n_boot: int = 0
    seed: int = 0


UNEQUAL_RATERS = ("reject", "modal")


def _fleiss(table: np.ndarray, n: int, weights: np.ndarray | None = None) -> np.ndarray:
    """kappa for each weighting of the rows (weights: draws x rows; None = each row once).

    P_i = (sum_j n_ij^2 - n) / (n (n - 1)), p_j = sum_i n_ij / (N n),
    kappa = (mean P_i - sum_j p_j^2) / (1 - sum_j p_j^2); NaN when chance agreement is 1.
    """
    w = np.ones((1, len(table))) if weights is None else np.atleast_2d(weights)
    total = w.sum(axis=1)
    p_i = ((table * table).sum(axis=1) - n) / (n * (n - 1))
    p_bar = (w @ p_i) / total
    p_j = (w @ table) / (total[:, None] * n)
    p_e = (p_j * p_j).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p_e < 1, (p_bar - p_e) / (1 - p_e), np.nan)


def fleiss_kappa_from_counts(
    counts: Any,
    categories: Sequence[Any] | None = None,
    *,
    unequal_raters: str = "reject",
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> FleissKappa:
    """Fleiss' kappa from an items x categories table of rating counts.

    Only counts are needed, never who rated: the raters may differ from item to item and
    may be anonymous. The statistic is defined for a fixed number n >= 2 of ratings per
    item; mixing n silently changes its chance model. ``unequal_raters`` says what to do
    when rows sum to different n: ``"reject"`` (ValueError) or ``"modal"``: keep the
    items with the most common n >= 2 (ties go to the larger n) and count the others in
    ``n_items_excluded``. Krippendorff's alpha (``krippendorff_alpha_from_counts``,
    nominal) uses every item with >= 2 ratings and is exact for unequal counts.

    CI: percentile bootstrap resampling the kept items with replacement (``n_boot``
    times, seeded; resamples with chance agreement 1 are skipped). ``n_boot=0``: no CI.
    """
    if unequal_raters not in UNEQUAL_RATERS:
        raise ValueError(f"unequal_raters must be one of {UNEQUAL_RATERS}, got {unequal_raters!r}")
    _check_ci_args(n_boot, confidence)
    table = _count_table(counts)
    cats = list(categories) if categories is not None else list(range(table.shape[1]))
    if len(cats) != table.shape[1]:
        raise ValueError(f"{len(cats)} categories given for {table.shape[1]} columns")
    per_item = table.sum(axis=1)
    excluded = 0
    if (per_item != per_item[0]).any():
        if unequal_raters == "reject":
            raise ValueError(
                f"Fleiss' kappa needs the same number of raters per item; got between "
                f"{int(per_item.min())} and {int(per_item.max())}. Use krippendorff_alpha for "
                "unequal counts (or unequal_raters='modal')."
            )
        sizes = Counter(int(n) for n in per_item if n >= 2)
        if not sizes:
            raise ValueError("Fleiss' kappa needs at least 2 raters per item")
        n_mode = max(sizes, key=lambda n: (sizes[n], n))
        keep = per_item == n_mode
        excluded = int((~keep).sum())
        table, per_item = table[keep], per_item[keep]
    n = int(per_item[0])
    if n < 2:
        raise ValueError("Fleiss' kappa needs at least 2 raters per item")
    p_j = table.sum(axis=0) / table.sum()
    p_bar = float((((table * table).sum(axis=1) - n) / (n * (n - 1))).mean())
    p_e = float((p_j * p_j).sum())
    kappa = (p_bar - p_e) / (1 - p_e) if p_e < 1 else math.nan
    ci = None
    if n_boot:
        profiles, freq = np.unique(table, axis=0, return_counts=True)
        rng = np.random.default_rng(seed)
        boots = np.concatenate([
            _fleiss(profiles, n, draws)
            for draws in _multinomial_draws(rng, len(table), freq / freq.sum(), n_boot)
        ])
        ci = _percentile_ci(boots, confidence)
    return FleissKappa(
        _f(kappa), table.shape[0], n, cats, p_j.tolist(), p_bar, p_e,
        excluded, ci, confidence, n_boot, seed,
    )


def fleiss_kappa(
    ratings: Sequence[Sequence[Hashable]],
    categories: Sequence[Hashable] | None = None,
    *,
    unequal_raters: str = "reject",
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> FleissKappa:
    """Fleiss' kappa from per-item label lists (``ratings[i]`` = the labels of item i).

    Raters need not be the same people across items, but every item needs the same
    number of labels unless ``unequal_raters="modal"`` (see ``fleiss_kappa_from_counts``).
    """
    table, cats = label_counts(ratings, categories)
    if len(cats) < 2:
        cats = cats + ["<other>"]
        table = np.hstack([table, np.zeros((len(ratings), 1), dtype=np.int64)])
    return fleiss_kappa_from_counts(
        table, cats, unequal_raters=unequal_raters, n_boot=n_boot, confidence=confidence,
        seed=seed,
    )


@dataclasses.dataclass(frozen=True)
class CohenKappa(_Result):
    """Cohen's kappa between two annotators on their shared items, with a percentile
    bootstrap CI over those items."""

    annotator_a: str
    annotator_b: str
    kappa: float | None
    n_shared: int
    observed_agreement: float
    expected_agreement: float
    ci: tuple[float, float] | None = None
    confidence: float = 0.95
    n_boot: int = 0
    seed: int = 0


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> tuple[float | None, float, float]:
    """(kappa, observed, chance agreement) for two aligned label sequences.

    kappa is None when chance agreement is 1 (both used one and the same label).
    """
    n = _same_length(a=a, b=b)
    if any(v is None for v in a) or any(v is None for v in b):
        raise ValueError("cohen_kappa needs complete pairs; drop unlabelled items first")
    po = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    pe = sum(ca[c] * cb.get(c, 0) for c in ca) / (n * n)
    return (None if pe >= 1 else (po - pe) / (1 - pe)), po, pe


def cohen_kappa_ci(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap CI of Cohen's kappa, resampling the aligned items with
    replacement (``n_boot`` times, seeded); resamples whose chance agreement is 1 are
    skipped. None when ``n_boot`` is 0 or no resample defines kappa."""
    n = _same_length(a=a, b=b)
    _check_ci_args(n_boot, confidence)
    if not n_boot:
        return None
    code = {v: i for i, v in enumerate(dict.fromkeys([*a, *b]))}
    k = len(code)
    joint = np.fromiter((code[x] * k + code[y] for x, y in zip(a, b, strict=True)),
                        dtype=np.int64, count=n)
    profiles, freq = np.unique(joint, return_counts=True)  # distinct (label a, label b)
    ia, ib = profiles // k, profiles % k
    onehot = np.eye(k)
    rng = np.random.default_rng(seed)
    boots = []
    for w in _multinomial_draws(rng, n, freq / freq.sum(), n_boot):
        po = w[:, ia == ib].sum(axis=1) / n
        pe = ((w @ onehot[ia]) * (w @ onehot[ib])).sum(axis=1) / (n * n)
        with np.errstate(divide="ignore", invalid="ignore"):
            boots.append(np.where(pe < 1, (po - pe) / (1 - pe), np.nan))
    return _percentile_ci(np.concatenate(boots), confidence)


def pairwise_cohen_kappa(
    annotations: Mapping[Hashable, Mapping[Hashable, Hashable | None]],
    min_shared: int = 1,
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[CohenKappa]:
    """Cohen's kappa for every pair of annotators sharing >= ``min_shared`` items.

    ``annotations`` is {annotator: {item: label}}; None labels count as unlabelled. Each
    pair's CI is ``cohen_kappa_ci`` over its shared items with the same ``seed``.
    """
    if len(annotations) < 2:
        raise ValueError("need at least two annotators")
    _check_ci_args(n_boot, confidence)
    clean = {
        a: {i: v for i, v in items.items() if v is not None} for a, items in annotations.items()
    }
    names = list(clean)
    out = []
    for x in range(len(names)):
        for y in range(x + 1, len(names)):
            la, lb = clean[names[x]], clean[names[y]]
            shared = [i for i in la if i in lb]
            if len(shared) < max(1, min_shared):
                continue
            va, vb = [la[i] for i in shared], [lb[i] for i in shared]
            k, po, pe = cohen_kappa(va, vb)
            ci = cohen_kappa_ci(va, vb, n_boot=n_boot, confidence=confidence, seed=seed)
            out.append(CohenKappa(str(names[x]), str(names[y]), k, len(shared), po, pe,
                                  ci, confidence, n_boot, seed))
    return out


@dataclasses.dataclass(frozen=True)
class LeaveOneOutAgreement(_Result):
    """One annotator's agreement with the majority of the *other* annotators."""

    annotator: str
    agreement: ProportionCI
    n_excluded_ties: int
    n_excluded_alone: int


def leave_one_out_agreement(
    annotations: Mapping[Hashable, Mapping[Hashable, Hashable | None]], confidence: float = 0.95
) -> dict[str, LeaveOneOutAgreement]:
    """Each annotator vs the majority label of the others on the same items.

    Items where the others' top label is tied (e.g. 1-1) are excluded and counted in
    ``n_excluded_ties``: there is no majority to agree with, and breaking the tie at
    random would only add noise. Items nobody else labelled go to ``n_excluded_alone``.
    """
    if len(annotations) < 2:
        raise ValueError("need at least two annotators")
    names = [str(a) for a in annotations]
    who, item, label = _vote_codes(annotations)
    n_items, n_labels = int(item.max(initial=-1)) + 1, int(label.max(initial=-1)) + 1
    counts = np.zeros((n_items, n_labels), dtype=np.int32)
    np.add.at(counts, (item, label), 1)
    agree = np.zeros(len(names), dtype=np.int64)
    total, ties, alone = agree.copy(), agree.copy(), agree.copy()
    step = max(1, 4_000_000 // max(n_labels, 1))  # bound the votes x labels block in memory
    for s in range(0, len(who), step):
        w, it, lab = who[s:s + step], item[s:s + step], label[s:s + step]
        others = counts[it]  # each vote's item counts, minus the vote itself
        rows = np.arange(len(it))
        others[rows, lab] -= 1
        top = others.max(axis=1)
        is_alone = top == 0
        is_tie = ~is_alone & ((others == top[:, None]).sum(axis=1) > 1)
        decisive = ~is_alone & ~is_tie
        agree += np.bincount(w, decisive & (others[rows, lab] == top), len(names)).astype(int)
        total += np.bincount(w, decisive, len(names)).astype(int)
        ties += np.bincount(w, is_tie, len(names)).astype(int)
        alone += np.bincount(w, is_alone, len(names)).astype(int)
    return {a: LeaveOneOutAgreement(a, proportion_ci(int(agree[i]), int(total[i]), confidence),
                                    int(ties[i]), int(alone[i]))
            for i, a in enumerate(names)}


def _vote_codes(annotations: Mapping[Hashable, Mapping[Hashable, Hashable | None]]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(annotator index, item code, label code) per labelled vote, as integer arrays."""
    items: dict = {}
    labels: dict = {}
    who, item, label = [], [], []
    for i, per in enumerate(annotations.values()):
        for it, lab in per.items():
            if lab is not None:
                who.append(i)
                item.append(items.setdefault(it, len(items)))
                label.append(labels.setdefault(lab, len(labels)))
    return (np.asarray(who, dtype=np.int64), np.asarray(item, dtype=np.int64),
            np.asarray(label, dtype=np.int64))
