"""The metric registry: one ``Metric`` record per metric, declared by its own module with
``@register``. Everything that used to be a table keyed by a metric's name (the functions,
labels, paper defaults, the default and lexical lists, which metrics are corpus-level) is
read from here, so a new metric is one module (docs/extending.md)."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

Reference = str | Sequence[str]
MetricFn = Callable[..., list[float]]


def _no_options(config: dict) -> dict:
    return {}


@dataclass(frozen=True)
class Metric:
    name: str
    #: How reports name it ("BLEU-4").
    label: str
    #: ``fn(candidates, references, **options) -> list[float]``, one score per pair.
    fn: MetricFn
    #: ``settings(options) -> dict``: everything that determines its numbers, as plain JSON
    #: (tokenizer, options, package versions). Its hash keys the metric cache, so it reads
    #: the report's ``metric_options`` (``seed``, ``bert_model``, ``bert_num_layers``).
    settings: Callable[[dict], dict]
    #: The settings the paper fixes (VisIT-Bench §4.3); a recorded configuration that differs
    #: from them is flagged in the report (``metric_provenance``).
    paper_default: dict = field(default_factory=dict)
    #: Corpus-level (CIDEr-D's IDF is over the scored set): scored in one batch, and the set's
    #: reference hash joins the cache key. Otherwise each pair scores on its own.
    corpus: bool = False
    #: ``call_options(config) -> dict``: the keyword arguments that score with exactly a
    #: recorded configuration (never re-resolving a default model).
    call_options: Callable[[dict], dict] = _no_options
    #: Seeded per response (``fn([""], seed=...)`` once per response), so a score never
    #: depends on batch order: the chance-level baseline.
    seeded_per_item: bool = False
    #: Needs a model on disk (BERTScore): left out of the lexical set the demo and benches use.
    needs_model: bool = False
    #: Part of a report's default metrics.
    default: bool = True
    #: Imports NLTK (and METEOR WordNet): the metric service scores it, and reads its
    #: settings, in a child process (``metrics.isolated``), so a worker never holds them.
    isolated: bool = False


METRICS: dict[str, Metric] = {}


def register(**record) -> Callable[[MetricFn], MetricFn]:
    """Decorator adding the decorated scoring function to the registry as
    ``Metric(fn=<it>, **record)``; the function is returned unchanged."""

    def add(fn: MetricFn) -> MetricFn:
        metric = Metric(fn=fn, **record)
        if metric.name in METRICS and METRICS[metric.name].fn is not fn:
            raise RuntimeError(f"metric {metric.name!r} registered twice")
        METRICS[metric.name] = metric
        return fn

    return add


class UnknownMetric(ValueError):
    pass


def check_names(names: Iterable[str]) -> list[str]:
    """The names, duplicates dropped, each a registered metric (else ``UnknownMetric``)."""
    names = list(dict.fromkeys(names))
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise UnknownMetric(f"unknown metric(s) {unknown}; known: {', '.join(METRICS)}")
    return names


def get(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known: {', '.join(METRICS)}") from None


def label(name: str) -> str:
    """The metric's label, or its name for one no longer registered (an old report)."""
    metric = METRICS.get(name)
    return metric.label if metric else name


def paper_default(name: str) -> dict:
    metric = METRICS.get(name)
    return metric.paper_default if metric else {}


def default_metrics() -> list[str]:
    return [m.name for m in METRICS.values() if m.default]


def lexical_metrics() -> list[str]:
    """The default metrics that need no model on disk (the demo's and the benches' set)."""
    return [m.name for m in METRICS.values() if m.default and not m.needs_model]
