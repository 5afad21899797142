"""Sampling comparisons and turning them into crowd batches.

The human-verified reference competes wherever an instance has one: sampling first gives it its
responses (``reference_responses_sync``). Filters (dataset source, instance kind, category)
pick the instances of a mixed study; a batch of mixed comparisons becomes one batch per page
kind (forced choice for single turns, the multi-turn page for conversations).

Modes (VisIT-Bench §4.2 and appendix F):
- ``uniform``: uniformly random (instance, model A, model B) tuples over every model with a
  response, the reference included, without repeats;
- ``new_model``: a new model against a randomly chosen existing model on every instance.
A budget caps the count (``max_comparisons``) or the crowd cost (``max_cost`` / (reward × N)).
On-screen sides are drawn at random and recorded (``swapped``); ``response_a`` is what the
worker sees as A, so a vote always maps back to a model.
"""
import math
import random
from collections import defaultdict
from decimal import Decimal
from itertools import combinations

from django.db import transaction

from annotation.core.money import AmountRefused
from annotation.engine.services.batches import BATCH_BUDGET, REWARD, batch_create_from_rows
from annotation.models import Batch, Instance
from studies.models import study_pk

from ..models import Comparison, EvalModel, Response
from .responses import reference_responses_sync

KINDS = tuple(Instance.Kind.values)  # single, multi, conversation


class SamplingError(ValueError):
    """The request cannot be met (unknown model, nothing to compare); nothing was written."""


def budget_limit(*, wanted: int | None, max_comparisons: int | None = None,
                 max_cost: Decimal | None = None, reward: Decimal = Decimal("0"),
                 judgments_per_comparison: int = 5) -> int | None:
    """The number of comparisons the budget allows (None = unlimited). A reward or cost the
    batch could not take (``REWARD``, ``BATCH_BUDGET``) is a ``SamplingError``."""
    try:
        reward = REWARD.parse(reward)
        max_cost = BATCH_BUDGET.parse(max_cost, optional=True)
    except AmountRefused as exc:
        raise SamplingError(exc.messages[0]) from exc
    limits = [x for x in (wanted, max_comparisons) if x is not None]
    if max_cost is not None:
        per = reward * judgments_per_comparison
        if per > 0:
            limits.append(int(max_cost // per))
    return min(limits) if limits else None


def instances_filtered(*, source: str | None = None, kind: str | None = None,
                       category: str | None = None, study=None):
    """The instances of ``study`` (None: the default study) a sampling run may use: by source,
    kind and family name."""
    if kind is not None and kind not in KINDS:
        raise SamplingError(f"unknown kind {kind!r}; use one of {', '.join(KINDS)}")
    qs = Instance.objects.filter(study_id=study_pk(study))
    if not (source or kind or category):
        return qs
    if source:
        qs = qs.filter(source=source)
    if kind:
        qs = qs.filter(kind=kind)
    if category:
        qs = qs.filter(family__name=category)
    if not qs.exists():
        raise SamplingError(f"no instance matches source={source!r}, kind={kind!r}, "
                            f"category={category!r}")
    return qs


def response_slots(instances) -> dict[int, dict[int, Response]]:
    """{instance id: {model id: the response that anchors a comparison}} (turn 0, or turn 1
    for conversations, whose other turns the multi-turn page looks up)."""
    slots: dict[int, dict[int, Response]] = defaultdict(dict)
    qs = Response.objects.filter(condition=Response.Condition.GENERATED, turn__in=[0, 1])
    if instances is not None:
        qs = qs.filter(instance__in=instances)
    for response in qs.select_related("instance").order_by("instance_id", "model_id", "turn"):
        conversation = response.instance.kind == Instance.Kind.CONVERSATION
        if response.turn == (1 if conversation else 0):
            slots[response.instance_id][response.model_id] = response
    return slots


def comparison_new(instance_id, first: Response, second: Response, rnd, mode) -> Comparison:
    swapped = rnd.random() < 0.5
    a, b = (second, first) if swapped else (first, second)
    return Comparison(instance_id=instance_id, response_a=a, response_b=b, swapped=swapped,
                      sampling=mode)


@transaction.atomic
def comparisons_sample(*, mode: str = "uniform", tuples: int | None = 1000,
                       new_model: str | None = None, models: list[str] | None = None,
                       instances=None, max_comparisons: int | None = None,
                       max_cost: Decimal | None = None, reward: Decimal = Decimal("0"),
                       judgments_per_comparison: int = 5, seed: int = 0,
                       study=None) -> list[Comparison]:
    """Create and return comparisons drawn by ``mode`` within the budget (seeded), among
    ``study``'s instances and models (None: the default study's)."""
    reference_responses_sync(study=study)
    if instances is None:
        instances = instances_filtered(study=study)
    rnd = random.Random(seed)
    limit = budget_limit(wanted=tuples if mode == "uniform" else None,
                         max_comparisons=max_comparisons, max_cost=max_cost, reward=reward,
                         judgments_per_comparison=judgments_per_comparison)
    allowed = None
    if models:
        found = dict(EvalModel.objects.in_study(study).filter(name__in=models)
                     .values_list("name", "pk"))
        missing = sorted(set(models) - set(found))
        if missing:
            raise SamplingError(f"unknown model(s): {missing}")
        allowed = set(found.values())
    slots = response_slots(instances)
    made: list[Comparison] = []
    if mode == "uniform":
        candidates = []
        for instance_id, by_model in sorted(slots.items()):
            ids = sorted(m for m in by_model if allowed is None or m in allowed)
            candidates += [(instance_id, a, b) for a, b in combinations(ids, 2)]
        if not candidates:
            raise SamplingError("no instance has responses from two models")
        chosen = rnd.sample(candidates, min(len(candidates), limit or len(candidates)))
        made = [comparison_new(i, slots[i][a], slots[i][b], rnd, mode) for i, a, b in chosen]
    elif mode == "new_model":
        new = (EvalModel.objects.in_study(study).filter(name=new_model).first()
               if new_model else None)
        if new is None:
            raise SamplingError(f"new_model: unknown model {new_model!r}")
        for instance_id, by_model in sorted(slots.items()):
            others = sorted(m for m in by_model if m != new.pk and (allowed is None or m in allowed))
            if new.pk in by_model and others:
                made.append(comparison_new(instance_id, by_model[new.pk],
                                           by_model[rnd.choice(others)], rnd, mode))
        if not made:
            raise SamplingError(f"{new_model!r} shares no instance with another model")
        if limit is not None and limit < len(made):
            made = rnd.sample(made, limit)
    else:
        raise SamplingError(f"unknown mode {mode!r}; use 'uniform' or 'new_model'")
    return Comparison.objects.bulk_create(made)


def gold_comparison_create(*, better: Response, worse: Response, seed: int | None = None
                           ) -> Comparison:
    """An attention check: a comparison whose better side is known (sides still randomized)."""
    rnd = random.Random(seed)
    comparison = comparison_new(better.instance_id, better, worse, rnd, "gold")
    comparison.gold_choice = "B" if comparison.swapped else "A"
    comparison.save()
    return comparison


def comparison_batches_create(*, comparisons, title: str, gold: list[Comparison] | tuple = (),
                              **options) -> list[Batch]:
    """One batch per page kind: single-turn comparisons on the forced-choice page, conversations
    on the multi-turn page (titled "… (single-turn)" / "… (conversations)" when both occur);
    each takes gold of its own kind."""
    groups: dict[bool, list[Comparison]] = defaultdict(list)
    for c in comparisons:
        groups[c.instance.kind == Instance.Kind.CONVERSATION].append(c)
    if not groups:
        raise SamplingError("no comparisons to put in a batch")
    batches = []
    for multi_turn, members in sorted(groups.items()):
        label = f"{title} ({'conversations' if multi_turn else 'single-turn'})" \
            if len(groups) > 1 else title
        own_gold = [g for g in gold
                    if (g.instance.kind == Instance.Kind.CONVERSATION) == multi_turn]
        batches.append(comparison_batch_create(comparisons=members, title=label, gold=own_gold,
                                               **options))
    return batches


def comparison_batch_create(*, comparisons, title: str, judgments_per_comparison: int = 5,
                            reward: Decimal = Decimal("0"), gold: list[Comparison] | tuple = (),
                            gold_rate: float = 0.0, seed: int = 0, **options) -> Batch:
    """One batch collecting N judgments per comparison through the engine, gold mixed in.

    ``gold_rate`` is the share of the batch's tasks that are gold (attention checks), drawn
    without repeats from ``gold`` (comparisons with ``gold_choice``) and placed at random.
    Conversation comparisons get the multi-turn page, the rest the forced-choice page.
    """
    comparisons = list(comparisons)
    if not comparisons:
        raise SamplingError("no comparisons to put in a batch")
    if not 0 <= gold_rate < 1:
        raise SamplingError("gold_rate must be in [0, 1)")
    kinds = {c.instance.kind == Instance.Kind.CONVERSATION for c in comparisons}
    if len(kinds) > 1:
        raise SamplingError("a batch holds either conversations or single turns, not both")
    multi_turn = kinds.pop()
    rnd = random.Random(seed)
    rows = [{"comparison": str(c.uuid)} for c in comparisons]
    gold = [g for g in gold if g.gold_choice]
    wanted = math.ceil(gold_rate * len(rows) / (1 - gold_rate)) if gold_rate else 0
    if wanted > len(gold):
        raise SamplingError(f"gold_rate needs {wanted} gold comparisons, only {len(gold)} given")
    key = "overall" if multi_turn else "choice"
    for g in rnd.sample(gold, wanted):
        rows.insert(rnd.randint(0, len(rows)),
                    {"comparison": str(g.uuid), "_gold_answer": {key: g.gold_choice}})
    return batch_create_from_rows(
        hit_type="multiturn_ab" if multi_turn else "pairwise_ab", title=title, rows=rows,
        assignments_per_task=judgments_per_comparison, reward=reward, **options)
