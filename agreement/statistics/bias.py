"""Judge biases: position, length, self-preference, and the human-vs-judge win-rate gap."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Hashable, Sequence
from typing import Any

import numpy as np
from scipy import stats

from ._common import (
    DEFAULT_LABELS,
    TIE,
    _encode,
    _f,
    _is_missing,
    _Result,
    _same_length,
)
from .correlation import (
    SystemCorrelation,
    _correlate,
    _numeric_pairs,
    system_correlation,
)
from .proportions import McNemarResult, ProportionCI, mcnemar_exact, proportion_ci


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
