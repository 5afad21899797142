"""ConvBench Table 1 / Table 8 arithmetic (pure Python, no Django).

Inputs are per-cell values ``cells[(condition, turn)]`` where condition is 'generated',
'perfect_perception' or 'perfect_perception_reasoning' and turn is '1', '2', '3' or 'overall';
values are win rates against the human reference in percent (pairwise, Table 1) or mean 0–10
grades (direct grading, Table 8).

Definitions (ConvBench §4–5, captions of Tables 1 and 8):
S1, S2, S3, S_O (as generated); R2 = (S1 + S2 + S3) / 3; R1 = (R2 + S_O) / 2;
Ŝ2, Ŝ3, Ŝ_O under perfect perception with deltas Ŝ2 − S2, Ŝ3 − S3, Ŝ_O − S_O;
S̃3, S̃_O under perfect perception and reasoning with deltas S̃3 − Ŝ3, S̃_O − Ŝ_O.
A missing input makes the values that need it ``None``.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

G, PP, PPR = "generated", "perfect_perception", "perfect_perception_reasoning"
COLUMNS = ("R1", "R2", "S1", "S2", "S3", "SO", "S2_hat", "S3_hat", "SO_hat", "S3_tilde",
           "SO_tilde")
DELTAS = {"S2_hat": "S2", "S3_hat": "S3", "SO_hat": "SO", "S3_tilde": "S3_hat",
          "SO_tilde": "SO_hat"}
HEADERS = {"R1": "R1", "R2": "R2", "S1": "S1", "S2": "S2", "S3": "S3", "SO": "S_O",
           "S2_hat": "Ŝ2", "S3_hat": "Ŝ3", "SO_hat": "Ŝ_O", "S3_tilde": "S̃3",
           "SO_tilde": "S̃_O"}


def _sub(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _mean(values: Iterable[float | None]) -> float | None:
    values = list(values)
    return None if any(v is None for v in values) else sum(values) / len(values)


def table1_row(cells: Mapping[tuple[str, str], float | None]) -> dict[str, float | None]:
    """All Table 1 columns plus ``<col>_delta`` for the five ablation columns."""
    c = cells.get
    row = {"S1": c((G, "1")), "S2": c((G, "2")), "S3": c((G, "3")), "SO": c((G, "overall")),
           "S2_hat": c((PP, "2")), "S3_hat": c((PP, "3")), "SO_hat": c((PP, "overall")),
           "S3_tilde": c((PPR, "3")), "SO_tilde": c((PPR, "overall"))}
    row["R2"] = _mean([row["S1"], row["S2"], row["S3"]])
    row["R1"] = _mean([row["R2"], row["SO"]])
    for col, base in DELTAS.items():
        row[f"{col}_delta"] = _sub(row[col], row[base])
    return {key: row[key] for key in (*COLUMNS, *(f"{c}_delta" for c in DELTAS))}


def win_rate_percent(outcomes: Iterable[float]) -> float | None:
    """Mean of per-comparison outcomes for the model (1 win, 0.5 tie, 0 loss) × 100."""
    outcomes = list(outcomes)
    return 100.0 * sum(outcomes) / len(outcomes) if outcomes else None


def mean_or_none(values: Iterable[float]) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def format_row(model: str, row: Mapping[str, float | None]) -> list[str]:
    """Cells as printed in the paper: ``47.31(+7.97)`` for the ablation columns."""
    def num(v):
        return "—" if v is None else f"{v:.2f}"

    out = [model]
    for col in COLUMNS:
        cell = num(row[col])
        if col in DELTAS and row[col] is not None and row[f"{col}_delta"] is not None:
            cell += f"({row[f'{col}_delta']:+.2f})"
        out.append(cell)
    return out
