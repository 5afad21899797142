"""Leaderboards per judge and split, computed by the same pure functions for every judge
(``judging.ratings``), so the human and the automatic leaderboards are comparable."""
import csv
import io
import warnings
from dataclasses import asdict, dataclass, field

from . import ratings
from .selectors import (
    RATING_ROW,
    pairwise_judgments,
    pairwise_judgments_qs,
    reference_model_name,
)

CSV_COLUMNS = ["rank", "model", "rating", "ci_low", "ci_high", "elo", "matches",
               "win_rate_vs_reference", "n_vs_reference", "is_reference"]


@dataclass
class Leaderboard:
    judge: str
    split: str
    judgments: int
    reference: str | None
    bootstrap_rounds: int
    rows: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def leaderboard_build(judge: str = "human", split: str = "all", *, exclude_blocked: bool = False,
                      bootstrap_rounds: int = 1000, seed: int = 0) -> Leaderboard:
    """Bradley-Terry rating with bootstrap 95 % CI and rank, online Elo, matches and the win
    rate against the human-verified reference (with n), best first."""
    rows = pairwise_judgments(judge=judge, split=split, exclude_blocked=exclude_blocked)
    reference = reference_model_name()
    board = Leaderboard(judge, split, len(rows), reference, bootstrap_rounds)
    if not rows:
        return board
    names = {r[0] for r in rows} | {r[1] for r in rows}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ratings.RatingsWarning)
        table = ratings.leaderboard(rows, reference=reference if reference in names else None,
                                    bootstrap_rounds=bootstrap_rounds, seed=seed)
    board.warnings = sorted({str(w.message) for w in caught})
    board.rows = [{"rank": r.rank, "model": r.model, "rating": round(r.bt_rating, 1),
                   "ci_low": round(r.ci_low, 1), "ci_high": round(r.ci_high, 1),
                   "elo": round(r.elo, 1), "matches": r.matches,
                   "win_rate_vs_reference": (None if r.win_rate_vs_reference is None
                                             else round(r.win_rate_vs_reference, 4)),
                   "n_vs_reference": r.n_vs_reference, "is_reference": r.model == reference}
                  for r in table]
    return board


def category_win_rates(judge: str = "human", *, exclude_blocked: bool = False) -> dict:
    """{category: {model: (win rate vs reference, n)}} (VisIT-Bench fig. 8)."""
    reference = reference_model_name()
    by_category: dict[str, list[tuple]] = {}
    for *row, category in (  # one read for every category, in the ratings' time order
            pairwise_judgments_qs(judge=judge, exclude_blocked=exclude_blocked)
            .exclude(comparison__instance__family__isnull=True).order_by("created_at", "pk")
            .values_list(*RATING_ROW, "comparison__instance__family__name")):
        by_category.setdefault(category, []).append(tuple(row))
    return {category: ratings.win_rates_vs(rows, reference)
            for category, rows in sorted(by_category.items())
            if reference and any(reference in r[:2] for r in rows)}


def leaderboard_csv(board: Leaderboard) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in board.rows:
        writer.writerow({k: ("" if row[k] is None else row[k]) for k in CSV_COLUMNS})
    return out.getvalue()
