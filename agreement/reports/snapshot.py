"""The report's ``snapshot``: what the report read (counts of judgments, items and votes), with
which filters, data fingerprint, template and software versions, and the conventions every
number follows, stated in words."""
from __future__ import annotations

import platform
from collections import Counter
from importlib.metadata import PackageNotFoundError, version

from django.utils import timezone

from judging.models import Judgment

from .. import selectors
from .reliability import COHEN_MAX_ANNOTATORS, COHEN_MIN_SHARED
from .scores import ScoreAnalysis
from .verdicts import Item, PairwiseVerdicts

REPORT_SCHEMA = "agreement-report/1"
HTML_TEMPLATE_VERSION = "agreement/report_standalone.html@2"


def _package_version(pkg: str) -> str:
    try:
        return version(pkg)
    except PackageNotFoundError:
        return "?"


def report_counts(verdicts: PairwiseVerdicts, scores: ScoreAnalysis,
                  feedback: list[tuple], accuracy_items: list[Item]) -> dict:
    """Every kind of judgment the report read (pairwise, score = graded responses, feedback),
    and the items and votes the analyses used."""
    pairwise = verdicts.pairwise_data
    main = verdicts.main_items()
    main_set = set(main)
    return {
        "judgments_used": pairwise.n_judgments + scores.n_judgments + len(feedback),
        "judgments_by_kind": {"pairwise": pairwise.n_judgments, "score": scores.n_judgments,
                              "feedback": len(feedback)},
        "judgments_by_kind_and_source": {
            f"{kind}/{src}": n for kind, per in (
                ("pairwise", pairwise.judgments_by_source),
                ("score", scores.judgments_by_source),
                ("feedback", Counter(src for _, src in feedback)))
            for src, n in sorted(per.items())},
        "pairwise_judgments": pairwise.n_judgments,
        "items": len(main),
        "items_all_turns": len(verdicts.items),
        "comparisons": len({k[0] for k in main}),
        "human_votes": sum(len(verdicts.human_votes[k])
                           for k in main_set & verdicts.human_votes.keys()),
        "human_tie_votes_dropped": verdicts.human_tie_votes,
        **({"human_both_bad_votes_dropped": verdicts.human_both_bad_votes}
           if verdicts.human_both_bad_votes else {}),
        "items_with_human_votes": len(main_set & verdicts.human_votes.keys()),
        "model_vs_model_items": len(accuracy_items),
        "model_vs_model_items_with_majority": sum(verdicts.majority[k] is not None
                                                  for k in accuracy_items),
        "verdicts_by_source": {s: len(main_set & verdicts.by_source[s].keys())
                               for s in verdicts.automatic},
        "score_judgments": scores.n_judgments,
        "graded_responses": scores.n_responses,
        "feedback_judgments": len(feedback),
        "feedback_responses": len({r for r, _ in feedback}),
    }


def report_snapshot(verdicts: PairwiseVerdicts, scores: ScoreAnalysis, counts: dict,
                    metric_summary: dict[str, dict], database: dict | None = None) -> dict:
    """The snapshot; ``database``: ``selectors.database_counts`` of the report's study when
    already read (else read here)."""
    params = verdicts.params
    seed, rounds = params.seed, params.bootstrap_rounds
    return {
        "schema": REPORT_SCHEMA,
        "generated_at": timezone.now().isoformat(),
        "filters": {"split": params.split, "judges_requested": params.judges,
                    "judges_found": verdicts.judges,
                    "score_judges_found": sorted(s for s in scores.by_source
                                                 if s != Judgment.HUMAN),
                    "metrics": list(params.metrics),
                    "exclude_blocked": params.exclude_blocked,
                    "include_trial": params.include_trial,
                    "aggregation": params.aggregation,
                    "main_turns": list(verdicts.main_turns)},
        "seed": seed,
        "bootstrap_rounds": rounds,
        "reference_model": verdicts.reference,
        "counts": counts,
        "database": database if database is not None else selectors.database_counts(
            params.study),
        "data_fingerprint": verdicts.pairwise_data.fingerprint,
        "template_versions": {
            "report_schema": REPORT_SCHEMA, "html_template": HTML_TEMPLATE_VERSION,
            "hit_types": verdicts.pairwise_data.hit_versions,
            "judges": verdicts.pairwise_data.judge_versions,
            "metrics": {m: s["config_hash"] for m, s in metric_summary.items()}},
        "software": {"python": platform.python_version(),
                     **{p: _package_version(p) for p in ("django", "numpy", "scipy",
                                                         "krippendorff", "matplotlib")}},
        "conventions": _conventions(verdicts, seed, rounds),
    }


def _conventions(verdicts: PairwiseVerdicts, seed: int, rounds: int) -> list[str]:
    return [
        "Items are (comparison, turn); the main analysis uses turns "
        f"{list(verdicts.main_turns)} of split {verdicts.params.split!r}.",
        "Human 'tie' votes are dropped before majorities; an item with equal A and B "
        "votes has no majority and is left out of accuracies.",
        "Accuracy vs the human majority uses model-vs-model comparisons only.",
        f"Judge ties are broken uniformly at random with seed {seed}; 'ties excluded' "
        "drops them instead. CIs are 95 % Wilson and Clopper-Pearson.",
        "Metric judges: the response with the higher metric score wins; equal scores tie.",
        f"Cohen's kappa: the {COHEN_MAX_ANNOTATORS} most active annotators, pairs sharing "
        f">= {COHEN_MIN_SHARED} items. Fleiss' kappa: items with the most common number "
        "of votes (it needs the same number per item); Krippendorff's alpha (nominal): "
        "every item with >= 2 votes. Every alpha and kappa has a 95 % percentile "
        f"bootstrap CI over items ({rounds} resamples, seed {seed}).",
        "Annotator identity: an annotator string holding two or more votes on one item "
        "without a worker account (e.g. an aggregated preference file imported under one "
        "name) stands for anonymous votes. Alpha and Fleiss' kappa need only each item's "
        "vote counts and use them; Cohen's kappa and leave-one-out need identities and "
        "cover identified annotators only (not available when there are none).",
        "Score correlation: each response's mean human score vs a judge's (or metric's) "
        "score, per response (instance level) and as per-model means over the same "
        "responses (system level); Pearson, Kendall tau-b, Spearman with two-sided "
        "p-values.",
        "Feedback judgments are counted in the snapshot; this report does not analyse them.",
        "Length = number of whitespace-separated tokens.",
    ]
