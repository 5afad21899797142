"""Simulated crowds with planted truth and planted worker confusions.

For the reliability benches and tests: a crowd whose every worker's confusion matrix is
known, so a model's estimates can be checked against what was planted. Good workers are
right with a probability drawn from ``accuracy`` and spread their errors over the other
labels unevenly (a Dirichlet draw per true label, so a full confusion matrix has something
to recover); spammers answer regardless of the truth, half uniformly at random and half
always the first label ("always A").
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .worker_models import PAIRWISE_LABELS


@dataclasses.dataclass(frozen=True)
class SimulatedCrowd:
    """Votes as (item, worker, label) triples, with the truth and confusions planted."""

    votes: list[tuple[int, str, str]]
    truth: np.ndarray  # label code per item
    labels: tuple[str, ...]
    confusion: dict[str, np.ndarray]  # worker -> [true label, given label]
    spammers: frozenset[str]


def _good_confusion(rng: np.random.Generator, k: int, accuracy: float) -> np.ndarray:
    out = np.empty((k, k))
    for t in range(k):
        errors = rng.dirichlet(np.ones(k - 1)) * (1 - accuracy)
        out[t] = np.insert(errors, t, accuracy)
    return out


def simulate_crowd(
    n_items: int,
    *,
    votes_per_item: int = 5,
    n_workers: int | None = None,
    spammer_share: float = 0.0,
    truth_shares: tuple[float, ...] = (0.45, 0.45, 0.10),
    accuracy: tuple[float, float] = (0.80, 0.95),
    labels: tuple[str, ...] = PAIRWISE_LABELS,
    seed: int = 0,
) -> SimulatedCrowd:
    """``n_items`` items, each voted on by ``votes_per_item`` distinct workers drawn
    uniformly from ``n_workers`` (default: about 500 votes per worker)."""
    if len(truth_shares) != len(labels):
        raise ValueError(f"need one truth share per label {labels}, got {truth_shares}")
    if not 0 <= spammer_share <= 1:
        raise ValueError(f"spammer_share must be in [0, 1], got {spammer_share}")
    rng = np.random.default_rng(seed)
    k = len(labels)
    n_workers = n_workers or max(votes_per_item, n_items * votes_per_item // 500)
    if n_workers < votes_per_item:
        raise ValueError(f"{votes_per_item} votes per item need at least as many workers")
    names = [f"w{i:04d}" for i in range(n_workers)]
    n_spam = round(spammer_share * n_workers)
    confusion = np.empty((n_workers, k, k))
    for w in range(n_workers - n_spam):
        confusion[w] = _good_confusion(rng, k, rng.uniform(*accuracy))
    for j, w in enumerate(range(n_workers - n_spam, n_workers)):
        confusion[w] = np.full((k, k), 1 / k) if j % 2 == 0 else np.eye(k)[[0] * k]
    truth = rng.choice(k, size=n_items, p=np.asarray(truth_shares) / sum(truth_shares))
    workers = rng.random((n_items, n_workers)).argpartition(votes_per_item - 1, axis=1)
    workers = workers[:, :votes_per_item].ravel()
    items = np.repeat(np.arange(n_items), votes_per_item)
    cumulative = confusion[workers, truth[items]].cumsum(axis=1)
    given = (rng.random(len(items))[:, None] > cumulative[:, :-1]).sum(axis=1)
    votes = list(zip(items.tolist(), np.asarray(names)[workers].tolist(),
                     np.asarray(labels)[given].tolist(), strict=True))
    return SimulatedCrowd(votes, truth, labels, dict(zip(names, confusion, strict=True)),
                          frozenset(names[n_workers - n_spam:]))
