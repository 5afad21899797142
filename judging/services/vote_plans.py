"""The vote planner for one study: what its votes say now, the plan, and the batch that does it.

``vote_plan`` reads (the study's human votes per comparison, a judge's verdicts on them, the
free instance slots per model pair) and asks ``judging.planner`` (the pure core, where the
variance model is documented). ``vote_plan_batch_create`` is the one write: it re-plans inside
the transaction, samples the planned pairs as an active round (``sampling = "active"``) and
puts them in crowd batches of the study, with the plan's cost as the batch budget. The page,
the API-less form and ``plan_votes`` call these two.
"""
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
from django.db import transaction

from annotation.providers.costs import CostEstimate, FeeSchedule

from .. import planner
from ..models import Comparison
from ..powered_boards import comparison_shares
from ..ppi import Pairs
from ..selectors import HUMAN, judge_names, model_names, pairwise_judgments_qs
from .active_comparisons import comparisons_sample_active, sampling_room
from .comparisons import SamplingError, comparison_batches_create


@dataclass(frozen=True)
class StudyPlan:
    """The plan of a study with its inputs and costs, ready for a page or a command."""

    target: planner.Target
    judge: str | None
    world: planner.World
    plans: planner.Plans
    human_comparisons: int  # voted on so far
    votes_per_comparison: int
    reward: Decimal
    human_cost: CostEstimate
    judge_cost: CostEstimate | None


def study_world(study, judge: str | None = None) -> planner.World:
    """The study's votes as a ``planner.World``: strengths, comparisons per pair, worker
    noise, the judge's residual correlation (on the comparisons it and people both rated)
    and the pairs' free instance slots."""
    if judge is not None and (judge == HUMAN or judge not in judge_names(study)):
        raise planner.PlanError(f"no automatic judge named {judge!r} has pairwise verdicts in "
                                "this study")
    human = comparison_shares(pairwise_judgments_qs(judge=HUMAN, study=study))
    room = sampling_room(study=study)
    ids = sorted({x for a, b, *_ in human.values() for x in (a, b)})
    if len(ids) < 2 or len(human) < 2:
        raise planner.PlanError("the study needs human votes on at least 2 comparisons "
                                "before a plan can be made")
    pos = {x: k for k, x in enumerate(ids)}
    keys = sorted(human)
    a = np.array([pos[human[c][0]] for c in keys])
    b = np.array([pos[human[c][1]] for c in keys])
    y = np.array([human[c][2] for c in keys])
    verdicts = comparison_shares(pairwise_judgments_qs(judge=judge, study=study)) if judge else {}
    f = np.array([verdicts[c][2] if c in verdicts else np.nan for c in keys])
    known = model_names(ids)
    names = [known[x] for x in ids]
    world = planner.measure(names, Pairs.of(a, b, np.zeros(len(keys)), y))
    rho = None
    both = ~np.isnan(f)
    if judge and both.sum() >= 3:
        rho = planner.residual_correlation(
            Pairs.of(a[both], b[both], f[both], y[both]), world.strengths)
    capacity = np.zeros((len(ids), len(ids)))
    at = {x: k for k, x in enumerate(room.ids)}
    for i, x in enumerate(ids):
        for j, z in enumerate(ids):
            if x in at and z in at:
                capacity[i, j] = room.capacity[at[x], at[z]]
    return planner.World(world.models, world.strengths, world.comparisons, world.dispersion,
                         rho=rho, capacity=capacity)


def vote_plan(study, target: str, *, judge: str | None = None, votes_per_comparison: int = 5,
              reward: Decimal = Decimal("0")) -> StudyPlan:
    """The plan for ``target`` (``ci:W``, ``separate:X,Y``, ``topk:K``), priced with the
    study's fee rate; ``planner.PlanError`` for a target or judge it cannot use."""
    if votes_per_comparison < 1:
        raise planner.PlanError("votes per comparison must be >= 1")
    reward = Decimal(reward)
    if reward < 0:
        raise planner.PlanError("the reward must be >= 0")
    parsed = planner.Target.parse(target)
    world = study_world(study, judge)
    plans = planner.plan(world, parsed)
    fees = FeeSchedule(kind="rate", rate=study.fee_rate) if study.fee_rate else FeeSchedule()
    price = dict(votes_per_comparison=votes_per_comparison, reward=reward, fees=fees)
    return StudyPlan(parsed, judge, world, plans, int(world.comparisons.sum() / 2),
                     votes_per_comparison, reward, plans.human_only.cost(**price),
                     plans.with_judge.cost(**price) if plans.with_judge else None)


@transaction.atomic
def vote_plan_batch_create(study, target: str, *, title: str, judge: str | None = None,
                           votes_per_comparison: int = 5, reward: Decimal = Decimal("0"),
                           seed: int = 0):
    """Sample the plan's comparisons (the judge's plan when ``judge`` is given) and put them
    in draft batches of the study, each budgeted at the plan's cost (a plan mixing
    conversations and single turns makes two batches, each with the whole plan's budget). Returns ``(plan, batches)``;
    a plan that needs nothing, or cannot be reached, writes nothing (``SamplingError``)."""
    result = vote_plan(study, target, judge=judge, votes_per_comparison=votes_per_comparison,
                       reward=reward)
    chosen = result.plans.with_judge if judge else result.plans.human_only
    cost = result.judge_cost if judge else result.human_cost
    if not chosen.reachable:
        raise SamplingError(f"no batch: {chosen.target} is out of reach with the free "
                            "comparisons of this study")
    if chosen.comparisons == 0:
        raise SamplingError(f"no batch needed: {chosen.target} is met already")

    def planned(names, capacity, limit):
        index = {name: k for k, name in enumerate(names)}
        pairs = []
        for (i, j), n in sorted(chosen.pairs.items()):
            a, b = index[result.world.models[i]], index[result.world.models[j]]
            if capacity[a, b] < n:
                raise SamplingError("the free comparisons changed while planning; plan again")
            pairs += [(a, b)] * n
        return pairs[:limit]

    made = comparisons_sample_active(budget=chosen.comparisons, study=study, chooser=planned,
                                     judgments_per_comparison=votes_per_comparison,
                                     reward=reward, seed=seed)
    batches = comparison_batches_create(
        comparisons=Comparison.objects.filter(pk__in=[c.pk for c in made])
        .select_related("instance").order_by("pk"),
        title=title, judgments_per_comparison=votes_per_comparison, reward=reward, seed=seed,
        study=study, budget=cost.total if reward else None)
    return result, batches
