"""Numbers rounded for reading on the report pages: shares as percentages, ratings as whole
numbers, coefficients to two decimals, p-values to two significant digits. Only the HTML rounds;
report.json and the CSVs keep full precision (``tables.to_csv`` writes ``repr``). Pure."""
from __future__ import annotations

from . import labels


def readable(column: str, value, *, share: bool = False) -> str:
    """``value`` of ``column`` as text for a table cell (``share``: a fraction in [0, 1]
    whatever the column is called, e.g. an agreement-matrix cell)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(readable(column, v, share=share) for v in value)
    if not isinstance(value, float):
        return f"{value:,}" if isinstance(value, int) and abs(value) >= 10_000 else str(value)
    stem = labels.base_column(column)[0]
    if share or stem in labels.PERCENT:
        return f"{100 * value:.1f}%"
    if stem in labels.DIFFERENCES:
        return f"{100 * value:+.1f} pp"
    if stem in labels.P_VALUES:
        return "< 0.001" if value < 0.001 else f"{value:.2g}"
    if stem in labels.RATINGS or (stem in ("ci_low", "ci_high") and abs(value) >= 100):
        return f"{value:,.0f}"
    if value.is_integer() and abs(value) < 1e15:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def full(value) -> str:
    """The value at full precision (a cell's tooltip)."""
    if isinstance(value, float):
        return repr(value)
    return "" if value is None else str(value)
