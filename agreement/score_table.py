"""A metric's cached scores, {response id: score}, held as two NumPy arrays indexed by response
id instead of a dict of Python floats: a report keeps every metric's scores of every response
while it computes (six dicts of 240K floats at 1M judgments). Pure NumPy, no Django."""
from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

SPARSE = 4  # ids spread wider than this many slots per score: a dict is smaller


class ScoreTable(Mapping):
    """Read-only {response id: score}; a score is the float64 stored, returned as a Python
    float (the same bits a dict of the cursor's floats held). Iterates in id order."""

    def __init__(self, ids: np.ndarray, scores: np.ndarray):
        size = int(ids.max()) + 1 if len(ids) else 0
        self._has = np.zeros(size, dtype=bool)
        self._scores = np.zeros(size)
        self._has[ids] = True
        self._scores[ids] = scores
        self._len = int(self._has.sum())

    @staticmethod
    def fits(ids: np.ndarray) -> bool:
        """Whether ``ids`` are dense enough for a table to be smaller than a dict."""
        return not len(ids) or int(ids.max()) + 1 <= SPARSE * len(ids) + 1024

    def __getitem__(self, response_id: int) -> float:
        if 0 <= response_id < len(self._has) and self._has[response_id]:
            return float(self._scores[response_id])
        raise KeyError(response_id)

    def __contains__(self, response_id) -> bool:
        return (isinstance(response_id, int | np.integer) and 0 <= response_id < len(self._has)
                and bool(self._has[response_id]))

    def lookup(self, response_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(which of ``response_ids`` have a score, their scores: 0 where none), for a whole
        array of ids at once (``in`` and ``[]`` one id at a time cost seconds at 1M)."""
        ids = np.asarray(response_ids, dtype=np.int64)
        has = np.zeros(len(ids), dtype=bool)
        inside = (ids >= 0) & (ids < len(self._has))
        has[inside] = self._has[ids[inside]]
        scores = np.zeros(len(ids))
        scores[has] = self._scores[ids[has]]
        return has, scores

    def __iter__(self) -> Iterator[int]:
        return iter(np.flatnonzero(self._has).tolist())

    def __len__(self) -> int:
        return self._len

    def __repr__(self) -> str:
        return f"ScoreTable({len(self)} scores)"
