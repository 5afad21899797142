"""Score leaderboards: mean grade per model with a seeded bootstrap 95 % CI (no Django import).

The graded counterpart of ``judging.ratings`` (Prometheus-Vision's rubric 1–5, ConvBench's direct
0–10, human rubric scores): pure numpy so it is tested and benchmarked without a database, and
the same function rates humans and every grading judge. Scales differ between sources, so a
board is only ever computed over one source's grades; the caller says which.

Conventions:

* Input rows are ``(model, item, score)``; ``item`` is any hashable naming what was graded (a
  response and turn). An item graded several times (five workers) is averaged first, so a
  model's mean is over items, each counting once, and ``n`` is its number of items.
* The CI is the 2.5 / 97.5 percentile of ``rounds`` bootstrap means that resample the model's
  items with replacement (grades of one item are not independent, so items are the unit).
  Draws come from one ``np.random.default_rng(seed)``, models in sorted order, so a board does
  not depend on row order. ``rounds=0`` collapses the CI to the mean.
* Rank: 1 + number of models whose CI lower bound is above this model's upper bound (as
  ``ratings.ranks_from_ci``); rows are sorted by mean, best first.
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .ratings import ranks_from_ci

_CELLS = 2_000_000  # bounds the (rounds chunk × distinct values) draw matrix


@dataclass(frozen=True)
class ScoreRow:
    model: str
    mean: float
    ci_low: float
    ci_high: float
    rank: int
    n: int  # items graded
    judgments: int  # grades behind them


def item_means(rows: Iterable[Sequence]) -> dict[str, tuple[np.ndarray, int]]:
    """``{model: (per-item mean grades, number of grades)}``; rejects non-finite grades."""
    grades: dict[str, dict] = defaultdict(lambda: defaultdict(list))
    for model, item, score in rows:
        score = float(score)
        if not math.isfinite(score):
            raise ValueError(f"grade {score!r} of {model!r} is not a finite number")
        grades[model][item].append(score)
    return {model: (np.array([sum(v) / len(v) for v in per.values()]),
                    sum(len(v) for v in per.values()))
            for model, per in grades.items()}


def bootstrap_means(values: np.ndarray, rounds: int, rng: np.random.Generator) -> np.ndarray:
    """``rounds`` means of ``len(values)`` values drawn with replacement.

    Drawn as multinomial counts over the distinct values (grades take few), which has exactly
    the distribution of resampling the values themselves at a fraction of the memory.
    """
    distinct, counts = np.unique(values, return_counts=True)
    n = len(values)
    chunk = max(1, _CELLS // len(distinct))
    out = [np.empty(0)]
    for start in range(0, rounds, chunk):
        draws = rng.multinomial(n, counts / n, size=min(chunk, rounds - start))
        out.append(draws @ distinct / n)
    return np.concatenate(out)


def score_board(rows: Iterable[Sequence], rounds: int = 1000, seed: int = 0) -> list[ScoreRow]:
    """One source's grades as a board: mean, bootstrap 95 % CI, rank, n, best first."""
    if rounds < 0:
        raise ValueError("bootstrap rounds must be >= 0")
    per_model = item_means(rows)
    models = sorted(per_model, key=str)
    rng = np.random.default_rng(seed)
    means, lows, highs = [], [], []
    for model in models:
        values = per_model[model][0]
        mean = float(values.mean())
        if rounds:
            lo, hi = np.percentile(bootstrap_means(values, rounds, rng), [2.5, 97.5])
        else:
            lo = hi = mean
        means.append(mean)
        lows.append(float(lo))
        highs.append(float(hi))
    ranks = ranks_from_ci(lows, highs) if models else []
    board = [ScoreRow(model, means[i], lows[i], highs[i], int(ranks[i]),
                      len(per_model[model][0]), per_model[model][1])
             for i, model in enumerate(models)]
    return sorted(board, key=lambda row: (-row.mean, str(row.model)))
