"""Boards honest about thin data: which models a board ranks, their ranks, and their 95 %
intervals as people read them. Pure Python (no Django import), shared by the leaderboards and
the report's ratings section.

The rules:

* **Provisional.** A model with fewer than ``min_matches`` matches (the setting
  ``LEADERBOARD_MIN_MATCHES``, like the Chatbot Arena's "preliminary") stays in the fit, its
  matches inform the others' ratings, and it stays on the board, marked, but it gets no rank.
  It is listed after the ranked models.
* **Ranks** are ``ratings.ranks_from_ci`` over the ranked models only: 1 + the number of
  ranked models whose lower bound is above this one's upper bound. A provisional model's
  interval never pushes a ranked model down.
* **Shown intervals** stay within the span the data places models in: from the lowest lower
  bound to the highest upper bound of the ranked models (when fewer than two models are
  ranked, from the lowest to the highest rating on the board). A bootstrap of a model seen a
  few times reaches thousands of points out (−2258 – 4295); past that span the data says only
  "below (above) the models it measured", so an end beyond it reads "below 850" or
  "above 1200". The full interval stays in the CSV, the JSON and the API (``ci_low``,
  ``ci_high``); the shown one is ``ci_text``.
"""
from __future__ import annotations

from collections.abc import Sequence

from .ratings import ranks_from_ci

CLIP_NOTE = ("Intervals are shown within the span the ranked models' intervals cover; an end "
             "past it reads “below …” or “above …” (the data cannot place a model further out). "
             "The CSV and JSON keep the full intervals.")


def provisional_note(min_matches: int) -> str:
    return (f"Provisional: fewer than {min_matches} matches. Listed after the ranked models, "
            "without a rank, until it has enough.")


def is_provisional(matches: int, min_matches: int) -> bool:
    return matches < min_matches


def ranks_among_ranked(ci_low: Sequence[float], ci_high: Sequence[float],
                       ranked: Sequence[bool]) -> list[int | None]:
    """``ranks_from_ci`` computed over the ranked models only; None for the others."""
    idx = [i for i, r in enumerate(ranked) if r]
    ranks: list[int | None] = [None] * len(ranked)
    if idx:
        for i, rank in zip(idx, ranks_from_ci([ci_low[i] for i in idx],
                                              [ci_high[i] for i in idx]), strict=True):
            ranks[i] = int(rank)
    return ranks


def shown_span(ratings: Sequence[float], ci_low: Sequence[float], ci_high: Sequence[float],
               ranked: Sequence[bool]) -> tuple[float, float] | None:
    """The span shown intervals are clipped to (see the module's rules); None for no model."""
    idx = [i for i, r in enumerate(ranked) if r]
    if len(idx) >= 2:
        return min(ci_low[i] for i in idx), max(ci_high[i] for i in idx)
    if not ratings:
        return None
    return min(ratings), max(ratings)


def interval_text(low: float, high: float, span: tuple[float, float] | None,
                  decimals: int = 0) -> str:
    """The interval as read: ends past ``span`` become "below x" / "above y"."""
    def num(v: float) -> str:
        return f"{v:.{decimals}f}"

    if span is None:
        return f"{num(low)} – {num(high)}"
    lo, hi = span
    if low > hi:
        return f"above {num(hi)}"
    if high < lo:
        return f"below {num(lo)}"
    left = num(low) if low >= lo else f"below {num(lo)}"
    right = num(high) if high <= hi else f"above {num(hi)}"
    return f"{left} – {right}"


def settle(rows: list[dict], min_matches: int, *, decimals: int = 0
           ) -> tuple[list[dict], tuple[float, float] | None]:
    """Board rows (``rating``, ``ci_low``, ``ci_high``, ``matches``) with ``provisional``,
    ``rank`` (None when provisional) and ``ci_text`` set: ranked models first, then the
    provisional ones, each by rating. Returns (rows, the span intervals are shown within)."""
    ranked = [not is_provisional(r["matches"], min_matches) for r in rows]
    low, high = [r["ci_low"] for r in rows], [r["ci_high"] for r in rows]
    ranks = ranks_among_ranked(low, high, ranked)
    span = shown_span([r["rating"] for r in rows], low, high, ranked)
    out = [{"rank": rank, **{k: v for k, v in row.items() if k != "rank"},
            "provisional": not is_ranked,
            "ci_text": interval_text(row["ci_low"], row["ci_high"], span, decimals)}
           for row, rank, is_ranked in zip(rows, ranks, ranked, strict=True)]
    out.sort(key=lambda r: (r["provisional"], -r["rating"]))
    return out, span
