"""A study's judge-powered board: PPI estimates of the human numbers beside the human-only ones.

The selector half of ``judging.ppi`` (the pure core, where the estimators and their validity
are documented): the study's human votes become one row per comparison (A's share of its
votes, ties and "both bad" half), the chosen judge's verdicts on the same comparisons and on
comparisons no human voted on become the judge's rows, and grades become one value per
response. Comparisons people voted on but the judge did not rate are left out of both
columns (PPI needs the judge's verdict on every human-voted row) and counted in the
provenance, as are the judge's template versions and the human votes used.
"""
from collections import defaultdict

import numpy as np

from . import ppi
from .selectors import (
    HUMAN,
    judge_names,
    model_names,
    pairwise_judgments_qs,
    reference_model_name,
    score_judge_names,
    score_judgments_qs,
)

SCORE = {"A": 1.0, "B": 0.0, "tie": 0.5, "bad": 0.5}  # A's score per verdict (ties half)


class UnknownJudge(ValueError):
    """No automatic judge of that name has verdicts in the study."""


def comparison_shares(qs, versions: set | None = None, *, by_turn: bool = True,
                      responses: bool = False) -> dict:
    """``{(comparison, turn): (model a id, model b id, A's share of its verdicts, verdicts)}``:
    a multi-turn comparison's per-turn votes are one unit per turn (turn '' for single-turn
    items), so a judge's turn-2 verdict never counts as corrected by people's turn-1 votes. The
    verdicts' template versions are added to ``versions`` when given (one query for both).

    The style board's rows differ in two ways, asked for by name: ``by_turn=False`` keys a unit
    by the comparison alone, and ``responses=True`` puts the two response ids after the model
    ids (``(model a, model b, response a, response b, share, verdicts)``)."""
    sides = ("comparison__response_a__model_id", "comparison__response_b__model_id")
    if responses:
        sides += ("comparison__response_a_id", "comparison__response_b_id")
    scores: dict = defaultdict(list)
    sides_of: dict = {}
    for comparison, turn, choice, version, *side in qs.order_by().values_list(
            "comparison_id", "turn", "choice", "template_version", *sides):
        unit = (comparison, turn) if by_turn else comparison
        scores[unit].append(SCORE[choice])
        sides_of[unit] = tuple(side)
        if versions is not None:
            versions.add(version)
    return {c: (*sides_of[c], float(np.mean(s)), len(s)) for c, s in scores.items()}


def judge_powered_board(study, judge: str, *, alpha: float = 0.05) -> dict:
    """The judge-powered pairwise and score boards of ``study`` with ``judge``, JSON-ready."""
    pairwise = judge in judge_names(study) and judge != HUMAN
    graded = judge in score_judge_names(study) and judge != HUMAN
    if not (pairwise or graded):
        raise UnknownJudge(f"no automatic judge named {judge!r} has verdicts in this study")
    out = {"judge": judge, "alpha": alpha, "ratings": None, "scores": None}
    if pairwise:
        out["ratings"] = _ratings(study, judge, alpha)
    if graded:
        out["scores"] = _scores(study, judge, alpha)
    return out


def rounded_interval(low, high) -> list[float]:
    """A confidence interval as the boards show it: two floats to two decimals."""
    return [round(float(low), 2), round(float(high), 2)]


def _ratings(study, judge: str, alpha: float) -> dict | None:
    human = comparison_shares(pairwise_judgments_qs(judge=HUMAN, study=study))
    versions: set[str] = set()
    verdicts = comparison_shares(pairwise_judgments_qs(judge=judge, study=study), versions)
    both = sorted(set(human) & set(verdicts))
    only = sorted(set(verdicts) - set(human))
    provenance = {
        "human_comparisons_used": len(both),
        "human_votes_used": sum(human[c][3] for c in both),
        "human_comparisons_without_verdict": len(set(human) - set(verdicts)),
        "judge_only_comparisons": len(only),
        "template_versions": sorted(versions),
    }
    if len(both) < 2:
        return {"provenance": provenance, "rows": [],
                "note": "fewer than 2 comparisons rated by both people and the judge"}
    ids = sorted({x for c in both + only for x in verdicts[c][:2]})
    pos = {x: k for k, x in enumerate(ids)}
    names = model_names(ids)

    def pairs(keys, with_human):
        a = [pos[verdicts[c][0]] for c in keys]
        b = [pos[verdicts[c][1]] for c in keys]
        f = [verdicts[c][2] for c in keys]
        return ppi.Pairs.of(a, b, f, [human[c][2] for c in keys] if with_human else None)

    labeled, unlabeled = pairs(both, True), pairs(only, False)
    fit = ppi.bradley_terry_ppi(labeled, unlabeled, len(ids), alpha=alpha)
    alone = fit.human_only or fit
    reference = reference_model_name(study)
    ref = next((pos[x] for x in ids if names[x] == reference), None)
    rates = (ppi.win_rates_vs_reference(labeled, unlabeled, len(ids), ref, alpha)
             if ref is not None and len(unlabeled) else {})
    best, worst = ppi.rank_sets(fit.ratings, fit.cov, alpha)
    human_best, human_worst = ppi.rank_sets(alone.ratings, alone.cov, alpha)
    rows = []
    for k, x in enumerate(ids):
        rate = rates.get(k)
        rows.append({
            "model": names[x], "rating": round(float(fit.ratings[k]), 2),
            "ci": rounded_interval(fit.ci_low[k], fit.ci_high[k]),
            # Every model's true rank lies in its set, jointly, with probability >= 1 - alpha.
            "rank_set": [int(best[k]), int(worst[k])],
            "human_only_rating": round(float(alone.ratings[k]), 2),
            "human_only_ci": rounded_interval(alone.ci_low[k], alone.ci_high[k]),
            "human_only_rank_set": [int(human_best[k]), int(human_worst[k])],
            "win_rate_vs_reference": None if rate is None else {
                "rate": round(rate.estimate, 4), "ci": [round(rate.ci_low, 4),
                                                        round(rate.ci_high, 4)],
                "human_only_se": round(rate.human_only_se, 4), "se": round(rate.se, 4)}})
    rows.sort(key=lambda r: -r["rating"])
    return {"provenance": provenance, "lambda": round(fit.lam, 4), "reference": reference,
            "effective_human_comparisons": round(fit.effective_human_votes, 1),
            "median_ci_width": round(float(np.median(fit.width[fit.width > 0])), 2),
            "human_only_median_ci_width": round(float(np.median(alone.width[alone.width > 0])), 2),
            "rows": rows}


def _response_means(qs) -> dict[int, tuple[int, float]]:
    """``{response: (model id, mean grade)}``."""
    grades: dict[int, list[float]] = defaultdict(list)
    model: dict[int, int] = {}
    for response, m, score in qs.order_by().values_list("response_id", "response__model_id",
                                                         "score"):
        grades[response].append(score)
        model[response] = m
    return {r: (model[r], float(np.mean(g))) for r, g in grades.items()}


def _scores(study, judge: str, alpha: float) -> dict:
    human = _response_means(score_judgments_qs(judge=HUMAN, study=study))
    graded_qs = score_judgments_qs(judge=judge, study=study)
    machine = _response_means(graded_qs)
    names = model_names({m for m, _ in [*human.values(), *machine.values()]})
    from scipy.stats import norm  # here, not at import: web workers boot without scipy

    z = float(norm.ppf(1 - alpha / 2))
    rows = []
    for x, name in sorted(names.items(), key=lambda kv: kv[1]):
        both = [r for r in human if human[r][0] == x and r in machine]
        only = [r for r in machine if machine[r][0] == x and r not in human]
        if len(both) < 2:
            continue
        mean = ppi.ppi_mean([human[r][1] for r in both], [machine[r][1] for r in both],
                            [machine[r][1] for r in only], alpha)
        human_only = float(np.mean([human[r][1] for r in both]))
        rows.append({"model": name, "mean": round(mean.estimate, 4),
                     "ci": [round(mean.ci_low, 4), round(mean.ci_high, 4)],
                     "human_only_mean": round(human_only, 4),
                     "human_only_ci": [round(human_only - z * mean.human_only_se, 4),
                                       round(human_only + z * mean.human_only_se, 4)],
                     "human_responses_used": len(both), "judge_only_responses": len(only),
                     "effective_human_responses": round(mean.effective_human_votes, 1),
                     "lambda": round(mean.lam, 4)})
    rows.sort(key=lambda r: -r["mean"])
    versions = sorted(set(graded_qs.order_by().values_list("template_version", flat=True)
                          .distinct()))
    return {"rows": rows, "provenance": {"template_versions": versions}}
