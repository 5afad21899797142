"""Worker reliability beyond majority: Dawid–Skene and MACE over crowd votes.

Dawid–Skene comes from ``crowd-kit`` (Toloka's aggregation library), MACE from ``.mace`` (a
vectorised EM started from the vote shares: why not crowd-kit's is said there); this module
turns ``(item, worker, label)`` triples into their inputs, and a fit into per-item posteriors
and per-worker estimates. Conventions:

- Labels are categories: ``"A"``, ``"B"`` and ``"tie"`` by default (a tie is its own
  category, not half a vote), followed by any other label found in the votes, in order of
  first appearance. Passing ``labels`` makes any other label an error.
- A vote whose worker is ``None`` or ``""`` is anonymous. All anonymous votes are pooled
  into one pseudo-worker (reported with ``worker=None``): released files such as
  VisIT-Bench's human preferences carry no worker id, and giving each vote its own
  pseudo-worker would fit one confusion matrix to a single vote (it then agrees with
  whatever the item's posterior says, and weighs nothing). Pooled, the model learns one
  confusion for "the crowd", so anonymous items are decided by their vote counts and the
  crowd's label biases.
- A worker's ``accuracy`` is the expected share of their votes equal to the true label
  under the fitted item posteriors (the same definition for every model), with a
  Jeffreys interval: Beta(s + 1/2, n - s + 1/2) on those s expected-correct votes out of
  n. It is conditional on the fitted posteriors, so it says how many votes the estimate
  rests on, not how uncertain the other workers' parameters are.
- ``confusion[w][t, g]`` is P(worker w gives label g | true label t): Dawid–Skene's
  full matrix; MACE's competence c and spamming distribution theta give
  c * [g == t] + (1 - c) * theta[g]. Rows of labels no vote used are NaN.

crowd-kit's pandas calls warn about pandas 4 deprecations (``inplace=``, ``copy=``); those
warnings are silenced for crowd-kit's modules only.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Hashable, Iterable, Sequence

import numpy as np
from scipy import stats

from ._common import DEFAULT_LABELS, TIE, _Result
from .mace import fit_mace

DAWID_SKENE = "dawid-skene"
MACE = "mace"
MODELS = (DAWID_SKENE, MACE)
PAIRWISE_LABELS = (*DEFAULT_LABELS, TIE)

warnings.filterwarnings("ignore", message=r".*(inplace|copy) keyword", module=r"crowdkit\.")


@dataclasses.dataclass(frozen=True)
class WorkerEstimate(_Result):
    """One worker's estimated reliability (``worker`` None: the pooled anonymous votes)."""

    worker: Hashable | None
    n_votes: int
    accuracy: float
    ci: tuple[float, float]
    confusion: np.ndarray  # [true label, given label]


@dataclasses.dataclass(frozen=True)
class ReliabilityFit(_Result):
    """A reliability model fitted to a crowd: item posteriors and worker estimates."""

    model: str
    labels: tuple[Hashable, ...]
    items: tuple[Hashable, ...]
    posterior: np.ndarray  # [item, label], rows sum to 1
    workers: tuple[WorkerEstimate, ...]
    confidence: float

    @property
    def codes(self) -> np.ndarray:
        """Model-weighted label of each item (index into ``labels``)."""
        return self.posterior.argmax(axis=1)

    def predicted(self) -> dict[Hashable, Hashable]:
        """Model-weighted label of each item, keyed by item."""
        return {item: self.labels[c] for item, c in zip(self.items, self.codes.tolist(), strict=True)}

    def worker(self, worker: Hashable | None) -> WorkerEstimate:
        return next(w for w in self.workers if w.worker == worker)


@dataclasses.dataclass(frozen=True)
class _Votes:
    items: tuple[Hashable, ...]
    workers: tuple[Hashable | None, ...]
    labels: tuple[Hashable, ...]
    item: np.ndarray
    worker: np.ndarray
    label: np.ndarray


def _is_anonymous(worker: Hashable | None) -> bool:
    return worker is None or worker == ""


def _encode_votes(
    votes: Iterable[tuple[Hashable, Hashable | None, Hashable]],
    labels: Sequence[Hashable] | None,
) -> _Votes:
    fixed = labels is not None
    label_index = {lab: i for i, lab in enumerate(labels if fixed else PAIRWISE_LABELS)}
    if fixed and len(label_index) != len(labels):
        raise ValueError(f"labels must be distinct, got {tuple(labels)}")
    item_index: dict[Hashable, int] = {}
    worker_index: dict[Hashable | None, int] = {}
    codes: list[tuple[int, int, int]] = []
    for n, vote in enumerate(votes):
        try:
            item, worker, label = vote
            hash(item), hash(worker), hash(label)
        except (TypeError, ValueError):
            raise ValueError(
                f"vote {n} must be an (item, worker, label) triple of hashable values, "
                f"got {vote!r}"
            ) from None
        if label not in label_index:
            if fixed:
                raise ValueError(
                    f"unknown label {label!r} in vote {n}; expected one of {list(labels)}"
                )
            label_index[label] = len(label_index)
        worker = None if _is_anonymous(worker) else worker
        codes.append((item_index.setdefault(item, len(item_index)),
                      worker_index.setdefault(worker, len(worker_index)),
                      label_index[label]))
    if not codes:
        raise ValueError("no votes to fit")
    arr = np.asarray(codes, dtype=np.int64)
    return _Votes(tuple(item_index), tuple(worker_index), tuple(label_index),
                  arr[:, 0], arr[:, 1], arr[:, 2])


def _frame(v: _Votes):
    import pandas as pd

    return pd.DataFrame({"task": v.item, "worker": v.worker, "label": v.label})


def _full(frame_like, index_codes: np.ndarray, n_rows: int, col_codes, n_cols: int) -> np.ndarray:
    """Scatter a crowd-kit table (rows and columns named by our integer codes) into a dense
    array, so labels no vote used get a column of zeros."""
    out = np.zeros((n_rows, n_cols))
    out[np.ix_(np.asarray(index_codes, dtype=np.int64), np.asarray(col_codes, dtype=np.int64))] = (
        np.asarray(frame_like, dtype=float)
    )
    return out


def _fit_dawid_skene(v: _Votes, n_iter: int) -> tuple[np.ndarray, np.ndarray]:
    from crowdkit.aggregation import DawidSkene

    ds = DawidSkene(n_iter=n_iter, tol=1e-5).fit(_frame(v))
    k = len(v.labels)
    posterior = _full(ds.probas_.to_numpy(), ds.probas_.index, len(v.items),
                      ds.probas_.columns, k)
    errors = ds.errors_  # index (worker, given label), columns true label
    confusion = np.full((len(v.workers), k, k), np.nan)
    used = np.asarray(errors.columns, dtype=np.int64)
    w = errors.index.get_level_values(0).to_numpy(dtype=np.int64)
    given = errors.index.get_level_values(1).to_numpy(dtype=np.int64)
    confusion[:, used[:, None], :] = 0.0
    for j, true in enumerate(used.tolist()):
        confusion[w, true, given] = errors.iloc[:, j].to_numpy()
    return posterior, confusion


def _fit_mace(v: _Votes, n_iter: int) -> tuple[np.ndarray, np.ndarray]:
    k = len(v.labels)
    used = np.unique(v.label)  # fitted over the labels given; the others get no posterior
    code = np.full(k, -1)
    code[used] = np.arange(len(used))
    fit = fit_mace(v.item, v.worker, code[v.label], n_items=len(v.items),
                   n_workers=len(v.workers), n_labels=len(used), n_iter=n_iter)
    posterior = np.zeros((len(v.items), k))
    posterior[:, used] = fit.posterior
    theta = np.zeros((len(v.workers), k))
    theta[:, used] = fit.theta
    competence = fit.competence
    confusion = (1 - competence)[:, None, None] * theta[:, None, :] + (
        competence[:, None, None] * np.eye(k)[None]
    )
    confusion[:, np.setdiff1d(np.arange(k), used), :] = np.nan
    return posterior, confusion


_FITTERS = {DAWID_SKENE: _fit_dawid_skene, MACE: _fit_mace}
_DEFAULT_ITERATIONS = {DAWID_SKENE: 100, MACE: 50}


def fit_worker_model(
    votes: Iterable[tuple[Hashable, Hashable | None, Hashable]],
    model: str = DAWID_SKENE,
    *,
    labels: Sequence[Hashable] | None = None,
    confidence: float = 0.95,
    n_iter: int | None = None,
) -> ReliabilityFit:
    """Fit ``model`` ("dawid-skene" or "mace") to (item, worker, label) votes.

    ``n_iter`` caps the EM iterations (100 for Dawid–Skene, crowd-kit's default, which
    also stops when its bound changes by less than 1e-5; 50 for MACE, which also stops when
    no item's posterior moves by 1e-5).
    """
    if model not in _FITTERS:
        raise ValueError(f"unknown reliability model {model!r}; expected one of {list(MODELS)}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    v = _encode_votes(votes, labels)
    posterior, confusion = _FITTERS[model](v, n_iter or _DEFAULT_ITERATIONS[model])
    posterior /= posterior.sum(axis=1, keepdims=True)
    n_votes = np.bincount(v.worker, minlength=len(v.workers))
    correct = np.bincount(v.worker, weights=posterior[v.item, v.label],
                          minlength=len(v.workers))
    tail = (1 - confidence) / 2
    low = stats.beta.ppf(tail, correct + 0.5, n_votes - correct + 0.5)
    high = stats.beta.ppf(1 - tail, correct + 0.5, n_votes - correct + 0.5)
    workers = tuple(
        WorkerEstimate(worker, int(n_votes[w]), float(correct[w] / n_votes[w]),
                       (float(low[w]), float(high[w])), confusion[w])
        for w, worker in enumerate(v.workers)
    )
    return ReliabilityFit(model, v.labels, v.items, posterior, workers, confidence)

