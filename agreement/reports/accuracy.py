"""Report sections on agreement with humans: each automatic source's accuracy at reproducing
the human majority (with paired tests between sources) and the agreement matrices.

Accuracy uses model-vs-model items only (no comparison involves the human-verified reference),
as VisIT-Bench §4.3 does; judge ties are broken at random with the report's seed and also
reported with ties excluded (``statistics.accuracy_vs_majority``). The plain majority is the
default; the same accuracy is also reported against each reliability model's weighted labels
(``accuracy_vs_weighted``).
"""
from __future__ import annotations

from itertools import combinations

import numpy as np

from agreement import statistics as st
from agreement.statistics.worker_models import MODELS, fit_worker_model
from judging.models import Judgment

from .guarded import statistic_or_error
from .reliability import model_votes, split_identities, worker_models_skipped
from .verdicts import Item, PairwiseVerdicts


def accuracy_vs_majority(verdicts: PairwiseVerdicts, seed: int
                         ) -> tuple[dict, list[dict], list[Item]]:
    """({source: accuracy}, paired tests between every two sources on their shared items,
    the model-vs-model items with human votes that accuracy is measured on)."""
    items = [k for k in verdicts.main_items()
             if k in verdicts.human_votes and not verdicts.involves_reference(k)]
    majority = _majority([verdicts.human_votes[k] for k in items])
    columns = _columns(verdicts, items)

    def human(at: np.ndarray):
        if majority is None:  # each statistic meets the votes' problem itself
            return [verdicts.human_votes[items[i]] for i in at]
        return majority.take(at)

    accuracy = _per_source(columns, human, seed)
    tests = []
    for a, b in combinations(verdicts.automatic, 2):
        (has_a, labels_a), (has_b, labels_b) = columns[a], columns[b]
        at = np.flatnonzero(has_a & has_b)  # the shared items, in key order
        if not len(at):
            continue
        result = statistic_or_error(st.compare_judges, human(at), labels_a[at].tolist(),
                                    labels_b[at].tolist(), seed=seed)
        tests.append({"judge_a": a, "judge_b": b, **result})
    return accuracy, tests, items


def _columns(verdicts: PairwiseVerdicts, items: list[Item]) -> dict:
    """{source: (which of ``items`` it has a verdict on, its verdicts there)}, as arrays in
    item order: each source, and each pair of sources, takes its items by position."""
    out = {}
    for src in verdicts.automatic:
        given = verdicts.by_source[src]
        has = np.fromiter((k in given for k in items), dtype=bool, count=len(items))
        out[src] = has, np.array([given.get(k) for k in items] + [None], dtype=object)[:-1]
    return out


def _per_source(columns: dict, human, seed: int) -> dict:
    """{source: accuracy against ``human(positions)``} on the items each source covers."""
    accuracy = {}
    for src, (has, labels) in columns.items():
        at = np.flatnonzero(has)
        accuracy[src] = (
            statistic_or_error(st.accuracy_vs_majority, human(at), labels[at].tolist(),
                               seed=seed)
            if len(at) else {"error": "no model-vs-model item with this source's verdict"})
    return accuracy


def accuracy_vs_weighted(verdicts: PairwiseVerdicts, items: list[Item], seed: int) -> dict:
    """{reliability model: {source: accuracy}} on the items ``accuracy_vs_majority`` used,
    against the model's labels instead of the plain majority: the model is fitted to the
    same non-tie human votes (an annotator's latest vote per item; anonymous votes pooled),
    and its k/N levels count the votes for the label it chose."""
    if not items:
        return {}
    raw = verdicts.pairwise_data.votes.get(Judgment.HUMAN, {})
    votes = [(k, annotator, choice, worker) for k in items
             for annotator, choice, worker, *_ in raw[k] if choice in ("A", "B")]
    triples = model_votes(*split_identities(votes)[:2])
    if (too_many := worker_models_skipped(len(triples))) is not None:
        return {model: too_many for model in MODELS}
    out, columns = {}, _columns(verdicts, items)
    for model in MODELS:
        try:
            weighted = _weighted_majority(fit_worker_model(triples, model, labels=("A", "B")),
                                          items, verdicts.human_votes)
        except ValueError as exc:
            out[model] = {"error": str(exc)}
            continue
        out[model] = _per_source(columns, weighted.take, seed)
    return out


def _weighted_majority(fit, items: list[Item], human_votes: dict) -> st.Majority:
    label_of = fit.predicted()
    codes = [fit.labels.index(label_of[k]) for k in items]
    agreeing = [human_votes[k].count(label_of[k]) for k in items]
    return st.Majority(np.asarray(codes), np.asarray(agreeing),
                       np.asarray([len(human_votes[k]) for k in items]), fit.labels)


def _majority(votes: list) -> st.Majority | None:
    """Every item's human majority, counted once for all the sources and pairs (None when
    the votes are unusable: each statistic then meets the problem itself, as before)."""
    try:
        return st.human_majority(votes)
    except ValueError:
        return None


def agreement_matrices(verdicts: PairwiseVerdicts) -> dict:
    """Pairwise agreement between every two sources (the human majority included), for the
    main turns and, separately, for each other turn present."""
    groups = {"main": set(verdicts.main_turns)}
    turns_present = {k[1] for k in verdicts.items}
    for t in ("1", "2", "3", "overall"):
        if t in turns_present and {t} != groups["main"]:
            groups[f"turn:{t}" if t != "overall" else "overall"] = {t}
    out = {}
    for name, turns in groups.items():
        labels = {"human (majority)": {k: v for k, v in verdicts.majority.items()
                                       if k[1] in turns}}
        for src in verdicts.automatic:
            labels[src] = {k: v for k, v in verdicts.by_source[src].items() if k[1] in turns}
        labels = {s: v for s, v in labels.items() if v}
        if len(labels) >= 2:
            out[name] = statistic_or_error(st.agreement_matrix, labels)
    return out
