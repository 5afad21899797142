"""Values a database column cannot hold, found before writing.

PostgreSQL refuses NUL (0x00) in text and jsonb and NaN/Infinity in jsonb, and no UTF-8
database can store a lone surrogate (reachable through JSON escapes such as ``"\\ud800"``).
Importers check parsed values with :func:`storage_problem` so a bad row is refused by name
instead of crashing on insert, and so the outcome is the same on SQLite and PostgreSQL.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any


def storage_problem(value: Any, _depth: int = 0) -> str | None:
    """Why some string or number in ``value`` (nested lists/dicts/dataclasses, keys too)
    cannot be stored, or None."""
    if isinstance(value, str):
        if "\x00" in value:
            return "text contains a NUL (0x00) character"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "text contains an invalid Unicode character (a lone surrogate)"
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return "a number is not finite (NaN or Infinity)"
    if _depth > 50:
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = [getattr(value, f.name) for f in dataclasses.fields(value)]
    if isinstance(value, dict):
        value = [item for pair in value.items() for item in pair]
    if isinstance(value, list | tuple | set):
        for item in value:
            if (problem := storage_problem(item, _depth + 1)) is not None:
                return problem
    return None
