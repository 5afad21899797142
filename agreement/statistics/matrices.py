"""Pairwise percent-agreement matrices between label sources (ConvBench appendix C)."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from ._common import (
    _Result,
    _same_length,
)


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
    cols = _coded(list(columns.values()))
    k = len(cols)
    matrix: list[list[float | None]] = [[None] * k for _ in range(k)]
    counts = [[0] * k for _ in range(k)]
    for i in range(k):
        for j in range(i, k):
            if isinstance(cols[i], np.ndarray):
                both = (cols[i] >= 0) & (cols[j] >= 0)
                n, agree = int(both.sum()), int((cols[i][both] == cols[j][both]).sum())
            else:
                pairs = [(x, y) for x, y in zip(cols[i], cols[j], strict=True)
                         if x is not None and y is not None]
                n, agree = len(pairs), sum(x == y for x, y in pairs)
            counts[i][j] = counts[j][i] = n
            matrix[i][j] = matrix[j][i] = agree / n if n else None
    return AgreementMatrix(sources, matrix, counts)


def _coded(cols: list[list]) -> list:
    """The columns as integer codes (-1: unlabelled) when every label is a string, so that
    equal codes are exactly equal labels and each pair of sources is compared at once (45
    pairs of 160K items at 1M judgments); otherwise as they are."""
    codes: dict[str, int] = {}
    code = codes.setdefault
    out = []
    for col in cols:
        if not all(x is None or type(x) is str for x in col):
            return cols
        out.append(np.fromiter((-1 if x is None else code(x, len(codes)) for x in col),
                               dtype=np.int64, count=len(col)))
    return out
