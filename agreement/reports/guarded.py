"""Running one statistic of a report so that a statistic undefined on the data (too few items,
a constant column, ...) becomes ``{"error": why}`` in the report instead of failing it."""
from __future__ import annotations

import warnings


def statistic_or_error(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` as a plain value (``to_dict()`` when it has one), or
    ``{"error": why}`` when it raises ValueError / ZeroDivisionError; warnings are silenced."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*args, **kwargs)
        return out.to_dict() if hasattr(out, "to_dict") else out
    except (ValueError, ZeroDivisionError) as exc:
        return {"error": str(exc)}
