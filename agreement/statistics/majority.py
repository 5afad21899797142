"""Human majority vote, judge accuracy against it (VisIT-Bench §4.3), judge vs judge."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from itertools import repeat

import numpy as np

from ._common import (
    DEFAULT_LABELS,
    TIE,
    _encode,
    _Result,
    _same_length,
)
from .proportions import McNemarResult, ProportionCI, mcnemar_exact, proportion_ci


@dataclasses.dataclass(frozen=True)
class Majority(_Result):
    """Per-item majority: label code (-1 if no unique majority), its votes k, and N."""

    codes: np.ndarray
    k: np.ndarray
    n_votes: np.ndarray
    labels: tuple[Hashable, ...]

    def __len__(self) -> int:
        return len(self.codes)

    def take(self, index: Sequence[int] | np.ndarray) -> Majority:
        """The majority of a subset of the items (a report computes it once for every item
        and hands each judge, and each pair of judges, the items it covers)."""
        index = np.asarray(index, dtype=np.int64)
        return Majority(self.codes[index], self.k[index], self.n_votes[index], self.labels)


def human_majority(
    votes: Sequence[Sequence[Hashable]], labels: Sequence[Hashable] = DEFAULT_LABELS
) -> Majority:
    """Majority label of each item's votes, vectorised for 100k-item inputs.

    ``votes[i]`` is item i's list of labels (lists may differ in length; a 2-D array
    works too). Items whose top label is shared (e.g. 2-2) have no majority (code -1).
    """
    if len(votes) == 0:
        raise ValueError("votes is empty")
    labels = tuple(labels)
    if len(set(labels)) != len(labels) or len(labels) < 2:
        raise ValueError(f"labels must be at least two distinct values, got {labels}")
    lookup = {lab: i for i, lab in enumerate(labels)}
    if isinstance(votes, np.ndarray) and votes.ndim == 2 and votes.dtype != object:
        counts = np.stack([(votes == lab).sum(axis=1) for lab in labels], axis=1)
        bad = np.nonzero(counts.sum(axis=1) != votes.shape[1])[0]
        if len(bad):
            i = int(bad[0])
            v = next(x for x in votes[i].tolist() if x not in lookup)
            raise ValueError(
                f"unknown human vote {v!r} for item {i}; expected one of {list(labels)}"
            )
    else:
        lengths = np.fromiter((len(item) for item in votes), dtype=np.int64, count=len(votes))
        flat = [v for item in votes for v in item]
        try:
            codes = np.fromiter(map(lookup.get, flat, repeat(-1)), dtype=np.int64, count=len(flat))
        except TypeError:  # an unhashable vote, e.g. a nested list
            raise ValueError(
                "human votes must be a list of label lists, one list per item"
            ) from None
        if (codes < 0).any():
            pos = int(np.argmax(codes < 0))
            item = int(np.searchsorted(np.cumsum(lengths), pos, side="right"))
            raise ValueError(
                f"unknown human vote {flat[pos]!r} for item {item}; expected one of {list(labels)}"
            )
        item_idx = np.repeat(np.arange(len(votes)), lengths)
        counts = np.bincount(item_idx * len(labels) + codes, minlength=len(votes) * len(labels))
        counts = counts.reshape(len(votes), len(labels))
    n_votes = counts.sum(axis=1)
    if (n_votes == 0).any():
        raise ValueError(f"item {int(np.argmax(n_votes == 0))} has no human votes")
    k = counts.max(axis=1)
    unique = (counts == k[:, None]).sum(axis=1) == 1
    codes = np.where(unique, counts.argmax(axis=1), -1)
    return Majority(codes, k, n_votes, labels)


def majority_labels(
    votes: Sequence[Sequence[Hashable]], labels: Sequence[Hashable] = DEFAULT_LABELS
) -> list[Hashable | None]:
    """Majority label per item, or None where the vote is tied (for agreement_matrix)."""
    m = human_majority(votes, labels)
    return [m.labels[c] if c >= 0 else None for c in m.codes.tolist()]


# ------------------------------------------------------------------ judge accuracy


@dataclasses.dataclass(frozen=True)
class LevelAccuracy(_Result):
    """Accuracy on items where k of N humans agreed (VisIT-Bench fig. 7 bars)."""

    level: str
    n_items: int
    tie_broken: ProportionCI
    ties_excluded: ProportionCI


@dataclasses.dataclass(frozen=True)
class JudgeAccuracy(_Result):
    """Judge vs human majority: overall and by agreement level, two tie policies."""

    overall: ProportionCI
    overall_ties_excluded: ProportionCI
    by_level: dict[str, LevelAccuracy]
    n_items: int
    n_no_majority: int
    n_judge_ties: int
    seed: int


def _tie_break(judge: np.ndarray, n_labels: int, seed: int) -> np.ndarray:
    """Replace ties (-1) by a uniform random label; one draw per item, in item order,
    so a given (seed, item position) always resolves the same way."""
    draws = np.random.default_rng(seed).integers(n_labels, size=len(judge))
    return np.where(judge == -1, draws, judge)


def _judge_correct(
    human_votes, judge, labels, tie_label, seed
) -> tuple[Majority, np.ndarray, np.ndarray, np.ndarray]:
    _same_length(human_votes=human_votes, judge=judge)
    maj = _majority_of(human_votes, labels)
    codes = _encode(judge, maj.labels, tie_label, "judge")
    has_majority = maj.codes >= 0
    correct = _tie_break(codes, len(maj.labels), seed) == maj.codes
    return maj, codes, has_majority, correct


def _majority_of(human_votes, labels) -> Majority:
    """``human_votes`` as a Majority: computed from the votes, or one computed before."""
    if not isinstance(human_votes, Majority):
        return human_majority(human_votes, labels)
    if human_votes.labels != tuple(labels):
        raise ValueError(f"majority over labels {human_votes.labels}, expected {tuple(labels)}")
    return human_votes


def accuracy_vs_majority(
    human_votes: Sequence[Sequence[Hashable]] | Majority,
    judge: Sequence[Hashable],
    *,
    labels: Sequence[Hashable] = DEFAULT_LABELS,
    tie_label: Hashable = TIE,
    seed: int = 0,
    confidence: float = 0.95,
) -> JudgeAccuracy:
    """How often the judge reproduces the human majority vote (``human_votes``: each item's
    votes, or their ``human_majority``).

    Items without a unique human majority are left out (counted in n_no_majority).
    Judge ties are resolved uniformly at random with ``seed`` (as VisIT-Bench does,
    so every metric is scored in the same forced-choice setting) and, separately,
    dropped (``ties_excluded``). Levels are keyed "k/N", e.g. "5/5", "4/5", "3/5".
    """
    maj, codes, has_majority, correct = _judge_correct(human_votes, judge, labels, tie_label, seed)
    decisive = codes >= 0

    def ci(mask: np.ndarray) -> ProportionCI:
        return proportion_ci(int(correct[mask].sum()), int(mask.sum()), confidence)

    by_level: dict[str, LevelAccuracy] = {}
    base = int(maj.n_votes.max()) + 1
    keys = np.unique(maj.k[has_majority] * base + maj.n_votes[has_majority]).tolist()
    level_keys = sorted(
        ((kn // base, kn % base) for kn in keys), key=lambda kn: (-kn[0] / kn[1], -kn[1])
    )
    for k, n in level_keys:
        mask = has_majority & (maj.k == k) & (maj.n_votes == n)
        by_level[f"{k}/{n}"] = LevelAccuracy(
            f"{k}/{n}", int(mask.sum()), ci(mask), ci(mask & decisive)
        )
    return JudgeAccuracy(
        overall=ci(has_majority),
        overall_ties_excluded=ci(has_majority & decisive),
        by_level=by_level,
        n_items=int(has_majority.sum()),
        n_no_majority=int((~has_majority).sum()),
        n_judge_ties=int((has_majority & ~decisive).sum()),
        seed=seed,
    )


def compare_judges(
    human_votes: Sequence[Sequence[Hashable]] | Majority,
    judge_a: Sequence[Hashable],
    judge_b: Sequence[Hashable],
    *,
    labels: Sequence[Hashable] = DEFAULT_LABELS,
    tie_label: Hashable = TIE,
    seed: int = 0,
    exclude_ties: bool = False,
) -> McNemarResult:
    """Exact McNemar between two judges' correctness against the human majority.

    Both judges' ties are broken with the same per-item draws, so an item both judges
    tie on is concordant (it tells nothing about which judge is better). With
    ``exclude_ties`` items where either judge tied are dropped instead.
    """
    _same_length(human_votes=human_votes, judge_a=judge_a, judge_b=judge_b)
    _, codes_a, has_maj, correct_a = _judge_correct(human_votes, judge_a, labels, tie_label, seed)
    _, codes_b, _, correct_b = _judge_correct(human_votes, judge_b, labels, tie_label, seed)
    keep = has_maj & ((codes_a >= 0) & (codes_b >= 0) if exclude_ties else True)
    if not keep.any():
        raise ValueError("no items left to compare (no human majority or all tied)")
    return mcnemar_exact(correct_a[keep], correct_b[keep])
