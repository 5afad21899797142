"""The report's input: every source's pairwise verdict per item, gathered once (reads only).

Items are (comparison, turn) pairs. Sources are ``Judgment.HUMAN`` (the majority of the human
votes on an item), each automatic judge by name, and each reference metric as a pairwise judge,
``metric:<name>`` (higher score wins), built from metric scores computed beforehand
(``services.metric_scores.metric_scores_ensure``; nothing here writes).

Human "tie" and "bad" (both bad) votes are dropped before majorities: accuracy is measured on
the items people decided, as the papers do with their forced-choice HITs; the reliability
section keeps both as categories of their own.
"""
from __future__ import annotations

from array import array
from collections.abc import Mapping
from itertools import compress

import numpy as np

from agreement import metrics as metric_lib
from agreement import statistics as st
from judging.models import Judgment
from judging.selectors import reference_model_name

from .. import selectors
from ..score_table import ScoreTable
from .params import ReportParams, read_pairwise_data

Item = tuple[int, str]  # (comparison id, turn)


def metric_source(metric: str) -> str:
    """The source name of a reference metric acting as a judge."""
    return f"metric:{metric}"


class PairwiseVerdicts:
    """Per-item verdicts of every source on the report's split (``gather_pairwise_verdicts``).

    ``pairwise_data``: the selector's raw votes and counts; ``comparisons``: comparison id ->
    ``ComparisonInfo``; ``human_votes``: item -> non-tie human choices; ``majority``: item ->
    human majority (None on a tie); ``judges``: automatic judges found; ``by_source``: source ->
    item -> verdict for every automatic source (judges, then metrics); ``automatic``: those
    sources in that order.
    """

    def __init__(self, params: ReportParams, pairwise_data: selectors.PairwiseData,
                 main_turns: tuple[str, ...], reference: str | None):
        self.params = params
        self.pairwise_data = pairwise_data
        self.main_turns = main_turns
        self.comparisons = pairwise_data.comparisons
        self.reference = reference
        human = pairwise_data.votes.get(Judgment.HUMAN, {})
        human_votes = {k: [v[1] for v in vs if v[1] in ("A", "B")] for k, vs in human.items()}
        self.human_tie_votes = sum(v[1] == "tie" for vs in human.values() for v in vs)
        self.human_both_bad_votes = sum(v[1] == "bad" for vs in human.values() for v in vs)
        self.human_votes = {k: v for k, v in human_votes.items() if v}
        keys = list(self.human_votes)
        self.majority = dict(zip(keys, st.majority_labels(
            [self.human_votes[k] for k in keys], labels=("A", "B")), strict=True)) if keys else {}
        self.judges = sorted(s for s in pairwise_data.votes if s != Judgment.HUMAN)
        self.by_source: dict[str, dict] = {
            j: {k: v[0][1] for k, v in pairwise_data.votes[j].items()} for j in self.judges}
        self.items = sorted({k for per in pairwise_data.votes.values() for k in per},
                            key=lambda k: (k[0], k[1]))
        self.automatic = list(self.judges)
        self._responses_by_turn = None
        self._item_pairs = None

    def add_metric_judge(self, metric: str, scores: Mapping[int, float]) -> None:
        """Add a metric as a pairwise judge: on each item whose two responses both have a
        score, the higher score wins (equal scores tie)."""
        keys, a, b = self.item_pairs()
        if isinstance(scores, ScoreTable):  # every item at once
            has_a, score_a = scores.lookup(a)
            has_b, score_b = scores.lookup(b)
            both = has_a & has_b
            verdicts = dict(zip(compress(keys, both.tolist()),
                                metric_lib.metric_pairwise_verdicts(score_a[both], score_b[both]),
                                strict=True))
        else:
            verdicts = {key: metric_lib.metric_pairwise_verdict(scores[x], scores[y])
                        for key, x, y in zip(keys, a.tolist(), b.tolist(), strict=True)
                        if x in scores and y in scores}
        self.by_source[metric_source(metric)] = verdicts
        self.automatic.append(metric_source(metric))

    def item_pairs(self) -> tuple[list[Item], np.ndarray, np.ndarray]:
        """(the items that are about two responses, in order; their A and B response ids):
        worked out once, for every metric and every section that matches responses."""
        if self._item_pairs is None:
            keys, a, b = [], array("q"), array("q")
            for key in self.items:
                if pair := self.pair(key):
                    keys.append(key)
                    a.append(pair[0])
                    b.append(pair[1])
            self._item_pairs = (keys, np.frombuffer(a, np.int64), np.frombuffer(b, np.int64))
        return self._item_pairs

    def pair(self, key: Item) -> tuple[int, int] | None:
        """Response ids (A side, B side) an item's verdict is about (None for 'overall')."""
        comp, turn = key
        c = self.comparisons[comp]
        if turn == "":
            return c.response_a, c.response_b
        if turn not in ("1", "2", "3"):
            return None
        if self._responses_by_turn is None:
            self._responses_by_turn = selectors.responses_for_turns(self.comparisons)
        a = self._responses_by_turn.get((c.instance_id, c.model_a, int(turn)))
        b = self._responses_by_turn.get((c.instance_id, c.model_b, int(turn)))
        return (a, b) if a and b else None

    def main_items(self) -> list[Item]:
        return [k for k in self.items if k[1] in self.main_turns]

    def involves_reference(self, key: Item) -> bool:
        c = self.comparisons[key[0]]
        return self.reference is not None and self.reference in (c.model_a, c.model_b)


def gather_pairwise_verdicts(params: ReportParams, metric_scores: dict[str, dict[int, float]],
                             pairwise: selectors.PairwiseData | None = None) -> PairwiseVerdicts:
    """Turn the split's pairwise judgments (``pairwise``, read here when None) into per-item
    verdicts; each metric of ``params.metrics`` becomes a judge from its already-computed
    ``metric_scores`` ({metric: {response id: score}})."""
    missing = [m for m in params.metrics if m not in metric_scores]
    if missing:
        raise ValueError(f"metric scores not computed for {missing} "
                         "(call services.metric_scores.metric_scores_ensure first)")
    verdicts = PairwiseVerdicts(
        params, pairwise if pairwise is not None else read_pairwise_data(params),
        selectors.split_turns(params.split),
        reference_model_name(params.study))
    for metric in params.metrics:
        verdicts.add_metric_judge(metric, metric_scores[metric])
    return verdicts
