"""Active comparison sampling in rounds: ``sample_comparisons --mode active --budget N``.

Each call is one round: the human votes collected so far become pairwise counts, comparisons
sampled but not fully voted on yet count as pending, and ``judging.active_sampling`` (the pure
core, where the acquisition rule and the unbiasedness argument are documented) picks the model
pairs whose next vote teaches the ranking most. Each pair goes to an instance, drawn at random
(seeded), that both models answered and on which the pair was never compared -- so an item
(instance, pair) is never sampled twice and no worker can vote on it twice; within one
comparison the engine already guarantees ``N`` distinct workers (``(task, worker)`` is unique).
The comparisons are recorded with ``sampling = "active"`` (``uniform`` / ``new_model`` for the
other modes), which the leaderboard reports (``selectors.comparison_sampling_counts``).

Claim-time creation (picking the pair when a worker asks for a task) is not done here: a round
is sampled, put in a batch, voted on, and the next round sees its votes.
"""
import random
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
from django.db import transaction
from django.db.models import Count, Q

from .. import ratings
from ..active_sampling import choose_pairs
from ..models import Comparison, EvalModel, Judgment
from ..selectors import HUMAN, pairwise_judgments_qs
from .comparisons import (
    SamplingError,
    budget_limit,
    comparison_new,
    instances_filtered,
    response_slots,
)
from .responses import reference_responses_sync

ACTIVE = "active"
SAMPLED_MODES = ("uniform", "new_model", ACTIVE)  # comparisons made to be voted on by the crowd


def _votes(instances, index: dict[str, int], m: int, study=None):
    """(wins, ties) of the human votes among the indexed models (on ``instances`` if given)."""
    qs = pairwise_judgments_qs(judge=HUMAN, study=study)
    if instances is not None:
        qs = qs.filter(comparison__instance__in=instances)
    rows = [r for r in qs.values_list("comparison__response_a__model__name",
                                      "comparison__response_b__model__name", "choice")
            if r[0] in index and r[1] in index]
    wins, ties = np.zeros((m, m)), np.zeros((m, m))
    if rows:
        names, w, t = ratings.pair_counts(rows)
        at = [index[n] for n in names]
        wins[np.ix_(at, at)] = w
        ties[np.ix_(at, at)] = t
    return wins, ties


@dataclass
class Room:
    """Where a round may put comparisons: per model pair (indices into ``names``) the
    instances both models answered and the pair was never compared on, and the capacity."""

    slots: dict
    ids: list[int]
    names: list[str]
    free: dict[tuple[int, int], list[int]]
    capacity: np.ndarray


def sampling_room(*, models: list[str] | None = None, instances=None, study=None) -> Room:
    """The free (instance, pair) slots of the study's models (``models``: only these)."""
    if instances is None:
        instances = instances_filtered(study=study)
    slots = response_slots(instances)
    if models:
        found = dict(EvalModel.objects.in_study(study).filter(name__in=models)
                     .values_list("pk", "name"))
        missing = sorted(set(models) - set(found.values()))
        if missing:
            raise SamplingError(f"unknown model(s): {missing}")
        slots = {i: {m: r for m, r in by.items() if m in found} for i, by in slots.items()}
    ids = sorted({m for by in slots.values() for m in by})
    pos = {m: k for k, m in enumerate(ids)}
    names = dict(EvalModel.objects.filter(pk__in=ids).values_list("pk", "name"))
    m = len(ids)
    free: dict[tuple[int, int], list[int]] = defaultdict(list)  # pair -> instances to use
    taken = {(i, frozenset((a, b))) for i, a, b, _ in _existing(slots)}
    for instance_id, by_model in sorted(slots.items()):
        here = sorted(pos[x] for x in by_model)
        for a_i, a in enumerate(here):
            for b in here[a_i + 1:]:
                if (instance_id, frozenset((ids[a], ids[b]))) not in taken:
                    free[(a, b)].append(instance_id)
    capacity = np.zeros((m, m))
    for (a, b), spots in free.items():
        capacity[a, b] = capacity[b, a] = len(spots)
    return Room(slots, ids, [names[x] for x in ids], free, capacity)


@transaction.atomic
def comparisons_sample_active(*, budget: int | None, models: list[str] | None = None,
                              instances=None, max_comparisons: int | None = None,
                              max_cost: Decimal | None = None, reward: Decimal = Decimal("0"),
                              judgments_per_comparison: int = 5, min_per_model: int = 2,
                              seed: int = 0, study=None, chooser=None) -> list[Comparison]:
    """Create and return the next round of at most ``budget`` comparisons, chosen actively.

    ``chooser(names, capacity, limit)`` (default: ``choose_pairs``'s A-optimal round) returns
    the pairs as index pairs into ``names``; the vote planner passes its own. ``study``: its
    instances and models (None: the default study's)."""
    reference_responses_sync(study=study)
    if instances is None:
        instances = instances_filtered(study=study)
    limit = budget_limit(wanted=budget, max_comparisons=max_comparisons, max_cost=max_cost,
                         reward=reward, judgments_per_comparison=judgments_per_comparison)
    if limit is None:
        raise SamplingError("active sampling needs a budget (--budget N)")
    room = sampling_room(models=models, instances=instances, study=study)
    if not room.free:
        raise SamplingError("no instance has responses from two models that were not compared "
                            "on it already")
    if chooser is not None:
        pairs = chooser(room.names, room.capacity.copy(), limit)
    else:
        pairs = _a_optimal_round(room, instances, limit, judgments_per_comparison,
                                 min_per_model, seed, study)
    rnd = random.Random(seed)
    for spots in room.free.values():
        rnd.shuffle(spots)
    made = []
    for a, b in pairs:
        a, b = min(a, b), max(a, b)
        instance_id = room.free[(a, b)].pop()
        made.append(comparison_new(instance_id, room.slots[instance_id][room.ids[a]],
                                   room.slots[instance_id][room.ids[b]], rnd, ACTIVE))
    return Comparison.objects.bulk_create(made)


def _a_optimal_round(room: Room, instances, limit, judgments_per_comparison, min_per_model,
                     seed, study):
    m = len(room.ids)
    pos = {x: k for k, x in enumerate(room.ids)}
    wins, ties = _votes(instances, {n: k for k, n in enumerate(room.names)}, m, study)
    pending = np.zeros((m, m))
    for _, a_id, b_id, votes in _existing(room.slots, gold_choice="",
                                          sampling__in=SAMPLED_MODES):
        outstanding = max(0, judgments_per_comparison - votes) / judgments_per_comparison
        a, b = pos[a_id], pos[b_id]
        pending[a, b] += outstanding
        pending[b, a] += outstanding
    return choose_pairs(wins, ties, limit, pending=pending, capacity=room.capacity,
                        votes_per_comparison=judgments_per_comparison,
                        min_per_model=min_per_model, seed=seed)


def _existing(slots, **filters) -> list[tuple[int, int, int, int]]:
    """``(instance, model a, model b, counted human votes)`` of the comparisons between the
    sampled models on the sampled instances (votes: one verdict per item, as on the board)."""
    qs = (Comparison.objects.filter(instance_id__in=list(slots), **filters)
          .annotate(votes=Count("judgments", filter=Q(
              judgments__source=HUMAN, judgments__kind=Judgment.Kind.PAIRWISE,
              judgments__turn__in=["", "overall"],
              judgments__rejected=False)))  # a join skips the manager: say it here
          .values_list("instance_id", "response_a__model_id", "response_b__model_id", "votes"))
    return [(i, a, b, votes) for i, a, b, votes in qs.iterator()
            if a in slots[i] and b in slots[i]]
