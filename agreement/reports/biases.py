"""Report section on biases: position (humans on screen, judges across the AB/BA orderings),
length (win rate of the longer response, lengths preferred vs not, lengths by score),
self-preference of a judge for its own model family, and the gap between human and automatic
win rates against the reference model. Length = number of whitespace-separated tokens.
``length_control``: per source, the length coefficient of a Bradley-Terry fit with length as a
covariate (``judging.style_control``) and the share of its preference that is length."""
from __future__ import annotations

import numpy as np

from agreement import statistics as st
from judging.models import Judgment
from judging.style_control import feature_share, style_controlled_bradley_terry

from .. import selectors
from .guarded import statistic_or_error
from .verdicts import PairwiseVerdicts

LENGTH_BINS = 4
FLIP = {"A": "B", "B": "A", "tie": "tie"}
SIDE = {"A": "A", "B": "B", "tie": "tie", "bad": "tie"}  # "both bad" prefers no side


def _outcome(verdict, model_side: str):
    if verdict is None:
        return None
    return 0.5 if verdict == "tie" else float(verdict == model_side)


def biases(verdicts: PairwiseVerdicts, lengths: dict[int, int], score_rows: dict
           ) -> tuple[dict, dict]:
    """(the biases section, {source: {"preferred": [lengths], "other": [lengths]}}: the raw
    length lists the box plots draw, summarised in the section)."""
    keys = verdicts.main_items()
    out: dict = {"position": {}, "length": {}, "length_boxes": {}, "lengths_by_score": {},
                 "self_preference": {}, "win_rate_gap": {}, "length_control": {}}
    human_votes = verdicts.pairwise_data.votes.get(Judgment.HUMAN, {})
    # position: humans on screen (choices are stored in the comparison's sides)
    on_screen = [FLIP[SIDE[v[1]]] if verdicts.comparisons[k[0]].swapped else SIDE[v[1]]
                 for k in keys for v in human_votes.get(k, ())]
    if on_screen:
        out["position"][Judgment.HUMAN] = statistic_or_error(st.position_bias, on_screen)
    orderings = selectors.judge_orderings(verdicts.judges) if verdicts.judges else {}
    uuids = selectors.comparison_uuids({k[0] for k in keys}) if orderings else {}

    def as_choice(v):
        return v if v in ("A", "B") else "tie"

    for judge, per_comparison in orderings.items():
        shown_ab, shown_ba = [], []
        for k in keys:
            results = per_comparison.get(uuids.get(k[0], ""), {})
            turn = k[1]
            if ("AB" in results and "BA" in results and turn in results["AB"]
                    and turn in results["BA"]):
                shown_ab.append(as_choice(results["AB"][turn]))
                shown_ba.append(as_choice(results["BA"][turn]))
        if shown_ab:
            out["position"][judge] = statistic_or_error(st.position_bias, shown_ab, shown_ba)
    # length: win rate of the longer response, and preferred/other length distributions
    sized = _sized_items(verdicts, lengths)
    for src in [Judgment.HUMAN, *verdicts.automatic]:
        source_verdicts = verdicts.majority if src == Judgment.HUMAN else verdicts.by_source[src]
        get = source_verdicts.get
        rows = [(a, b, v, m) for k, a, b, m in sized if (v := get(k)) is not None]
        if not rows:
            continue
        lengths_a, lengths_b, chosen_sides, models = (list(c) for c in zip(*rows, strict=True))
        out["length_control"][src] = statistic_or_error(
            length_control, models, lengths_a, lengths_b, chosen_sides)
        out["length"][src] = statistic_or_error(st.length_bias, lengths_a, lengths_b,
                                                chosen_sides, bins=LENGTH_BINS)
        sides = list(zip(lengths_a, lengths_b, chosen_sides, strict=True))
        preferred = [a if v == "A" else b for a, b, v in sides if v != "tie"]
        other = [b if v == "A" else a for a, b, v in sides if v != "tie"]
        out["length_boxes"][src] = {"preferred": preferred, "other": other}
    for src, scores in score_rows.items():
        graded = [k for k in scores if k[0] in lengths]
        if graded:
            out["lengths_by_score"][src] = statistic_or_error(
                st.lengths_by_score, [scores[k] for k in graded],
                [lengths[k[0]] for k in graded])
    # self-preference: a judge's family vs the human majority on the same items
    families = selectors.model_families(verdicts.params.study)
    for judge in verdicts.judges:
        family = verdicts.params.judge_families.get(judge) or _infer_family(judge, families)
        if not family:
            out["self_preference"][judge] = {"error": "judge family unknown (pass judge_families)"}
            continue
        members = {m for m, f in families.items() if f == family}
        judged = [k for k in keys if k in verdicts.by_source[judge] and k in verdicts.majority]
        result = statistic_or_error(
            st.self_preference, [verdicts.comparisons[k[0]].model_a for k in judged],
            [verdicts.comparisons[k[0]].model_b for k in judged],
            [verdicts.by_source[judge][k] for k in judged],
            [verdicts.majority[k] for k in judged], members) if judged else {
            "error": "no shared item"}
        out["self_preference"][judge] = {"family": family, **result}
    # gap between human and automatic win rate against the reference
    reference_keys = [k for k in keys
                      if verdicts.involves_reference(k) and k in verdicts.human_votes]
    models, sides, human_outcomes = [], [], []  # the same for every source
    for k in reference_keys:
        c = verdicts.comparisons[k[0]]
        side = "A" if c.model_b == verdicts.reference else "B"
        models.append(c.model_a if side == "A" else c.model_b)
        sides.append(side)
        human_outcomes.append(_outcome(verdicts.majority[k] or "tie", side))
    for src in verdicts.automatic:
        get = verdicts.by_source[src].get
        source_outcomes = [_outcome(get(k), side)
                           for k, side in zip(reference_keys, sides, strict=True)]
        if models and any(x is not None for x in source_outcomes):
            out["win_rate_gap"][src] = statistic_or_error(st.win_rate_gap, models,
                                                          human_outcomes, source_outcomes)
    length_boxes = out.pop("length_boxes")
    out["length_distributions"] = {
        src: {"preferred": _box_summary(v["preferred"]), "other": _box_summary(v["other"])}
        for src, v in length_boxes.items()}
    for result in out["lengths_by_score"].values():
        if isinstance(result, dict):
            result.pop("lengths", None)
    return out, length_boxes


def _sized_items(verdicts: PairwiseVerdicts, lengths: dict[int, int]) -> list[tuple]:
    """(item, A's length, B's length, (model A, model B)) of each main item whose two
    responses both have a length, in item order: the same for every source."""
    turns, comparisons, out = set(verdicts.main_turns), verdicts.comparisons, []
    keys, response_a, response_b = verdicts.item_pairs()
    for k, x, y in zip(keys, response_a.tolist(), response_b.tolist(), strict=True):
        if k[1] in turns and x in lengths and y in lengths:
            c = comparisons[k[0]]
            out.append((k, lengths[x], lengths[y], (c.model_a, c.model_b)))
    return out


def length_control(models, lengths_a, lengths_b, chosen_sides, alpha: float = 0.05) -> dict:
    """The length coefficient (Elo points at a normalised length difference of 1) with its
    CI, and the share of the source's preference it accounts for (``feature_share``)."""
    names = sorted({m for pair in models for m in pair})
    pos = {m: k for k, m in enumerate(names)}
    a, b = [pos[x] for x, _ in models], [pos[y] for _, y in models]
    score = [1.0 if v == "A" else 0.0 if v == "B" else 0.5 for v in chosen_sides]
    fa = np.asarray(lengths_a, dtype=float)[:, None]  # one feature: (comparisons, 1)
    fb = np.asarray(lengths_b, dtype=float)[:, None]
    fit = style_controlled_bradley_terry(a, b, score, fa, fb, len(names), names=("length",),
                                         alpha=alpha)
    low, high = float(fit.coef_low[0]), float(fit.coef_high[0])
    return {"n": len(score), "coefficient": float(fit.coef[0]), "ci_low": low, "ci_high": high,
            "significant": low > 0 or high < 0,
            "length_share": feature_share(fit, a, b, fa, fb)}


def _infer_family(judge: str, families: dict[str, str]) -> str:
    """A judge's family: the family of the evaluated model its API model name matches."""
    model_name = selectors.judge_model_name(judge).lower()
    if not model_name:
        return ""
    for name, family in families.items():
        if family and (name.lower() == model_name or family.lower() in model_name):
            return family
    return ""


def _box_summary(values: list) -> dict:
    if not values:
        return {"n": 0}
    q = np.quantile(values, [0, 0.25, 0.5, 0.75, 1])
    return {"n": len(values), "min": float(q[0]), "q1": float(q[1]), "median": float(q[2]),
            "q3": float(q[3]), "max": float(q[4]), "mean": float(np.mean(values))}
