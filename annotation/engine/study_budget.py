"""A study's budget across its batches and judge runs: what is spent or committed so far, what
is left, and the guard that opening a batch or starting a judge run passes.

Spend so far (``study_money``): every batch past its draft at its committed cost with fees
(every slot paid plus the committed bonuses; a finished batch at what it paid), the fees at the
batch's marketplace's own schedule (MTurk, Prolific) or, where the marketplace bills none
(local work), at the study's fee rate; plus what the later layers register in ``SPENDERS``
(judging adds its judge runs), so this layer imports none of them.

The guard (``study_budget_guard``) locks the study's row (``select_for_update``) in the
caller's transaction before it adds up the spend: two activations of one study are taken one
after the other, so they cannot both pass the cap, and a refusal writes nothing.
"""
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.core.marketplaces import get_provider
from annotation.core.money import ZERO
from annotation.engine.selectors import batch_costs, batch_costs_many
from annotation.models import Batch
from studies.models import Study

#: Functions ``study_id -> Decimal``: what else a study has spent or committed.
SPENDERS: list[Callable[[int], Decimal]] = []


def register_spender(spender: Callable[[int], Decimal]) -> None:
    if spender not in SPENDERS:
        SPENDERS.append(spender)


@dataclass(frozen=True)
class StudyMoney:
    budget: Decimal | None  # None: no limit
    spent: Decimal  # spent or committed, fees included

    @property
    def remaining(self) -> Decimal | None:
        return None if self.budget is None else self.budget - self.spent


def study_fees(batch: Batch, study: Study):
    """The batch's marketplace's ``FeeSchedule``; where it bills none (local work), the
    study's fee rate."""
    fees = get_provider(batch.provider).fees()
    return fees if fees.kind != "none" else replace(fees, kind="rate", rate=study.fee_rate)


def batch_study_cost(batch: Batch, study: Study) -> Decimal:
    """What ``batch`` takes of its study's budget: a finished batch what it paid, any other its
    full cost (what opening it commits), fees included."""
    return _taken(batch, batch_costs(batch, fees=study_fees(batch, study)))


def _taken(batch: Batch, costs) -> Decimal:
    return costs.spent if batch.status == Batch.Status.FINISHED else costs.committed


def study_money(study: Study) -> StudyMoney:
    """The study's budget and what it spent or committed: its batches' costs in a fixed number
    of queries (``batch_costs_many``), plus the registered spenders."""
    batches = list(Batch.objects.filter(study=study).exclude(status=Batch.Status.DRAFT))
    costs = batch_costs_many(batches, fees_for=lambda b: study_fees(b, study))
    spent = sum((_taken(b, costs[b.pk]) for b in batches), ZERO)
    spent += sum((Decimal(spender(study.pk)) for spender in SPENDERS), ZERO)
    return StudyMoney(budget=study.budget, spent=spent)


def study_budget_guard(study_id: int, needed: Decimal, what: str) -> None:
    """Refuse (ValidationError, code ``over_budget``, naming what is left and what is needed)
    when ``needed`` would take the study past its budget. Call it inside the transaction that
    commits the spend: it locks the study's row until that transaction ends."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("study_budget_guard must run inside the spending transaction")
    study = Study.objects.select_for_update().get(pk=study_id)
    if study.budget is None:
        return
    money = study_money(study)
    if needed > money.remaining:
        raise ValidationError(
            f"Refused {what}: it needs ${needed:.2f} (fees included) and the study "
            f"“{study}” has ${max(money.remaining, ZERO):.2f} left of its ${study.budget:.2f} "
            f"budget (${money.spent:.2f} spent or committed).", code="over_budget")
