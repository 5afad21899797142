"""Report section on the humans' own reliability, per HIT type: Krippendorff's alpha (nominal)
and Fleiss' kappa from each item's vote counts (no identities needed), Cohen's kappa per pair
and leave-one-out per annotator only for identified annotators; every coefficient with a
seeded bootstrap CI over items. Beside them, each annotator's accuracy estimated by
Dawid–Skene and MACE (``worker_models``), the anonymous votes pooled as one pseudo-annotator.
"""
from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
from django.conf import settings

from agreement import statistics as st
from agreement.statistics.worker_models import MODELS, fit_worker_model
from judging.models import Judgment

from .guarded import statistic_or_error
from .verdicts import PairwiseVerdicts

COHEN_MAX_ANNOTATORS = 30
COHEN_MIN_SHARED = 3
CHOICES = ("A", "B", "tie", "bad")  # "bad": both are bad, a category of its own
CODES = {"A": 0.0, "B": 1.0, "tie": 2.0, "bad": 3.0}  # nominal: only equality matters


def split_identities(votes: list[tuple]) -> tuple[dict[str, dict], dict, set[str]]:
    """One HIT type's human votes [(item, annotator, choice, worker id)], in time order ->
    ({annotator: {item: latest choice}} of identified annotators, {item: [anonymous
    choices]}, anonymous annotator strings).

    Identities are missing for an annotator string that holds two or more votes on the same
    item with no worker account behind them (e.g. VisIT-Bench's preference CSV imported as
    "visitbench-crowd"): one person votes once per item, so these can only be distinct
    anonymous votes, and every vote under that string is one. A worker account that voted
    twice on an item is still one identified annotator (its latest vote counts, as before).
    """
    per: dict[tuple, int] = Counter((k, a) for k, a, _, w in votes if w is None)
    anonymous = {a for (_, a), n in per.items() if n >= 2}
    identified: dict[str, dict] = defaultdict(dict)
    pooled: dict = defaultdict(list)
    for key, annotator, choice, _ in votes:
        if annotator in anonymous:
            pooled[key].append(choice)
        else:
            identified[annotator][key] = choice
    return dict(identified), dict(pooled), anonymous


def human_reliability(verdicts: PairwiseVerdicts, seed: int, rounds: int) -> dict:
    """{HIT type: reliability section} over the human votes on the main turns."""
    by_type: dict[str, list[tuple]] = defaultdict(list)
    for key, votes in verdicts.pairwise_data.votes.get(Judgment.HUMAN, {}).items():
        if key[1] not in verdicts.main_turns:
            continue
        for annotator, choice, worker, hit_type, _ in votes:
            by_type[hit_type].append((key, annotator, choice, worker))
    out = {}
    for hit_type, votes in sorted(by_type.items()):
        out[hit_type] = _hit_type_reliability(votes, seed, rounds)
    return out


def _hit_type_reliability(votes: list[tuple], seed: int, rounds: int) -> dict:
    identified, pooled, anonymous = split_identities(votes)
    per_item: dict = defaultdict(list)
    for items in identified.values():
        for k, v in items.items():
            per_item[k].append(v)
    for k, vs in pooled.items():
        per_item[k].extend(vs)
    n_anonymous = sum(len(v) for v in pooled.values())
    section: dict = {
        "n_annotators": len(identified), "n_votes": sum(len(v) for v in per_item.values()),
        "n_items": len(per_item),
        "identities": ("missing" if not identified else "partial" if anonymous else "present"),
        "anonymous_annotators": sorted(anonymous), "n_anonymous_votes": n_anonymous}
    if anonymous:
        section["note"] = _identity_note(anonymous, n_anonymous, len(identified))
    if not anonymous and len(identified) < 2:
        section["error"] = "fewer than two annotators"
        return section
    section["worker_models"] = worker_models(identified, pooled)
    if anonymous:  # alpha needs only each item's counts: exact without identities
        table, _ = st.label_counts(list(per_item.values()), CHOICES)
        section["krippendorff_alpha"] = statistic_or_error(
            st.krippendorff_alpha_from_counts, table, "nominal", n_boot=rounds, seed=seed)
    else:  # unchanged path (same resampling order, same CI as before)
        section["krippendorff_alpha"] = statistic_or_error(
            st.krippendorff_alpha,
            numeric_matrix(identified, CODES.__getitem__, dtype=np.float32), "nominal",
            n_boot=rounds, seed=seed)
    fleiss = statistic_or_error(st.fleiss_kappa, list(per_item.values()), categories=CHOICES,
                                unequal_raters="modal", n_boot=rounds, seed=seed)
    section["fleiss_kappa"] = ({"raters_per_item": fleiss.get("n_raters"), **fleiss}
                               if "error" not in fleiss else fleiss)
    if len(identified) < 2:
        why = section.get("note", "fewer than two identified annotators")
        section["cohen_kappa"] = {"error": f"not available: {why}", "pairs": []}
        section["leave_one_out"] = {"error": f"not available: {why}"}
        return section
    most_active = [a for a, _ in Counter({a: len(v) for a, v in identified.items()})
                   .most_common(COHEN_MAX_ANNOTATORS)]
    pairs = statistic_or_error(st.pairwise_cohen_kappa,
                               {a: identified[a] for a in sorted(most_active)},
                               min_shared=COHEN_MIN_SHARED, n_boot=rounds, seed=seed)
    section["cohen_kappa"] = {
        "annotators_considered": len(most_active), "min_shared": COHEN_MIN_SHARED,
        "pairs": pairs if isinstance(pairs, list) else [],
        **({"error": pairs["error"]} if isinstance(pairs, dict) else {})}
    if isinstance(pairs, list):
        section["cohen_kappa"]["pairs"] = [p.to_dict() for p in pairs]
    leave_one_out = statistic_or_error(st.leave_one_out_agreement, identified)
    section["leave_one_out"] = (
        {a: r.to_dict() for a, r in sorted(leave_one_out.items())}
        if isinstance(leave_one_out, dict) and "error" not in leave_one_out else leave_one_out)
    return section


def worker_models(identified: dict[str, dict], pooled: dict) -> dict:
    """{model: {"annotators": {annotator: estimate}, "anonymous": estimate or None}}, each
    estimate the annotator's accuracy with its interval, vote count and confusion matrix
    ({true label: {given label: probability}}, None where no item had that true label)."""
    votes = model_votes(identified, pooled)
    if (too_many := worker_models_skipped(len(votes))) is not None:
        return {model: too_many for model in MODELS}
    out = {}
    for model in MODELS:
        fit = statistic_or_error(fit_worker_model, votes, model, labels=CHOICES)
        if "error" in fit:
            out[model] = fit
            continue
        estimates = {w["worker"]: _estimate(w, CHOICES) for w in fit["workers"]}
        out[model] = {"annotators": {a: e for a, e in sorted(estimates.items(), key=_by_name)
                                     if a is not None},
                      "anonymous": estimates.get(None)}
    return out


def worker_models_skipped(n_votes: int) -> dict | None:
    """The section's note when ``n_votes`` is past ``REPORT_WORKER_MODELS_MAX_VOTES``: the EM
    fits cost about 7 (Dawid–Skene) and 25 (MACE) CPU-microseconds a vote, twice a report, so
    a report of a million votes would spend half a minute on them (``bench/aggregation.py``)."""
    limit = settings.REPORT_WORKER_MODELS_MAX_VOTES
    if n_votes <= limit:
        return None
    return {"error": f"not fitted: {n_votes:,} votes, more than REPORT_WORKER_MODELS_MAX_VOTES "
                     f"({limit:,}); raise it to fit Dawid–Skene and MACE on a report this size"}


def model_votes(identified: dict[str, dict], pooled: dict) -> list[tuple]:
    """``split_identities``' output as the (item, annotator, choice) votes a reliability
    model takes, the anonymous ones with annotator None (pooled into one pseudo-worker)."""
    votes = [(k, a, c) for a, items in identified.items() for k, c in items.items()]
    return votes + [(k, None, c) for k, choices in pooled.items() for c in choices]


def _by_name(item: tuple) -> str:
    return str(item[0])


def _estimate(worker: dict, labels: tuple[str, ...]) -> dict:
    return {"n_votes": worker["n_votes"], "accuracy": worker["accuracy"], "ci": worker["ci"],
            "confusion": {t: dict(zip(labels, row, strict=True))
                          for t, row in zip(labels, worker["confusion"], strict=True)}}


def _identity_note(anonymous: set[str], n_anonymous: int, n_identified: int) -> str:
    names = ", ".join(repr(a) for a in sorted(anonymous)[:3]) + (" …" if len(anonymous) > 3
                                                                else "")
    text = (f"{n_anonymous} votes carry no annotator identity (annotator {names} holds several "
            "votes on the same item, so they are anonymous votes); alpha and Fleiss' kappa use "
            "each item's vote counts")
    if n_identified >= 2:
        return text + (f"; Cohen's kappa and leave-one-out cover the {n_identified} identified "
                       "annotators only")
    return text + "; Cohen's kappa and leave-one-out need to know who cast each vote"


def numeric_matrix(annotations: dict, to_number, dtype=float) -> np.ndarray:
    """{annotator: {item: value}} -> coders x items float matrix, NaN = missing (the fast,
    numeric input of krippendorff_alpha; an object matrix costs seconds at 100k votes).
    ``np.float32`` halves it where every value is exact in it (the choice codes)."""
    items = {k: j for j, k in enumerate(dict.fromkeys(k for a in annotations.values()
                                                       for k in a))}
    mat = np.full((len(annotations), len(items)), np.nan, dtype=dtype)
    for i, per in enumerate(annotations.values()):
        for k, v in per.items():
            mat[i, items[k]] = to_number(v)
    return mat
