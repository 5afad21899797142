"""Assemble the report's data dict (what becomes report.json): gather the verdicts, run every
section, add the snapshot and the metric provenance, and make it JSON-ready.

Every number comes from the pure functions of ``agreement.statistics`` and ``judging.ratings``.
Reads only: metric scores come in already computed and cached (the report service calls
``services.metric_scores.metric_scores_ensure`` first).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from agreement import metric_provenance
from judging.models import Judgment

from .. import selectors
from .accuracy import accuracy_vs_majority, accuracy_vs_weighted, agreement_matrices
from .biases import biases
from .forked import Forked
from .leaderboards import leaderboards
from .meanwhile import Meanwhile
from .params import MAJORITY, ReportParams
from .reliability import human_reliability
from .scores import score_analysis
from .snapshot import report_counts, report_snapshot
from .verdicts import PairwiseVerdicts, gather_pairwise_verdicts


def build_report_data(params: ReportParams, *, metric_summary: dict[str, dict],
                      metric_scores: dict[str, dict[int, float]],
                      progress: Callable[[str, int], None] | None = None,
                      pairwise: selectors.PairwiseData | None = None) -> tuple[dict, dict]:
    """(report dict, plot inputs not stored in JSON, e.g. raw length lists).

    ``metric_summary`` and ``metric_scores`` are what ``metric_scores_ensure(params.metrics,
    params.metric_options)`` returns (both empty when the report has no metrics).
    ``progress(stage, percent)`` is told where the computation is (the report service records
    it on the report's row; percents continue after the metrics' share). ``pairwise``: the
    judgments already read (``params.read_pairwise_data``), else they are read here."""
    progress = progress or (lambda stage, percent: None)
    progress("loading judgments", 40)
    verdicts = gather_pairwise_verdicts(params, metric_scores, pairwise)
    seed, rounds = params.seed, params.bootstrap_rounds
    # Accuracy, reliability and ratings (from the verdicts alone) in a child meanwhile;
    # what reads the database too (scores, biases) and the agreement matrices here: about
    # half the work each, and the ratings' memory is not added to the biases' here.
    # The snapshot's table counts are read in a thread meanwhile too (queries, no work here).
    with (Forked(_from_verdicts_alone, verdicts, seed, rounds) as in_child,
          Meanwhile(lambda: selectors.database_counts(params.study)) as database):
        progress("statistics: scores", 46)
        scores = score_analysis(params, metric_scores, seed, rounds)
        progress("statistics: biases", 52)
        _, response_a, response_b = verdicts.item_pairs()  # every item about two responses
        response_ids = set(response_a.tolist()) | set(response_b.tolist())
        response_ids |= {k[0] for rows in scores.by_source.values() for k in rows}
        lengths = selectors.response_word_counts(response_ids)
        bias_section, length_boxes = biases(verdicts, lengths, scores.by_source)
        feedback = selectors.feedback_judgments(params.split, params.judges,
                                                params.include_trial, study=params.study)
        progress("statistics: agreement matrices", 62)
        matrices = agreement_matrices(verdicts)
        progress("statistics: accuracy, reliability and ratings", 68)
        (accuracy, tests, accuracy_items), accuracy_weighted, reliability, (
            boards, system, categories) = in_child.result()
        database_counts = database.result()
    counts = report_counts(verdicts, scores, feedback, accuracy_items)
    data = {
        "snapshot": report_snapshot(verdicts, scores, counts, metric_summary, database_counts),
        "sources": [Judgment.HUMAN, *verdicts.automatic],
        "metrics": metric_summary,
        "metric_provenance": metric_provenance.provenance(metric_summary),
        **headline_accuracy(params.aggregation, accuracy, accuracy_weighted),
        "accuracy_weighted": accuracy_weighted,
        "paired_tests": tests,
        "agreement_matrices": matrices,
        "reliability": reliability,
        "score_reliability": scores.reliability,
        "score_correlation": scores.correlation,
        "score_correlation_system": scores.correlation_system,
        "ratings": boards,
        "system_correlation": system,
        "category_win_rates": categories,
        "biases": bias_section,
    }
    return json_ready(data), {"length_boxes": length_boxes}


def _from_verdicts_alone(verdicts: PairwiseVerdicts, seed: int, rounds: int) -> tuple:
    """Sections computed from the verdicts alone (no database), a part of a report a forked
    child can do: (accuracy vs the majority, vs the weighted labels, human reliability,
    (boards, system correlation, category win rates))."""
    accuracy = accuracy_vs_majority(verdicts, seed)
    return (accuracy, accuracy_vs_weighted(verdicts, accuracy[2], seed),
            human_reliability(verdicts, seed, rounds), leaderboards(verdicts, seed, rounds))


def json_ready(obj):
    """JSON-ready copy: numpy scalars to Python numbers, NaN/inf to None, tuples to lists."""
    if isinstance(obj, dict):
        return {str(k): json_ready(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | np.ndarray):
        return [json_ready(v) for v in obj]
    if isinstance(obj, bool | np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return float(obj) if np.isfinite(obj) else None
    return obj


def headline_accuracy(aggregation: str, majority: dict, weighted: dict) -> dict:
    """The report's ``accuracy`` (what the summary ranks and the headline section shows)
    against the chosen aggregation, with ``accuracy_majority`` beside it and ``aggregation``
    saying which one the headline is. A model that could not be fitted leaves the headline on
    the majority, and says why."""
    chosen = weighted.get(aggregation)
    if aggregation == MAJORITY or chosen is None or "error" in chosen:
        out = {"accuracy": majority, "accuracy_majority": majority,
               "aggregation": {"requested": aggregation, "headline": MAJORITY}}
        if aggregation != MAJORITY:
            out["aggregation"]["error"] = (chosen or {}).get("error", "no human majority")
        return out
    return {"accuracy": chosen, "accuracy_majority": majority,
            "aggregation": {"requested": aggregation, "headline": aggregation}}
