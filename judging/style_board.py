"""A study's style-controlled board: the selector half of ``judging.style_control``.

One row per comparison with A's share of the source's verdicts (ties and "both bad" half, as
on the judge-powered board), the two responses' style features read from their texts in one
query, and the style-controlled Bradley-Terry fit beside the same fit without covariates, so
the page shows how each model's rank moves once length and markdown are held equal.
"""
import numpy as np

from .models import Response
from .powered_boards import comparison_shares, rounded_interval
from .selectors import model_names, pairwise_judgments_qs, reference_model_name
from .style_control import FEATURES, markdown_features, style_controlled_bradley_terry

STYLES = ("control",)  # the values ``?style=`` accepts


class UnknownStyle(ValueError):
    """``?style=`` names no style adjustment this board knows."""


def check_style(value: str | None) -> str | None:
    """``value`` when it is a known style adjustment, None when absent; UnknownStyle else."""
    if value in (None, ""):
        return None
    if value not in STYLES:
        raise UnknownStyle(f"unknown style {value!r}; use one of: {', '.join(STYLES)}")
    return value


def comparison_rows(qs) -> list[tuple[int, int, int, int, float]]:
    """``[(model a, model b, response a, response b, A's share of the verdicts)]``, one row per
    comparison in id order."""
    shares = comparison_shares(qs, by_turn=False, responses=True)
    return [row[:5] for _, row in sorted(shares.items())]


def _ranks(values) -> list[int]:
    """1 for the highest value."""
    order = np.argsort(-np.asarray(values), kind="stable")
    ranks = np.empty(len(order), dtype=int)
    ranks[order] = np.arange(1, len(order) + 1)
    return ranks.tolist()


def cached_style_board(study, judge: str, style: str, *, exclude_blocked: bool = False,
                       include_trial: bool = False) -> dict:
    """``style_controlled_board`` through ``judging.rating_cache``, keyed by the style too."""
    from . import rating_cache  # rating_cache imports the selectors this module builds on

    votes = {"exclude_blocked": exclude_blocked, "include_trial": include_trial}
    return rating_cache.get_or_compute(
        "style_board", lambda: style_controlled_board(study, judge, **votes), source=judge,
        params={"style": style}, study=study, **votes)


def style_controlled_board(study, judge: str, *, alpha: float = 0.05,
                           exclude_blocked: bool = False, include_trial: bool = False) -> dict:
    """The style-controlled pairwise board of ``judge``'s verdicts in ``study``, JSON-ready."""
    rows = comparison_rows(pairwise_judgments_qs(
        judge=judge, study=study, exclude_blocked=exclude_blocked, include_trial=include_trial))
    out = {"judge": judge, "alpha": alpha, "features": list(FEATURES), "comparisons": len(rows),
           "rows": [], "coefficients": []}
    if len(rows) < 2:
        out["note"] = "fewer than 2 comparisons with verdicts"
        return out
    texts = dict(Response.objects.filter(
        id__in={r for row in rows for r in row[2:4]}).values_list("id", "text"))
    features = {r: markdown_features(t) for r, t in texts.items()}
    ids = sorted({m for row in rows for m in row[:2]})
    pos = {m: k for k, m in enumerate(ids)}
    names = model_names(ids)
    reference = reference_model_name(study)
    anchor = next((pos[m] for m in ids if names[m] == reference), None)
    fit = style_controlled_bradley_terry(
        [pos[r[0]] for r in rows], [pos[r[1]] for r in rows], [r[4] for r in rows],
        [features[r[2]] for r in rows], [features[r[3]] for r in rows], len(ids),
        anchor=anchor, alpha=alpha)
    raw_rank, rank = _ranks(fit.raw), _ranks(fit.ratings)
    out["rows"] = sorted(({
        "model": names[m], "raw_rating": round(float(fit.raw[k]), 2), "raw_rank": raw_rank[k],
        "rating": round(float(fit.ratings[k]), 2), "ci": rounded_interval(fit.ci_low[k], fit.ci_high[k]),
        "rank": rank[k], "rank_change": raw_rank[k] - rank[k]} for k, m in enumerate(ids)),
        key=lambda row: row["rank"])
    out["coefficients"] = [{"feature": f, "coefficient": round(float(fit.coef[k]), 2),
                            "ci": rounded_interval(fit.coef_low[k], fit.coef_high[k]),
                            "significant": bool(fit.coef_low[k] > 0 or fit.coef_high[k] < 0)}
                           for k, f in enumerate(fit.features)]
    return out
