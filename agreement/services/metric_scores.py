"""Reference metrics computed in batches and cached in ``MetricScore``.

``metric_run_start`` records what to score and each metric's full configuration (its hash keys
the cache); ``metric_run_work`` (the Celery task's body) scores whatever the cache lacks, batch
by batch, and is safe to run twice: rows are keyed uniquely and written with
``ignore_conflicts``, and progress is recomputed, never incremented blindly.
``metric_scores_ensure`` does the same synchronously for a report
(``services.reports.report_data_compute`` calls it before gathering the report's data).
The metrics that import NLTK (METEOR, ROUGE-L) are scored, and their settings read, in a child
process (``metrics.isolated``): this process never holds NLTK or WordNet.
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import logging
from collections.abc import Sequence
from functools import lru_cache, partial
from itertools import compress

from django.db import transaction
from django.utils import timezone

from agreement import metrics as metric_lib
from agreement.metrics.isolated import MetricProcess
from agreement.metrics.registry import UnknownMetric  # noqa: F401  (callers catch it here)
from agreement.metrics.registry import check_names as check_metrics
from annotation.core.jobs import admit
from studies.models import study_pk

from ..jobs import METRIC_RUN, metric_run_fingerprint
from ..models import MetricRun, MetricScore
from ..selectors import (
    MetricTarget,
    current_scores,
    metric_targets,
    response_texts,
    response_uuids,
)

log = logging.getLogger(__name__)

# Read from the registry (``agreement.metrics``): a report's default metrics, and those of
# them that need no model on disk.
DEFAULT_METRICS = metric_lib.default_metrics()
LEXICAL_METRICS = metric_lib.lexical_metrics()
BATCH_SIZE = 1000
WRITE_ROWS = 2000  # score rows built and inserted at once
METRIC_VERSION = "1"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def reference_hash(references: list[str]) -> str:
    return _reference_hash(tuple(references))


@lru_cache(maxsize=200_000)
def _reference_hash(references: tuple[str, ...]) -> str:
    """Memoised: a report checks every cached score against its reference's hash, metric by
    metric, and most references are shared by many responses (one per instance)."""
    return _sha(json.dumps(list(references), ensure_ascii=False))


def metric_config(name: str, options: dict | None = None,
                  process: MetricProcess | None = None) -> dict:
    """What determines a metric's numbers: our version of it and its full settings (model,
    layer, tokenizers, smoothing, WordNet, package versions: ``metrics.settings``). The cache
    is keyed by its hash, so two BERTScore models, or two versions of a package, never share
    scores. Options: ``seed`` (random), ``bert_model``, ``bert_num_layers`` (BERTScore)."""
    options = options or {}
    metric = metric_lib.get(name)
    if not metric.isolated:
        return {"metric": name, "version": METRIC_VERSION, **metric.settings(options)}
    if process is None:
        with MetricProcess() as own:
            return metric_config(name, options, own)
    return {"metric": name, "version": METRIC_VERSION, **process.settings(name, options)}


def config_hash(config: dict, targets: list[MetricTarget] | None = None) -> str:
    """Hash of the config; corpus metrics add the hash of the scored set's references."""
    payload = dict(config)
    if metric_lib.get(config["metric"]).corpus:
        refs = sorted(reference_hash(t.references) for t in targets or [])
        payload["corpus"] = _sha("".join(refs))
    return _sha(json.dumps(payload, sort_keys=True))


def _score(name: str, batch: list[MetricTarget], config: dict,
           process: MetricProcess | None = None) -> list[float]:
    """Score with exactly the recorded configuration (never re-resolving a default model, which
    could put another model's numbers under this configuration's key); an NLTK metric in
    ``process`` (None: a process of its own)."""
    metric = metric_lib.get(name)
    if metric.isolated and process is None:
        with MetricProcess() as own:
            return _score(name, batch, config, own)
    if metric.seeded_per_item:  # seeded per response, so a score never depends on batch order
        uuids = response_uuids(t.response_id for t in batch)
        return [metric.fn([""], seed=int(_sha(
            f"{config['seed']}:{uuids[t.response_id]}"), 16))[0] for t in batch]
    if metric.corpus:  # every response at once: their texts are read as the metric goes
        candidates = _TextsOf([t.response_id for t in batch])
    else:
        texts = response_texts(t.response_id for t in batch)
        candidates = [texts[t.response_id] for t in batch]
    score = partial(process.score, name) if metric.isolated else metric.fn
    return score(candidates, [t.references for t in batch], **metric.call_options(config))


class _TextsOf(Sequence):
    """The texts of responses ``ids``, read from the database a slice at a time (CIDEr-D
    reads its candidates a chunk at a time): a corpus metric scores every response in one
    call, and all their texts at once were a large share of caching's peak at 1M."""

    def __init__(self, ids: list[int]):
        self.ids = ids

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index):
        ids = self.ids[index] if isinstance(index, slice) else [self.ids[index]]
        texts = response_texts(ids)
        out = [texts[r] for r in ids]
        return out if isinstance(index, slice) else out[0]


def _missing(targets: list[MetricTarget], current) -> list[MetricTarget]:
    """The targets ``current`` (a metric's cached scores) has no score of, in order: looked
    up all at once in a ``ScoreTable`` (one at a time, 240K targets took 0.2 s a metric)."""
    if not hasattr(current, "lookup"):  # a dict (ids too sparse for a table)
        return [t for t in targets if t.response_id not in current]
    import numpy as np  # not at import: web workers score nothing

    has, _ = current.lookup(np.fromiter((t.response_id for t in targets), np.int64,
                                        len(targets)))
    return list(compress(targets, (~has).tolist()))


def _score_metric(name: str, targets: list[MetricTarget], options: dict,
                  refs: dict[int, str], process: MetricProcess,
                  on_batch=None, before_scoring=None) -> tuple[dict, str, int, int, dict]:
    """Score the targets the cache lacks for one metric; returns (config, config hash, cached,
    new, {response id: score} of every target). ``refs``: each target's reference hash.
    The cache is read once; only when something was scored is it read again (what the table
    holds then is the answer: a row another worker wrote first is kept, not ours)."""
    config = metric_config(name, options, process)
    chash = config_hash(config, targets)
    current = current_scores(name, chash, refs)
    todo = _missing(targets, current)
    cached = len(targets) - len(todo)
    corpus = metric_lib.get(name).corpus
    if corpus and todo:
        todo = targets  # IDF needs the whole set; cached rows are simply kept
    size = len(todo) if corpus else BATCH_SIZE
    written = 0
    if todo and before_scoring:
        before_scoring()
    for start in range(0, len(todo), max(size, 1)):
        batch = todo[start:start + size]
        scores = _score(name, batch, config, process)
        now = timezone.now()
        for at in range(0, len(batch), WRITE_ROWS):  # a corpus batch is every target
            MetricScore.objects.bulk_create(
                [MetricScore(metric=name, config_hash=chash, response_id=t.response_id,
                             reference_hash=refs[t.response_id], score=float(s), created_at=now)
                 for t, s in zip(batch[at:at + WRITE_ROWS], scores[at:at + WRITE_ROWS],
                                 strict=True)],
                ignore_conflicts=True)
        written += len(batch)
        if on_batch:
            on_batch(cached + min(written, len(targets) - cached))
    if todo:
        current = current_scores(name, chash, refs)
    return config, chash, cached, len(todo), current


def metric_scores_ensure(metrics: list[str], options: dict | None = None, on_metric=None,
                         study=None, before_scoring=None
                         ) -> tuple[dict[str, dict], dict[str, dict[int, float]]]:
    """Score every response of ``study`` (None: the default study) that has a reference with
    each metric (cache first), against the study's reference.

    Returns ({metric: {config, config_hash, cached, computed, n}}, {metric: {response id:
    score}}). The scored set is always every such response, so CIDEr-D's IDF, and therefore
    every cached number, does not depend on which report asked. The set is read once for all
    the metrics; ``on_metric(i, name)`` is called as each metric starts (a report's progress),
    ``before_scoring()`` before any score the cache lacks is computed.
    """
    metrics = check_metrics(metrics)
    if not metrics:
        return {}, {}
    targets = metric_targets(study=study)
    refs = {t.response_id: reference_hash(t.references) for t in targets}
    summary, scores = {}, {}
    with MetricProcess() as process:
        for i, name in _each_metric(metrics, process):
            if on_metric:
                on_metric(i, name)
            config, chash, cached, computed, scores[name] = _score_metric(
                name, targets, options or {}, refs, process, before_scoring=before_scoring)
            summary[name] = {"config": config, "config_hash": chash,
                             "cached": cached, "computed": computed, "n": len(targets)}
    return {m: summary[m] for m in metrics}, {m: scores[m] for m in metrics}


def computing_order(metrics: list[str]) -> list[str]:
    """Corpus metrics (CIDEr-D: every response at once) first, before other metrics'
    allocations have fragmented the heap (caching the lexical metrics for 24K responses in one
    process peaked at 631 MB with CIDEr-D last, 418 MB with it first); then the NLTK metrics,
    in the metric process, which is ended before the rest."""
    return sorted(metrics, key=lambda m: (not metric_lib.get(m).corpus,
                                          not metric_lib.get(m).isolated))


def _each_metric(metrics: list[str], process: MetricProcess):
    """(i, name) in computing order. After a corpus metric the heap's freed pages go back to
    the system, and ``process`` is closed as soon as no metric left needs it: the metric
    process never runs beside this process's largest allocations."""
    order = computing_order(metrics)
    for i, name in enumerate(order):
        yield i, name
        if metric_lib.get(name).corpus:
            _return_freed_memory()
        if not any(metric_lib.get(m).isolated for m in order[i + 1:]):
            process.close()


def _return_freed_memory() -> None:
    """glibc's ``malloc_trim``: CIDEr-D's freed arrays stay in the heap, and so in this
    process's RSS (~300 MB at 1M judgments), until it is asked to give them back. Elsewhere
    (macOS, musl) nothing."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def metric_run_start(metrics: list[str], *, options: dict | None = None,
                     created_by: str = "", queue: bool = False, study=None) -> MetricRun:
    """Record a batch computation of ``study``'s responses (None: the default study's) against
    its reference, and the configuration each metric will run with (failing
    now, e.g. without a BERTScore model or WordNet, not in the worker). With ``queue`` the run
    is worked after commit by a broker's worker, or without one by a thread of this process
    (never the request that asked) — admitted by the job caps first: an identical queued or
    running run is returned instead, past a cap ``JobsBusy`` (``annotation.core.jobs``);
    otherwise the caller works it (``metric_run_work``)."""
    metrics = check_metrics(metrics)
    options = options or {}
    targets = metric_targets(study=study)
    configs = {}
    with MetricProcess() as process:
        for name in metrics:
            config = metric_config(name, options, process)
            configs[name] = {"config": config, "config_hash": config_hash(config, targets)}
    with transaction.atomic():
        fingerprint = metric_run_fingerprint(metrics, options, study_pk(study))
        if queue and (existing := admit(METRIC_RUN, owner=created_by, fingerprint=fingerprint)):
            return MetricRun.objects.get(pk=existing.pk)
        run = MetricRun.objects.create(metrics=metrics, options=options, configs=configs,
                                       study_id=study_pk(study),
                                       total=len(targets) * len(metrics),
                                       created_by=created_by, created_at=timezone.now())
        if queue:
            from ..tasks import enqueue_compute_metrics

            transaction.on_commit(lambda: enqueue_compute_metrics(run.pk))
    return run


def metric_run_work(run_id: int) -> MetricRun:
    """Work a run to completion. Safe to run twice: a finished run is left alone, a second
    worker on a running run only fills what the cache still lacks."""
    with transaction.atomic():
        run = MetricRun.objects.select_for_update().get(pk=run_id)
        if run.status == MetricRun.Status.DONE:
            return run
        run.status, run.started_at = MetricRun.Status.RUNNING, run.started_at or timezone.now()
        run.save(update_fields=["status", "started_at"])
    targets = metric_targets(study=run.study_id)
    refs = {t.response_id: reference_hash(t.references) for t in targets}
    total_cached = 0
    configs = dict(run.configs)
    try:
        with MetricProcess() as process:
            for i, name in _each_metric(run.metrics, process):
                total_cached += _work_metric(run, i, name, targets, refs, configs, process)
    except Exception as exc:
        log.exception("metric run %s failed", run.uuid)
        run.mark_failed(exc)
        raise
    MetricRun.objects.filter(pk=run.pk).update(
        status=MetricRun.Status.DONE, total=len(targets) * len(run.metrics),
        done=len(targets) * len(run.metrics), cached=total_cached, finished_at=timezone.now())
    run.refresh_from_db()
    return run


def _work_metric(run: MetricRun, i: int, name: str, targets: list[MetricTarget],
                 refs: dict[int, str], configs: dict, process: MetricProcess) -> int:
    """Score the ``i``-th metric of a run, recording progress and the configuration that
    really ran in ``configs``; returns how many scores were cached already."""
    base = i * len(targets)

    def progress(n):
        MetricRun.objects.filter(pk=run.pk).update(done=base + n)

    config, chash, cached, _, _ = _score_metric(name, targets, run.options, refs, process,
                                                on_batch=progress)
    if configs.get(name, {}).get("config_hash") not in (None, chash):
        log.warning("metric run %s: %s ran with another configuration than recorded "
                    "at start (the worker's environment differs); recording it",
                    run.uuid, name)
    configs[name] = {"config": config, "config_hash": chash}  # what really ran
    MetricRun.objects.filter(pk=run.pk).update(done=base + len(targets), configs=configs)
    return cached
