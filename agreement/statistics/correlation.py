"""Instance-level and system-level correlation between human and judge scores."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from ._common import (
    _f,
    _Result,
    _same_length,
)


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


def _complete(values: Sequence[Any]) -> np.ndarray:
    """Which entries are scores (not None / NaN)."""
    return np.array([v is not None and not np.isnan(float(v)) for v in values], dtype=bool)


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


@dataclasses.dataclass(frozen=True)
class SystemScoreCorrelation(_Result):
    """System level: per model, the mean human and mean judge score over the same
    responses, and Pearson / Kendall tau-b / Spearman across models."""

    models: list[str]
    human_means: list[float]
    judge_means: list[float]
    n_responses: list[int]
    correlation: Correlation


def system_score_correlation(
    models: Sequence[str], human: Sequence[float | None], judge: Sequence[float | None]
) -> SystemScoreCorrelation:
    """Correlation of per-model mean scores (aligned per-response inputs).

    ``models[i]`` produced the response that humans scored ``human[i]`` (e.g. the mean of
    its human scores) and the judge scored ``judge[i]``. Responses missing either score
    are dropped first, so both means of a model cover exactly the same responses. Needs
    at least two models; models are listed in sorted order.
    """
    _same_length(models=models, human=human, judge=judge)
    x, y = _numeric_pairs(human, judge)  # checks the inputs are numbers
    keep = _complete(human) & _complete(judge)
    names = [str(m) for m, k in zip(models, keep, strict=True) if k]
    order = sorted(set(names))
    if len(order) < 2:
        raise ValueError(f"need at least 2 models with scored responses, got {order}")
    idx = {m: k for k, m in enumerate(order)}
    group = np.array([idx[m] for m in names])
    n = np.bincount(group, minlength=len(order))
    hm = np.bincount(group, weights=x, minlength=len(order)) / n
    jm = np.bincount(group, weights=y, minlength=len(order)) / n
    return SystemScoreCorrelation(
        order, hm.tolist(), jm.tolist(), n.tolist(), _correlate(hm, jm)
    )
