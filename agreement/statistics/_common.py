"""Shared helpers: label constants, the JSON-ready result base, input encoding and checks."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable, Mapping, Sequence
from itertools import repeat
from typing import Any

import numpy as np

DEFAULT_LABELS = ("A", "B")
TIE = "tie"
LEVELS = ("nominal", "ordinal", "interval", "ratio")


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


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float | np.floating) and math.isnan(v))
