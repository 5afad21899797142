"""Report sections on graded responses (scores, not pairwise choices): the human graders'
reliability, and each grading judge's and each metric's correlation with the mean human score,
per response (instance level) and per model (system level)."""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

import numpy as np

from agreement import statistics as st
from judging.models import Judgment

from .. import selectors
from .guarded import statistic_or_error
from .params import ReportParams
from .reliability import numeric_matrix
from .verdicts import metric_source

GradedItem = tuple[int, str]  # (response id, '' or 'overall')


def graded_item(response: int, turn: str) -> GradedItem:
    """A graded item: the response, plus whether the grade is of the whole conversation. A
    per-turn grade is already tied to that turn's response, so its turn label ('' from the
    rubric HIT, '1'-'3' from a judge grading a conversation) does not separate items."""
    return response, "overall" if turn == "overall" else ""


@dataclass
class ScoreAnalysis:
    reliability: dict
    correlation: dict  # instance level: per response, judge score vs mean human score
    correlation_system: dict  # per model: mean judge score vs mean human score
    by_source: dict  # {source: {graded item: score}} (human: the mean of the human scores)
    n_judgments: int
    n_responses: int
    judgments_by_source: dict


def score_analysis(params: ReportParams, metric_scores: dict[str, dict[int, float]],
                   seed: int, rounds: int) -> ScoreAnalysis:
    """Score reliability, human-vs-judge score correlation at the instance and the system
    level (for every grading judge and every metric of ``metric_scores``), and scores by
    source."""
    rows = selectors.score_judgments(params.split, params.judges, params.include_trial,
                                     study=params.study)
    human: dict[str, dict] = defaultdict(dict)
    judge: dict[str, dict] = defaultdict(dict)
    model_of: dict[int, str] = {}
    for response, source, annotator, score, turn, model in rows:
        model_of[response] = model
        if source == Judgment.HUMAN:
            human[annotator][graded_item(response, turn)] = score
        else:
            judge[source][graded_item(response, turn)] = score  # latest wins
    reliability = {}
    if len(human) >= 2:
        matrix = numeric_matrix(human, float)
        for level in ("ordinal", "interval"):
            reliability[f"krippendorff_alpha_{level}"] = statistic_or_error(
                st.krippendorff_alpha, matrix, level, n_boot=rounds, seed=seed)
        reliability["n_annotators"] = len(human)
    units: dict = defaultdict(list)
    for items in human.values():
        for k, v in items.items():
            units[k].append(v)
    mean_human = {k: float(np.mean(v)) for k, v in units.items()}
    graders = {src: scores for src, scores in sorted(judge.items())}
    for name, scores in metric_scores.items():
        graders[metric_source(name)] = {k: scores[k[0]] for k in mean_human if k[0] in scores}
    correlation, system = {}, {}
    for src, scores in graders.items():
        keys = [k for k in mean_human if k in scores]
        if src.startswith("metric:") and len(keys) < 2:
            continue  # a metric with (almost) no human-scored response: nothing to say
        if not keys:
            correlation[src] = system[src] = {
                "error": "no response scored by both humans and this source"}
            continue
        human_scores, source_scores = [mean_human[k] for k in keys], [scores[k] for k in keys]
        correlation[src] = statistic_or_error(st.score_correlation, human_scores, source_scores)
        system[src] = statistic_or_error(st.system_score_correlation,
                                         [model_of[k[0]] for k in keys], human_scores,
                                         source_scores)
    by_source = {Judgment.HUMAN: mean_human, **judge} if mean_human else dict(judge)
    return ScoreAnalysis(reliability, correlation, system, by_source, len(rows), len(model_of),
                         dict(sorted(Counter(r[1] for r in rows).items())))
