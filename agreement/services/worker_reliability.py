"""Each worker's Dawid–Skene reliability from their pairwise votes in context: the panel on the
admin's worker page, and the batch rule that blocks workers whose estimate is confidently low.

A worker's votes alone say nothing about their reliability: the model learns it from how they
agree with everybody else on the same items. So a fit takes every human pairwise vote of the
batches concerned (an item is a comparison and turn; votes without a worker account are left
out: they belong to no one whose estimate is asked for). The numbers are
``agreement.statistics.worker_models``' (accuracy with a Jeffreys interval).
"""
from __future__ import annotations

import dataclasses
import logging

from django.conf import settings
from django.db.models import Count

from agreement.statistics.worker_models import (
    DAWID_SKENE,
    ReliabilityFit,
    WorkerEstimate,
    fit_worker_model,
)
from annotation.core.clients.errors import MarketplaceError
from annotation.models import Batch, Worker
from annotation.providers.services import provider_worker_block
from judging.models import Judgment

log = logging.getLogger(__name__)
LABELS = tuple(Judgment.Choice.values)  # "A", "B", "tie", "bad": each its own category


def _human_pairwise():
    return Judgment.objects.filter(source=Judgment.HUMAN, kind=Judgment.Kind.PAIRWISE,
                                   worker__isnull=False, assignment__isnull=False,
                                   ).exclude(choice="")


def batch_votes(batch_ids) -> list[tuple]:
    """The human pairwise votes of ``batch_ids`` as ((comparison, turn), worker id, choice)."""
    rows = _human_pairwise().filter(assignment__batch_id__in=list(batch_ids)).values_list(
        "comparison_id", "turn", "worker_id", "choice")
    return [((comparison, turn), worker, choice) for comparison, turn, worker, choice in rows]


def fit_batches(batch_ids) -> ReliabilityFit | None:
    """Dawid–Skene over the batches' human pairwise votes; None when they hold none."""
    votes = batch_votes(batch_ids)
    return fit_worker_model(votes, DAWID_SKENE, labels=LABELS) if votes else None


# --- the worker page ---------------------------------------------------------------------------

def _context_batches(worker) -> tuple[list[int], int, int]:
    """The batches the worker cast pairwise votes in, newest first, kept while their votes (of
    all workers) add up to at most ``WORKER_RELIABILITY_MAX_VOTES`` -> (kept batch ids, their
    votes, batches in all)."""
    theirs = _human_pairwise().filter(worker=worker).values("assignment__batch_id")
    counts = (_human_pairwise().filter(assignment__batch_id__in=theirs)
              .values_list("assignment__batch_id").annotate(n=Count("id"))
              .order_by("-assignment__batch_id"))
    kept, total, limit = [], 0, settings.WORKER_RELIABILITY_MAX_VOTES
    counts = list(counts)
    for batch_id, n in counts:
        if total + n > limit:
            break
        kept.append(batch_id)
        total += n
    return kept, total, len(counts)


def _percent(x: float) -> str:
    return f"{100 * x:.0f} %"


def reliability_panel(worker) -> dict | None:
    """The worker page's section: this worker's Dawid–Skene accuracy, its interval and the
    votes it rests on, with the context it was fitted in. None for a worker without pairwise
    votes."""
    kept, n_votes, n_batches = _context_batches(worker)
    if not n_batches:
        return None
    limit = settings.WORKER_RELIABILITY_MAX_VOTES
    title = "Estimated reliability (Dawid–Skene)"
    if not kept:
        return {"title": title, "rows": [("Estimate", "not fitted")],
                "note": f"Their newest batch alone holds more than {limit:,} votes "
                        "(WORKER_RELIABILITY_MAX_VOTES): the batch report gives the estimate."}
    fit = fit_batches(kept)
    estimate = fit.worker(worker.pk)
    low, high = estimate.ci
    level = _percent(fit.confidence)
    return {"title": title, "rows": [
        ("Estimated accuracy", f"{_percent(estimate.accuracy)} "
                               f"({level} interval {_percent(low)}–{_percent(high)})"),
        ("Their votes", str(estimate.n_votes)),
        ("Fitted over", f"{n_votes:,} votes by {len(fit.workers)} workers in {len(kept)} of "
                        f"{n_batches} batch{'es' if n_batches != 1 else ''} they voted in"),
    ], "note": (
        "The share of their pairwise votes equal to the label Dawid–Skene infers for each item "
        "from everyone's votes, weighting each worker by how reliable they look (a tie and "
        "'both bad' are labels of their own). The model is fitted over every worker's votes in "
        f"the batches they voted in, newest first, up to {limit:,} votes "
        "(WORKER_RELIABILITY_MAX_VOTES). The interval (Jeffreys) says how many votes the "
        "estimate rests on, not how uncertain the other workers' estimates are.")}


# --- the batch rule ----------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Unreliable:
    """A worker the batch rule picked, and whether this run blocked them (not on a dry run,
    nor when they were blocked already)."""

    worker: Worker
    estimate: WorkerEstimate
    blocked: bool


def block_unreliable_workers(batch: Batch, *, dry_run: bool = False,
                             actor: str = "block_unreliable") -> list[Unreliable]:
    """Block the batch's workers whose Dawid–Skene accuracy is below the batch's
    ``auto_block_reliability_below`` even at the upper end of its interval, among those with
    at least ``AUTO_BLOCK_RELIABILITY_MIN_VOTES`` votes in the batch.

    The upper bound, not the estimate: a worker is blocked only when the data rule out their
    being as reliable as the threshold asks, so a few unlucky votes block nobody. Blocking goes
    through ``provider_worker_block`` (here, then on their marketplace); a marketplace refusal
    is logged there and retried from the worker admin, and the others are still blocked. Safe
    to run again: blocked workers are left alone. Runs outside any transaction (it calls
    marketplaces), from the command or a background job, never in a submit request."""
    threshold = batch.auto_block_reliability_below
    if threshold is None:
        raise ValueError(f"batch {batch.uuid} has no auto_block_reliability_below set")
    fit = fit_batches([batch.pk])
    if fit is None:
        return []
    least = settings.AUTO_BLOCK_RELIABILITY_MIN_VOTES
    picked = [e for e in fit.workers
              if e.worker is not None and e.n_votes >= least and e.ci[1] < threshold]
    workers = Worker.objects.in_bulk([e.worker for e in picked])
    out = []
    for estimate in picked:
        worker = workers[estimate.worker]
        act = not dry_run and not worker.blocked
        if act:
            try:
                provider_worker_block(worker, reason=_reason(estimate, fit, threshold, batch),
                                      actor=actor)
            except MarketplaceError as exc:  # blocked here; the refusal is logged for a retry
                log.warning("worker %s blocked here, not on the marketplace: %s", worker.pk, exc)
        out.append(Unreliable(worker, estimate, act))
    return out


def _reason(estimate: WorkerEstimate, fit: ReliabilityFit, threshold: float,
            batch: Batch) -> str:
    low, high = estimate.ci
    return (f"Estimated accuracy {estimate.accuracy:.0%} ({fit.confidence:.0%} interval "
            f"{low:.0%}–{high:.0%}, Dawid–Skene, {estimate.n_votes} votes) below "
            f"{threshold:.0%} (batch {batch.title})")[:200]
