"""Report sections on model rankings: each source's Bradley-Terry leaderboard
(``judging.ratings``), its rank correlation with the human board, and per-category win rates
against the reference model.

A model that lost (or won) every one of its matches under a source has no finite
Bradley-Terry rating: the fit's tiny ridge keeps it finite but far out (the demo's reference
sits at -1,168 under BLEU-4 because its own text scores below every model's against the
instance's reference text, so it never wins). Such rows are marked ``unbounded`` ("never won" /
"never lost"): their rating only says "below (above) everyone", and the page says so.

Thin data is handled as on the leaderboard page (``judging.thin_data``): a model with fewer
than ``LEADERBOARD_MIN_MATCHES`` matches under a source is provisional (no rank, listed last),
ranks are among the ranked models, and ``ci_text`` is the interval clipped to the ranked span.
"""
from __future__ import annotations

import warnings
from collections import defaultdict

from django.conf import settings

from agreement import statistics as st
from judging import ratings, thin_data
from judging.models import Judgment

from .guarded import statistic_or_error
from .verdicts import Item, PairwiseVerdicts


def _rating_rows(verdicts: PairwiseVerdicts, src: str, keys: list[Item]
                 ) -> tuple[list[tuple], dict[str, list[tuple]]]:
    """(model A, model B, choice) rows of one source — every human vote, or a source's
    verdict — in ``keys``' order, and the same rows per category of their instance (one pass:
    a report asks for every source and category)."""
    out: list[tuple] = []
    by_category: dict[str, list[tuple]] = defaultdict(list)
    votes = verdicts.human_votes if src == Judgment.HUMAN else None
    verdict = None if src == Judgment.HUMAN else verdicts.by_source[src]
    for k in keys:
        c = verdicts.comparisons[k[0]]
        if votes is not None:
            rows = [(c.model_a, c.model_b, v) for v in votes.get(k, ())]
        elif k in verdict:
            rows = [(c.model_a, c.model_b, verdict[k])]
        else:
            continue
        out += rows
        by_category[c.category] += rows
    return out, by_category


def unbounded_models(rows: list[tuple]) -> dict[str, str]:
    """{model: "never won" | "never lost"} for models whose every match went one way (a tie
    counts as both a win and a loss: it bounds the rating on both sides)."""
    won, lost = set(), set()
    for a, b, choice in rows:
        if choice in ("A", "tie", "bad"):  # both bad: rated as a tie
            won.add(a)
            lost.add(b)
        if choice in ("B", "tie", "bad"):
            won.add(b)
            lost.add(a)
    out = {}
    for m in sorted({r[0] for r in rows} | {r[1] for r in rows}):
        if m not in won:
            out[m] = "never won"
        elif m not in lost:
            out[m] = "never lost"
    return out


def leaderboards(verdicts: PairwiseVerdicts, seed: int, rounds: int
                 ) -> tuple[dict, dict, dict]:
    """({source: leaderboard}, {source: system correlation with the human board},
    {source: {category: {model: win rate vs the reference}}})."""
    keys = verdicts.main_items()
    min_matches = settings.LEADERBOARD_MIN_MATCHES
    boards, system, categories = {}, {}, {}
    for src in [Judgment.HUMAN, *verdicts.automatic]:
        rows, rows_by_category = _rating_rows(verdicts, src, keys)
        if not rows:
            continue
        names = {r[0] for r in rows} | {r[1] for r in rows}
        reference = verdicts.reference if verdicts.reference in names else None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                table = ratings.leaderboard(rows, reference=reference, bootstrap_rounds=rounds,
                                            seed=seed)
        except ValueError as exc:
            boards[src] = {"error": str(exc)}
            continue
        unbounded = unbounded_models(rows)
        settled, span = thin_data.settle([
            {"model": r.model, "rating": r.bt_rating, "ci_low": r.ci_low, "ci_high": r.ci_high,
             "elo": r.elo, "matches": r.matches,
             "win_rate_vs_reference": r.win_rate_vs_reference,
             "n_vs_reference": r.n_vs_reference, "unbounded": unbounded.get(r.model)}
            for r in table], min_matches)
        boards[src] = {"n_judgments": len(rows), "min_matches": min_matches,
                       "ci_span": list(span) if span else None, "rows": settled}
        if reference is not None:
            per_category = {}
            for category, category_rows in sorted(rows_by_category.items()):
                if any(reference in r[:2] for r in category_rows):
                    per_category[category or "(none)"] = {
                        m: {"win_rate": w, "n": n}
                        for m, (w, n) in ratings.win_rates_vs(category_rows, reference).items()}
            categories[src] = per_category
    human = {r["model"]: r["rating"] for r in boards.get(Judgment.HUMAN, {}).get("rows", [])}
    for src in verdicts.automatic:
        other = {r["model"]: r["rating"] for r in boards.get(src, {}).get("rows", [])}
        if human and other:
            system[src] = statistic_or_error(st.system_correlation, human, other)
    return boards, system, categories
