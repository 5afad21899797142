"""Automatic caption metrics, each usable as a pairwise judge.

Pure Python (no Django) so it can run in workers, scripts and benchmarks alike.
Every metric scores a batch: ``fn(candidates, references, **opts) -> list[float]``,
where ``references[i]`` is one string or a list of strings (multi-reference is
supported by every metric except ``length`` and ``random``, which ignore it).

One module per metric declares it with ``@register`` (``registry.Metric``: its function,
label, settings, paper defaults, whether it is corpus-level); importing this package
registers them, in the order reports list them.

Everything works offline: METEOR reads WordNet from ``$NLTK_DATA`` or
``<project>/var/nltk_data`` (``make wordnet`` lays it out), BERTScore only loads
models already on disk.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

# Never reach a model hub: set before transformers/huggingface_hub are imported
# (they read these once, at import time).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

# The metrics, in the order reports list them (importing a module registers it).
# isort: off
from .bleu import bleu4  # noqa: E402
from .rouge import lcs_length, rouge_l, rouge_tokenizer  # noqa: E402
from .meteor_nltk import (  # noqa: E402
    WordNetMissing,
    find_wordnet,
    meteor,
    meteor_tokenize,
    wordnet,
    wordnet_version,
)
from .cider import CIDER_N, CIDER_SIGMA, cider_d, cider_tokenize  # noqa: E402
from .bert import (  # noqa: E402
    FALLBACK_BERT_MODEL,
    bert_default_layers,
    bertscore,
    bertscore_settings,
    resolve_bert_model,
)
from .length_baseline import length  # noqa: E402
from .random_baseline import random  # noqa: E402
# isort: on
from ._common import package_versions  # noqa: E402
from .registry import (  # noqa: E402
    METRICS,
    Metric,
    MetricFn,
    Reference,
    default_metrics,
    get,
    label,
    lexical_metrics,
    paper_default,
    register,
)

__all__ = [
    "CIDER_N", "CIDER_SIGMA", "FALLBACK_BERT_MODEL", "METRICS", "Metric", "MetricFn",
    "Reference", "WordNetMissing", "bert_default_layers", "bertscore", "bertscore_settings",
    "bleu4", "cider_d", "cider_tokenize", "default_metrics", "find_wordnet", "get", "label",
    "lcs_length", "length", "lexical_metrics", "meteor", "meteor_tokenize",
    "metric_pairwise_verdict", "metric_pairwise_verdicts", "package_versions", "paper_default", "random", "register",
    "resolve_bert_model", "rouge_l", "rouge_tokenizer", "score", "settings", "wordnet",
    "wordnet_version",
]


def score(name: str, candidates: Sequence[str], references: Sequence[Reference], **opts):
    """Look a metric up by name and score the batch."""
    return get(name).fn(candidates, references, **opts)


def settings(name: str, *, seed: int | str = 0, bert_model: str | None = None,
             bert_num_layers: int | str | None = None) -> dict:
    """Everything that determines a metric's numbers, as plain JSON: what it computes, with
    which tokenizer and options, and the package versions doing it. The metric cache is keyed
    by it and reports show it, so a number can always be traced to how it was made."""
    return get(name).settings({"seed": seed, "bert_model": bert_model,
                               "bert_num_layers": bert_num_layers})


def metric_pairwise_verdict(score_a: float, score_b: float, tolerance: float = 0.0) -> str:
    """Turn two metric scores into a pairwise judgement: higher wins, 'tie' within tolerance."""
    if abs(score_a - score_b) <= tolerance:
        return "tie"
    return "A" if score_a > score_b else "B"


def metric_pairwise_verdicts(scores_a, scores_b, tolerance: float = 0.0) -> list[str]:
    """``metric_pairwise_verdict`` of each pair of two float arrays at once (a report turns
    every metric's scores of a million judgments' items into verdicts): the same IEEE
    comparisons, so the same verdict for every pair, NaN and infinities included."""
    import numpy as np  # not at import: web workers load the registry, not NumPy

    a, b = np.asarray(scores_a, dtype=float), np.asarray(scores_b, dtype=float)
    with np.errstate(invalid="ignore"):  # inf - inf is NaN, silently, as in Python
        codes = np.where(np.abs(a - b) <= tolerance, 0, np.where(a > b, 1, 2))
    return np.array(["tie", "A", "B"], dtype=object)[codes].tolist()
