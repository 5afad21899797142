"""Agreement statistics between human annotators and automatic judges.

Pure numpy/scipy (no Django) so the same code serves the web app, Celery workers,
notebooks and benchmarks. Conventions follow VisIT-Bench §4.3 (accuracy of a judge
against the majority of N forced-choice human votes, split by agreement level k/N,
judge ties broken at random with a fixed seed), ConvBench appendix C (pairwise
agreement matrices between sources) and Prometheus-Vision §3 (Pearson / Kendall /
Spearman between human and judge scores, length and self-enhancement biases).

Inputs are plain lists, numpy arrays and dicts; every result is a small dataclass
with ``to_dict()`` that yields JSON-ready data (numpy scalars become Python numbers,
NaN becomes ``None``). Bad input raises ``ValueError`` with a message saying what is
wrong.

Pairwise verdicts are labels, ``"A"`` / ``"B"`` by default, plus ``"tie"`` for a
judge that declines to choose; ``None`` means "not labelled" where a function says
it accepts missing values.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from itertools import repeat
from typing import Any

import krippendorff
import numpy as np
from scipy import sparse, stats

DEFAULT_LABELS = ("A", "B")
TIE = "tie"
LEVELS = ("nominal", "ordinal", "interval", "ratio")


# --------------------------------------------------------------------------- results


def _jsonable(obj: Any) -> Any:
    """Recursively convert results to JSON-safe Python values (NaN -> None)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.bool_ | bool):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return None if not math.isfinite(float(obj)) else float(obj)
    return obj


class _Result:
    """Mixin giving every result dataclass a JSON-ready ``to_dict()``."""

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(self)


def _f(x: Any) -> float | None:
    """Float, or None when undefined (NaN), so results never carry NaN."""
    x = float(x)
    return x if math.isfinite(x) else None


# ------------------------------------------------------------------ proportions / CIs


@dataclasses.dataclass(frozen=True)
class ProportionCI(_Result):
    """k successes out of n with Wilson and Clopper-Pearson intervals (None if n == 0)."""

    successes: int
    n: int
    estimate: float | None
    wilson: tuple[float, float] | None
    clopper_pearson: tuple[float, float] | None
    confidence: float


def proportion_ci(successes: int, n: int, confidence: float = 0.95) -> ProportionCI:
    """Binomial proportion with both CIs, via ``scipy.stats.binomtest``.

    Wilson is the score interval without continuity correction; Clopper-Pearson is
    the exact (conservative) interval. VisIT-Bench compares judges by whether these
    binomial intervals overlap.
    """
    successes, n = int(successes), int(n)
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n == 0:
        return ProportionCI(0, 0, None, None, None, confidence)
    res = stats.binomtest(successes, n)
    w = res.proportion_ci(confidence_level=confidence, method="wilson")
    cp = res.proportion_ci(confidence_level=confidence, method="exact")
    return ProportionCI(
        successes,
        n,
        successes / n,
        (float(w.low), float(w.high)),
        (float(cp.low), float(cp.high)),
        confidence,
    )


# ------------------------------------------------------------------ label encoding


def _encode(
    values: Sequence[Any],
    labels: Sequence[Hashable],
    tie_label: Hashable | None,
    what: str,
    allow_missing: bool = False,
) -> np.ndarray:
    """Map verdicts to codes: label i -> i, tie -> -1, None -> -2 (if allowed)."""
    lookup: dict[Any, int] = {lab: i for i, lab in enumerate(labels)}
    if tie_label is not None:
        lookup[tie_label] = -1
    if allow_missing:
        lookup[None] = -2
    try:
        out = np.fromiter(map(lookup.get, values, repeat(-9)), dtype=np.int64, count=len(values))
    except TypeError:
        raise ValueError(
            f"{what} labels must be hashable values such as 'A', 'B', {tie_label!r}"
        ) from None
    if (out == -9).any():
        i = int(np.argmax(out == -9))
        v = list(values)[i]
        allowed = list(labels) + ([tie_label] if tie_label is not None else [])
        hint = " (None = missing is not allowed here)" if v is None else ""
        raise ValueError(
            f"unknown {what} label {v!r} at index {i}; expected one of {allowed}{hint}"
        )
    return out


def _same_length(**seqs: Sequence[Any]) -> int:
    lengths = {name: len(s) for name, s in seqs.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"inputs must have the same length, got {lengths}")
    n = next(iter(lengths.values()))
    if n == 0:
        raise ValueError(f"inputs are empty: {', '.join(lengths)}")
    return n


# ------------------------------------------------------------------ human majority


@dataclasses.dataclass(frozen=True)
class Majority(_Result):
    """Per-item majority: label code (-1 if no unique majority), its votes k, and N."""

    codes: np.ndarray
    k: np.ndarray
    n_votes: np.ndarray
    labels: tuple[Hashable, ...]


def human_majority(
    votes: Sequence[Sequence[Hashable]], labels: Sequence[Hashable] = DEFAULT_LABELS
) -> Majority:
    """Majority label of each item's votes, vectorised for 100k-item inputs.

    ``votes[i]`` is item i's list of labels (lists may differ in length; a 2-D array
    works too). Items whose top label is shared (e.g. 2-2) have no majority (code -1).
    """
    if len(votes) == 0:
        raise ValueError("votes is empty")
    labels = tuple(labels)
    if len(set(labels)) != len(labels) or len(labels) < 2:
        raise ValueError(f"labels must be at least two distinct values, got {labels}")
    lookup = {lab: i for i, lab in enumerate(labels)}
    if isinstance(votes, np.ndarray) and votes.ndim == 2 and votes.dtype != object:
        counts = np.stack([(votes == lab).sum(axis=1) for lab in labels], axis=1)
        bad = np.nonzero(counts.sum(axis=1) != votes.shape[1])[0]
        if len(bad):
            i = int(bad[0])
            v = next(x for x in votes[i].tolist() if x not in lookup)
            raise ValueError(
                f"unknown human vote {v!r} for item {i}; expected one of {list(labels)}"
            )
    else:
        lengths = np.fromiter((len(item) for item in votes), dtype=np.int64, count=len(votes))
        flat = [v for item in votes for v in item]
        try:
            codes = np.fromiter(map(lookup.get, flat, repeat(-1)), dtype=np.int64, count=len(flat))
        except TypeError:  # an unhashable vote, e.g. a nested list
            raise ValueError(
                "human votes must be a list of label lists, one list per item"
            ) from None
        if (codes < 0).any():
            pos = int(np.argmax(codes < 0))
            item = int(np.searchsorted(np.cumsum(lengths), pos, side="right"))
            raise ValueError(
                f"unknown human vote {flat[pos]!r} for item {item}; expected one of {list(labels)}"
            )
        item_idx = np.repeat(np.arange(len(votes)), lengths)
        counts = np.bincount(item_idx * len(labels) + codes, minlength=len(votes) * len(labels))
        counts = counts.reshape(len(votes), len(labels))
    n_votes = counts.sum(axis=1)
    if (n_votes == 0).any():
        raise ValueError(f"item {int(np.argmax(n_votes == 0))} has no human votes")
    k = counts.max(axis=1)
    unique = (counts == k[:, None]).sum(axis=1) == 1
    codes = np.where(unique, counts.argmax(axis=1), -1)
    return Majority(codes, k, n_votes, labels)


def majority_labels(
    votes: Sequence[Sequence[Hashable]], labels: Sequence[Hashable] = DEFAULT_LABELS
) -> list[Hashable | None]:
    """Majority label per item, or None where the vote is tied (for agreement_matrix)."""
    m = human_majority(votes, labels)
    return [m.labels[c] if c >= 0 else None for c in m.codes.tolist()]


# ------------------------------------------------------------------ judge accuracy


@dataclasses.dataclass(frozen=True)
class LevelAccuracy(_Result):
    """Accuracy on items where k of N humans agreed (VisIT-Bench fig. 7 bars)."""

    level: str
    n_items: int
    tie_broken: ProportionCI
    ties_excluded: ProportionCI


@dataclasses.dataclass(frozen=True)
class JudgeAccuracy(_Result):
    """Judge vs human majority: overall and by agreement level, two tie policies."""

    overall: ProportionCI
    overall_ties_excluded: ProportionCI
    by_level: dict[str, LevelAccuracy]
    n_items: int
    n_no_majority: int
    n_judge_ties: int
    seed: int


def _tie_break(judge: np.ndarray, n_labels: int, seed: int) -> np.ndarray:
    """Replace ties (-1) by a uniform random label; one draw per item, in item order,
    so a given (seed, item position) always resolves the same way."""
    draws = np.random.default_rng(seed).integers(n_labels, size=len(judge))
    return np.where(judge == -1, draws, judge)


def _judge_correct(
    human_votes, judge, labels, tie_label, seed
) -> tuple[Majority, np.ndarray, np.ndarray, np.ndarray]:
    _same_length(human_votes=human_votes, judge=judge)
    maj = human_majority(human_votes, labels)
    codes = _encode(judge, maj.labels, tie_label, "judge")
    has_majority = maj.codes >= 0
    correct = _tie_break(codes, len(maj.labels), seed) == maj.codes
    return maj, codes, has_majority, correct


def accuracy_vs_majority(
    human_votes: Sequence[Sequence[Hashable]],
    judge: Sequence[Hashable],
    *,
    labels: Sequence[Hashable] = DEFAULT_LABELS,
    tie_label: Hashable = TIE,
    seed: int = 0,
    confidence: float = 0.95,
) -> JudgeAccuracy:
    """How often the judge reproduces the human majority vote.

    Items without a unique human majority are left out (counted in n_no_majority).
    Judge ties are resolved uniformly at random with ``seed`` (as VisIT-Bench does,
    so every metric is scored in the same forced-choice setting) and, separately,
    dropped (``ties_excluded``). Levels are keyed "k/N", e.g. "5/5", "4/5", "3/5".
    """
    maj, codes, has_majority, correct = _judge_correct(human_votes, judge, labels, tie_label, seed)
    decisive = codes >= 0

    def ci(mask: np.ndarray) -> ProportionCI:
        return proportion_ci(int(correct[mask].sum()), int(mask.sum()), confidence)

    by_level: dict[str, LevelAccuracy] = {}
    base = int(maj.n_votes.max()) + 1
    keys = np.unique(maj.k[has_majority] * base + maj.n_votes[has_majority]).tolist()
    level_keys = sorted(
        ((kn // base, kn % base) for kn in keys), key=lambda kn: (-kn[0] / kn[1], -kn[1])
    )
    for k, n in level_keys:
        mask = has_majority & (maj.k == k) & (maj.n_votes == n)
        by_level[f"{k}/{n}"] = LevelAccuracy(
            f"{k}/{n}", int(mask.sum()), ci(mask), ci(mask & decisive)
        )
    return JudgeAccuracy(
        overall=ci(has_majority),
        overall_ties_excluded=ci(has_majority & decisive),
        by_level=by_level,
        n_items=int(has_majority.sum()),
        n_no_majority=int((~has_majority).sum()),
        n_judge_ties=int((has_majority & ~decisive).sum()),
        seed=seed,
    )


@dataclasses.dataclass(frozen=True)
class McNemarResult(_Result):
    """Exact McNemar test: two-sided binomial test on the discordant pairs."""

    n_items: int
    both_correct: int
    only_a_correct: int
    only_b_correct: int
    both_wrong: int
    accuracy_a: float
    accuracy_b: float
    p_value: float


def mcnemar_exact(correct_a: Sequence[bool], correct_b: Sequence[bool]) -> McNemarResult:
    """Paired test that two judges are equally accurate on the same items.

    Only items where exactly one judge is right carry information; under H0 each such
    item favours either judge with probability 1/2, hence an exact binomial test.
    """
    _same_length(correct_a=correct_a, correct_b=correct_b)
    a = np.asarray(correct_a, dtype=bool)
    b = np.asarray(correct_b, dtype=bool)
    only_a, only_b = int((a & ~b).sum()), int((~a & b).sum())
    discordant = only_a + only_b
    p = stats.binomtest(only_a, discordant, 0.5).pvalue if discordant else 1.0
    return McNemarResult(
        len(a),
        int((a & b).sum()),
        only_a,
        only_b,
        int((~a & ~b).sum()),
        float(a.mean()),
        float(b.mean()),
        float(p),
    )


def compare_judges(
    human_votes: Sequence[Sequence[Hashable]],
    judge_a: Sequence[Hashable],
    judge_b: Sequence[Hashable],
    *,
    labels: Sequence[Hashable] = DEFAULT_LABELS,
    tie_label: Hashable = TIE,
    seed: int = 0,
    exclude_ties: bool = False,
) -> McNemarResult:
    """Exact McNemar between two judges' correctness against the human majority.

    Both judges' ties are broken with the same per-item draws, so an item both judges
    tie on is concordant (it tells nothing about which judge is better). With
    ``exclude_ties`` items where either judge tied are dropped instead.
    """
    _same_length(human_votes=human_votes, judge_a=judge_a, judge_b=judge_b)
    _, codes_a, has_maj, correct_a = _judge_correct(human_votes, judge_a, labels, tie_label, seed)
    _, codes_b, _, correct_b = _judge_correct(human_votes, judge_b, labels, tie_label, seed)
    keep = has_maj & ((codes_a >= 0) & (codes_b >= 0) if exclude_ties else True)
    if not keep.any():
        raise ValueError("no items left to compare (no human majority or all tied)")
    return mcnemar_exact(correct_a[keep], correct_b[keep])


# ------------------------------------------------------------------ agreement matrix


@dataclasses.dataclass(frozen=True)
class AgreementMatrix(_Result):
    """matrix[i][j]: fraction of items both sources labelled on which they agree
    (None when they share no item); counts[i][j]: number of shared items."""

    sources: list[str]
    matrix: list[list[float | None]]
    counts: list[list[int]]

    def get(self, a: str, b: str) -> float | None:
        return self.matrix[self.sources.index(a)][self.sources.index(b)]


def agreement_matrix(
    labels_by_source: Mapping[str, Sequence[Hashable | None] | Mapping[Hashable, Hashable | None]],
) -> AgreementMatrix:
    """Pairwise percent agreement between sources (ConvBench app. C tables 3-7).

    Each source gives either a sequence aligned by item position (all the same
    length) or a mapping item_id -> label. ``None`` (or an absent key) = unlabelled.
    """
    if len(labels_by_source) < 2:
        raise ValueError("need at least two sources")
    kinds = {isinstance(v, Mapping) for v in labels_by_source.values()}
    if len(kinds) > 1:
        raise ValueError("give every source as a sequence, or every source as a mapping, not a mix")
    if kinds == {True}:
        items = list(dict.fromkeys(k for v in labels_by_source.values() for k in v))
        columns = {s: [v.get(i) for i in items] for s, v in labels_by_source.items()}
    else:
        _same_length(**{str(s): v for s, v in labels_by_source.items()})
        columns = {s: list(v) for s, v in labels_by_source.items()}
    sources = [str(s) for s in columns]
    cols = list(columns.values())
    k = len(cols)
    matrix: list[list[float | None]] = [[None] * k for _ in range(k)]
    counts = [[0] * k for _ in range(k)]
    for i in range(k):
        for j in range(i, k):
            both = [
                (x, y)
                for x, y in zip(cols[i], cols[j], strict=True)
                if x is not None and y is not None
            ]
            agree = sum(x == y for x, y in both)
            counts[i][j] = counts[j][i] = len(both)
            matrix[i][j] = matrix[j][i] = agree / len(both) if both else None
    return AgreementMatrix(sources, matrix, counts)


# ------------------------------------------------------------------ Krippendorff's alpha


@dataclasses.dataclass(frozen=True)
class AlphaResult(_Result):
    """Krippendorff's alpha with a percentile bootstrap CI over units."""

    alpha: float | None
    level: str
    n_units: int
    n_coders: int
    n_pairable_values: int
    ci: tuple[float, float] | None
    confidence: float
    n_boot: int
    seed: int


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float | np.floating) and math.isnan(v))


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
        flat = arr.astype(float).ravel()
        present = ~np.isnan(flat)
        domain, inv = np.unique(flat[present], return_inverse=True)
        codes = np.full(flat.shape, -1, dtype=np.int64)
        codes[present] = inv
        return codes.reshape(arr.shape), domain
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
            profiles, self.freq = np.unique(units, axis=0, return_counts=True)
        p_idx, col = np.nonzero(profiles >= 0)
        keys, cnt = np.unique(p_idx * n_values + profiles[p_idx, col], return_counts=True)
        prof, val = keys // n_values, keys % n_values  # sorted by profile
        n_prof = len(profiles)
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


def alpha_fast(
    data: Any, level: str = "nominal", value_domain: Sequence[Any] | None = None
) -> float:
    """Exact Krippendorff's alpha from a compressed coincidence matrix (no CI).

    Same value as ``krippendorff.alpha`` (tested on random data) but memory stays
    O(units x coders) even with many distinct values, and it is what the bootstrap
    reuses.
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {LEVELS}")
    codes, values = _to_codes(data, level, value_domain)
    if len(values) < 2:
        raise ValueError("alpha needs at least two distinct values in the data")
    return _alpha_from(_Coincidences(codes, len(values)), level, values)


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
    identical exact computation of ``alpha_fast`` is used. The CI is a percentile
    bootstrap resampling pairable units with replacement (``n_boot`` times, seeded);
    resamples with no variation (alpha undefined) are skipped. ``n_boot=0``: no CI.
    Cost per resample is O(distinct unit profiles), plus O(V^2) for ordinal/ratio.
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {LEVELS}")
    if n_boot < 0:
        raise ValueError("n_boot must be >= 0")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    codes, values = _to_codes(data, level, value_domain)
    if len(values) < 2:
        raise ValueError("alpha needs at least two distinct values in the data")
    co = _Coincidences(codes, len(values))
    if co.n_units * len(values) ** 2 <= 10_000_000:  # the package builds units x V x V arrays
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
        chunk = max(1, 2_000_000 // len(p))  # bound the draws array to ~16 MB
        boots = np.array(
            [
                _alpha_from(co, level, values, w)
                for start in range(0, n_boot, chunk)
                for w in rng.multinomial(co.n_units, p, size=min(chunk, n_boot - start))
            ]
        )
        boots = boots[np.isfinite(boots)]
        if len(boots):
            lo, hi = np.quantile(boots, [(1 - confidence) / 2, (1 + confidence) / 2])
            ci = (float(lo), float(hi))
    n_pairable = int(co.counts.sum(axis=1).A1 @ co.freq)
    return AlphaResult(
        _f(point), level, co.n_units, int(codes.shape[0]), n_pairable, ci, confidence, n_boot, seed
    )


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
    """Fleiss' kappa with its ingredients (mean observed / chance agreement)."""

    kappa: float | None
    n_items: int
    n_raters: int
    categories: list[Any]
    category_proportions: list[float]
    observed_agreement: float
    expected_agreement: float


def fleiss_kappa_from_counts(counts: Any, categories: Sequence[Any] | None = None) -> FleissKappa:
    """Fleiss' kappa from an items x categories table of rating counts.

    Every row must sum to the same number of raters n >= 2: the statistic is defined
    for a fixed n per item, and mixing n silently changes its chance model. For
    unequal or missing ratings use ``krippendorff_alpha`` (nominal) instead.
    """
    table = np.asarray(counts, dtype=float)
    if table.ndim != 2 or table.shape[0] == 0 or table.shape[1] < 2:
        raise ValueError(
            f"counts must be items x categories (>= 1 item, >= 2 categories), got shape {table.shape}"
        )
    if (table < 0).any() or (table != np.round(table)).any():
        raise ValueError("counts must be non-negative integers")
    per_item = table.sum(axis=1)
    if (per_item != per_item[0]).any():
        raise ValueError(
            f"Fleiss' kappa needs the same number of raters per item; got between "
            f"{int(per_item.min())} and {int(per_item.max())}. Use krippendorff_alpha for unequal counts."
        )
    n = per_item[0]
    if n < 2:
        raise ValueError("Fleiss' kappa needs at least 2 raters per item")
    p_j = table.sum(axis=0) / table.sum()
    p_i = ((table * table).sum(axis=1) - n) / (n * (n - 1))
    p_bar, p_e = float(p_i.mean()), float((p_j * p_j).sum())
    kappa = (p_bar - p_e) / (1 - p_e) if p_e < 1 else math.nan
    cats = list(categories) if categories is not None else list(range(table.shape[1]))
    if len(cats) != table.shape[1]:
        raise ValueError(f"{len(cats)} categories given for {table.shape[1]} columns")
    return FleissKappa(_f(kappa), table.shape[0], int(n), cats, p_j.tolist(), p_bar, p_e)


def fleiss_kappa(
    ratings: Sequence[Sequence[Hashable]], categories: Sequence[Hashable] | None = None
) -> FleissKappa:
    """Fleiss' kappa from per-item label lists (``ratings[i]`` = the labels of item i).

    Raters need not be the same people across items, but every item needs the same
    number of labels (see ``fleiss_kappa_from_counts``).
    """
    if len(ratings) == 0:
        raise ValueError("ratings is empty")
    seen = [v for item in ratings for v in item]
    if categories is not None:
        cats = list(categories)
    else:
        try:
            cats = sorted(set(seen))
        except TypeError:  # mixed types: any stable order will do
            cats = sorted(set(seen), key=repr)
    col = {c: j for j, c in enumerate(cats)}
    table = np.zeros((len(ratings), len(cats)), dtype=np.int64)
    for i, item in enumerate(ratings):
        for v in item:
            if v not in col:
                raise ValueError(f"unknown label {v!r} in item {i}; categories are {cats}")
            table[i, col[v]] += 1
    if len(cats) < 2:
        cats = cats + ["<other>"]
        table = np.hstack([table, np.zeros((len(ratings), 1), dtype=np.int64)])
    return fleiss_kappa_from_counts(table, cats)


@dataclasses.dataclass(frozen=True)
class CohenKappa(_Result):
    """Cohen's kappa between two annotators on their shared items."""

    annotator_a: str
    annotator_b: str
    kappa: float | None
    n_shared: int
    observed_agreement: float
    expected_agreement: float


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


def pairwise_cohen_kappa(
    annotations: Mapping[Hashable, Mapping[Hashable, Hashable | None]], min_shared: int = 1
) -> list[CohenKappa]:
    """Cohen's kappa for every pair of annotators sharing >= ``min_shared`` items.

    ``annotations`` is {annotator: {item: label}}; None labels count as unlabelled.
    """
    if len(annotations) < 2:
        raise ValueError("need at least two annotators")
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
            k, po, pe = cohen_kappa([la[i] for i in shared], [lb[i] for i in shared])
            out.append(CohenKappa(str(names[x]), str(names[y]), k, len(shared), po, pe))
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
    by_item: dict[Hashable, Counter] = {}
    for items in annotations.values():
        for it, lab in items.items():
            if lab is not None:
                by_item.setdefault(it, Counter())[lab] += 1
    out = {}
    for a, items in annotations.items():
        agree = total = ties = alone = 0
        for it, lab in items.items():
            if lab is None:
                continue
            others = by_item[it].copy()
            others[lab] -= 1
            ranked = [(c, n) for c, n in others.most_common() if n > 0]
            if not ranked:
                alone += 1
            elif len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
                ties += 1
            else:
                total += 1
                agree += ranked[0][0] == lab
        out[str(a)] = LeaveOneOutAgreement(
            str(a), proportion_ci(agree, total, confidence), ties, alone
        )
    return out


# ------------------------------------------------------------------ correlations


@dataclasses.dataclass(frozen=True)
class Correlation(_Result):
    """Pearson, Kendall tau-b and Spearman with two-sided p-values (None if undefined)."""

    n: int
    pearson: float | None
    pearson_p: float | None
    kendall_tau: float | None
    kendall_p: float | None
    spearman: float | None
    spearman_p: float | None


def _correlate(x: np.ndarray, y: np.ndarray, pearson: bool = True) -> Correlation:
    if len(x) < 2:
        raise ValueError(f"need at least 2 complete pairs to correlate, got {len(x)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input: scipy warns and returns NaN -> None
        pr = stats.pearsonr(x, y) if pearson else None
        kt = stats.kendalltau(x, y)
        sr = stats.spearmanr(x, y)
    return Correlation(
        len(x),
        _f(pr.statistic) if pr else None,
        _f(pr.pvalue) if pr else None,
        _f(kt.statistic),
        _f(kt.pvalue),
        _f(sr.statistic),
        _f(sr.pvalue),
    )


def _numeric_pairs(a: Sequence[Any], b: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    _same_length(human=a, judge=b)
    try:
        x = np.array([np.nan if v is None else v for v in a], dtype=float)
        y = np.array([np.nan if v is None else v for v in b], dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"scores must be numbers (None = missing): {exc}") from None
    keep = ~(np.isnan(x) | np.isnan(y))
    return x[keep], y[keep]


def score_correlation(human: Sequence[float | None], judge: Sequence[float | None]) -> Correlation:
    """Instance-level correlation of human and judge scores (Prometheus-Vision §3).

    Pairs where either score is None/NaN are dropped; ``n`` is what remains.
    """
    return _correlate(*_numeric_pairs(human, judge))


@dataclasses.dataclass(frozen=True)
class SystemCorrelation(_Result):
    """Rank agreement between two model -> score dicts over their common models."""

    models: list[str]
    n: int
    spearman: float | None
    spearman_p: float | None
    kendall_tau: float | None
    kendall_p: float | None


def system_correlation(a: Mapping[str, float], b: Mapping[str, float]) -> SystemCorrelation:
    """Spearman rho and Kendall tau between two rankings or ratings of models.

    Both dicts must point the same way (two score dicts, or two rank dicts), else the
    sign flips. Models present in only one dict are ignored.
    """
    common = [m for m in a if m in b and a[m] is not None and b[m] is not None]
    if len(common) < 2:
        raise ValueError(f"need at least 2 models in common, got {common}")
    c = _correlate(
        np.array([a[m] for m in common], float),
        np.array([b[m] for m in common], float),
        pearson=False,
    )
    return SystemCorrelation(
        [str(m) for m in common], c.n, c.spearman, c.spearman_p, c.kendall_tau, c.kendall_p
    )


# ------------------------------------------------------------------ biases


@dataclasses.dataclass(frozen=True)
class PositionBias(_Result):
    """How often the first-shown response wins, and verdict stability under swapping."""

    n_verdicts: int
    n_ties: int
    first_rate: ProportionCI
    first_rate_p: float | None
    n_pairs: int
    consistency: ProportionCI | None


def position_bias(
    verdicts: Sequence[Hashable],
    swapped_verdicts: Sequence[Hashable] | None = None,
    *,
    labels: Sequence[Hashable] = DEFAULT_LABELS,
    tie_label: Hashable = TIE,
    confidence: float = 0.95,
) -> PositionBias:
    """Position bias of a pairwise judge.

    ``first_rate``: share of decisive verdicts choosing the first position (labels[0],
    "A"), pooled over both orderings, with a binomial test against 1/2.
    ``swapped_verdicts[i]`` is the verdict on pair i shown in reverse order, in
    positional labels; it is un-swapped (A<->B) and ``consistency`` is the share of
    pairs with the same verdict both ways (tie-tie counts as consistent).
    """
    labels = tuple(labels)
    if len(labels) != 2:
        raise ValueError("position bias needs exactly two positional labels")
    if len(verdicts) == 0:
        raise ValueError("verdicts is empty")
    first = _encode(verdicts, labels, tie_label, "verdict")
    pooled = first
    consistency = None
    if swapped_verdicts is not None:
        _same_length(verdicts=verdicts, swapped_verdicts=swapped_verdicts)
        second = _encode(swapped_verdicts, labels, tie_label, "swapped verdict")
        pooled = np.concatenate([first, second])
        unswapped = np.where(second >= 0, 1 - second, second)
        consistency = proportion_ci(int((unswapped == first).sum()), len(first), confidence)
    decisive = pooled[pooled >= 0]
    n_first = int((decisive == 0).sum())
    p = stats.binomtest(n_first, len(decisive), 0.5).pvalue if len(decisive) else None
    return PositionBias(
        len(pooled),
        int((pooled == -1).sum()),
        proportion_ci(n_first, len(decisive), confidence),
        _f(p) if p is not None else None,
        len(first),
        consistency,
    )


@dataclasses.dataclass(frozen=True)
class LengthBin(_Result):
    """Longer-response win rate for |len_a - len_b| in [low, high)."""

    low: float
    high: float
    n_items: int
    n_ties: int
    longer_wins: ProportionCI


@dataclasses.dataclass(frozen=True)
class LengthBias(_Result):
    """Win rate of the longer response, overall and by length-difference bin."""

    overall: ProportionCI
    bins: list[LengthBin]
    n_equal_length: int
    n_ties: int
    n_out_of_range: int


def length_bias(
    len_a: Sequence[float],
    len_b: Sequence[float],
    verdicts: Sequence[Hashable],
    *,
    bins: Sequence[float] | int = 4,
    labels: Sequence[Hashable] = DEFAULT_LABELS,
    tie_label: Hashable = TIE,
    confidence: float = 0.95,
) -> LengthBias:
    """Does the judge (or the human majority) prefer the longer response?

    Pairs of equal length have no "longer" side and are left out; ties are left out
    of the win rates but counted. ``bins`` is either explicit edges over the absolute
    length difference (last bin closed) or a number of quantile bins.
    """
    _same_length(len_a=len_a, len_b=len_b, verdicts=verdicts)
    labels = tuple(labels)
    if len(labels) != 2:
        raise ValueError("length bias needs exactly two labels (A, B)")
    a, b = np.asarray(len_a, dtype=float), np.asarray(len_b, dtype=float)
    if np.isnan(a).any() or np.isnan(b).any() or (a < 0).any() or (b < 0).any():
        raise ValueError("lengths must be non-negative numbers")
    v = _encode(verdicts, labels, tie_label, "verdict")
    diff = np.abs(a - b)
    unequal = diff > 0
    decisive = unequal & (v >= 0)
    longer_won = np.where(a > b, v == 0, v == 1)
    if isinstance(bins, int | np.integer):
        if bins < 1:
            raise ValueError("bins must be >= 1")
        pos = diff[unequal]
        edges = (
            np.unique(np.quantile(pos, np.linspace(0, 1, bins + 1)))
            if len(pos)
            else np.array([0.0, 0.0])
        )
    else:
        edges = np.asarray(bins, dtype=float)
        if len(edges) < 2 or (np.diff(edges) <= 0).any():
            raise ValueError("bin edges must be at least two strictly increasing numbers")
    out_bins = []
    in_any = np.zeros(len(diff), dtype=bool)
    for i, (lo, hi) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
        last = i == len(edges) - 2
        mask = unequal & (diff >= lo) & ((diff <= hi) if last else (diff < hi))
        in_any |= mask
        dm = mask & decisive
        out_bins.append(
            LengthBin(
                float(lo),
                float(hi),
                int(mask.sum()),
                int((mask & (v < 0)).sum()),
                proportion_ci(int(longer_won[dm].sum()), int(dm.sum()), confidence),
            )
        )
    return LengthBias(
        proportion_ci(int(longer_won[decisive].sum()), int(decisive.sum()), confidence),
        out_bins,
        int((~unequal).sum()),
        int((unequal & (v < 0)).sum()),
        int((unequal & ~in_any).sum()),
    )


@dataclasses.dataclass(frozen=True)
class LengthsByScore(_Result):
    """Response lengths grouped by the score they got (Prometheus-Vision fig. 11)."""

    lengths: dict[Any, list[float]]
    summary: dict[Any, dict[str, float]]
    spearman: float | None
    spearman_p: float | None


def lengths_by_score(scores: Sequence[Any], lengths: Sequence[float]) -> LengthsByScore:
    """Per-score length lists for box plots, five-number summaries, and Spearman
    rho between score and length as a one-number length-bias indicator."""
    _same_length(scores=scores, lengths=lengths)
    groups: dict[Any, list[float]] = {}
    for s, n in zip(scores, lengths, strict=True):
        if s is None or n is None:
            continue
        groups.setdefault(s, []).append(float(n))
    if not groups:
        raise ValueError("no (score, length) pair is complete")
    groups = dict(sorted(groups.items()))
    summary = {}
    for s, vals in groups.items():
        q = np.quantile(vals, [0, 0.25, 0.5, 0.75, 1])
        summary[s] = {
            "n": len(vals),
            "min": q[0],
            "q1": q[1],
            "median": q[2],
            "q3": q[3],
            "max": q[4],
            "mean": float(np.mean(vals)),
        }
    try:
        x, y = _numeric_pairs(scores, lengths)
        c = _correlate(x, y, pearson=False) if len(x) >= 2 else None
    except ValueError:  # non-numeric scores: no correlation
        c = None
    return LengthsByScore(groups, summary, c.spearman if c else None, c.spearman_p if c else None)


@dataclasses.dataclass(frozen=True)
class SelfPreference(_Result):
    """Family-vs-other win rate per the judge and per humans, on the same items."""

    n_items: int
    judge_win_rate: ProportionCI
    human_win_rate: ProportionCI
    difference: float | None
    paired_test: McNemarResult | None
    n_excluded: int


def self_preference(
    model_a: Sequence[str],
    model_b: Sequence[str],
    judge_verdicts: Sequence[Hashable],
    human_verdicts: Sequence[Hashable | None],
    family: Collection[str] | Callable[[str], bool],
    *,
    labels: Sequence[Hashable] = DEFAULT_LABELS,
    tie_label: Hashable = TIE,
    confidence: float = 0.95,
) -> SelfPreference:
    """Self-enhancement bias: does a judge favour its own family more than humans do?

    Uses comparisons where exactly one side belongs to ``family`` (a set of model
    names or a predicate) and both judge and human gave a decisive verdict (others
    are counted in ``n_excluded``). ``difference`` = judge - human win rate of the
    family model; ``paired_test`` is an exact McNemar on items where they disagree.
    """
    _same_length(
        model_a=model_a,
        model_b=model_b,
        judge_verdicts=judge_verdicts,
        human_verdicts=human_verdicts,
    )
    labels = tuple(labels)
    if len(labels) != 2:
        raise ValueError("self preference needs exactly two labels (A, B)")
    in_fam = family if callable(family) else (lambda m, s=frozenset(family): m in s)
    fa = np.array([bool(in_fam(m)) for m in model_a])
    fb = np.array([bool(in_fam(m)) for m in model_b])
    j = _encode(judge_verdicts, labels, tie_label, "judge", allow_missing=True)
    h = _encode(human_verdicts, labels, tie_label, "human", allow_missing=True)
    keep = (fa != fb) & (j >= 0) & (h >= 0)
    fam_side = np.where(fa, 0, 1)[keep]
    jw, hw = j[keep] == fam_side, h[keep] == fam_side
    n = int(keep.sum())
    jr, hr = (
        proportion_ci(int(jw.sum()), n, confidence),
        proportion_ci(int(hw.sum()), n, confidence),
    )
    return SelfPreference(
        n,
        jr,
        hr,
        (jr.estimate - hr.estimate) if n else None,
        mcnemar_exact(jw, hw) if n else None,
        len(keep) - n,
    )


@dataclasses.dataclass(frozen=True)
class ModelWinRates(_Result):
    """Win rate vs the reference per humans and per the judge; gap = judge - human."""

    n_human: int
    human_win_rate: float | None
    n_judge: int
    judge_win_rate: float | None
    gap: float | None


@dataclasses.dataclass(frozen=True)
class WinRateGap(_Result):
    """Per-model gaps plus their mean absolute size and the system-level agreement."""

    per_model: dict[str, ModelWinRates]
    mean_abs_gap: float | None
    system: SystemCorrelation | None


def _outcomes(values: Sequence[Any], what: str) -> np.ndarray:
    out = np.empty(len(values))
    for i, v in enumerate(values):
        if _is_missing(v):
            out[i] = np.nan
        elif isinstance(v, bool | np.bool_) or v in (0, 0.5, 1):
            out[i] = float(v)
        else:
            raise ValueError(
                f"{what} outcome {v!r} at index {i}: use 1/True (win), 0/False (loss), 0.5 (tie), None"
            )
    return out


def win_rate_gap(
    models: Sequence[str], human_outcomes: Sequence[Any], judge_outcomes: Sequence[Any]
) -> WinRateGap:
    """Gap between human and automatic win rate against the reference, per model.

    Row i is one (model vs reference) comparison; outcomes are 1/True = model won,
    0/False = lost, 0.5 = tie, None = not judged by that source. Each rate uses the
    rows that source judged.
    """
    _same_length(models=models, human_outcomes=human_outcomes, judge_outcomes=judge_outcomes)
    h, j = _outcomes(human_outcomes, "human"), _outcomes(judge_outcomes, "judge")
    names = np.asarray([str(m) for m in models], dtype=object)
    per_model = {}
    for m in dict.fromkeys(names.tolist()):
        sel = names == m
        hv, jv = h[sel][~np.isnan(h[sel])], j[sel][~np.isnan(j[sel])]
        hr = float(hv.mean()) if len(hv) else None
        jr = float(jv.mean()) if len(jv) else None
        gap = jr - hr if hr is not None and jr is not None else None
        per_model[m] = ModelWinRates(len(hv), hr, len(jv), jr, gap)
    gaps = [r.gap for r in per_model.values() if r.gap is not None]
    both = {m: r for m, r in per_model.items() if r.gap is not None}
    system = None
    if len(both) >= 2:
        system = system_correlation(
            {m: r.human_win_rate for m, r in both.items()},
            {m: r.judge_win_rate for m, r in both.items()},
        )
    return WinRateGap(per_model, float(np.mean(np.abs(gaps))) if gaps else None, system)
