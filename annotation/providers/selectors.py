"""Reads for the marketplace side: cost so far, what is committed, status counts. No writes."""
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, Q

from annotation.models import Assignment, Batch, Task, Worker
from annotation.providers.base import get_provider
from annotation.providers.costs import ZERO, CostEstimate, estimate
from annotation.providers.models import Bonus, ProviderHit, ProviderSubmission

_COMMITTED_BONUS = (Bonus.Status.PENDING, Bonus.Status.SENDING, Bonus.Status.PAID,
                    Bonus.Status.UNCERTAIN)


@dataclass(frozen=True)
class BatchCosts:
    estimate: CostEstimate  # every slot paid + every committed bonus, fees included
    spent: Decimal  # approved work + paid bonuses, fees included
    budget: Decimal | None

    @property
    def committed(self) -> Decimal:
        return self.estimate.total

    @property
    def left(self) -> Decimal | None:
        return None if self.budget is None else self.budget - self.committed


def batch_costs(batch: Batch, *, extra_bonus: Decimal = ZERO) -> BatchCosts:
    fees = get_provider(batch.provider).fees()
    slots = sum(Task.objects.filter(batch=batch).values_list("max_assignments", flat=True))
    bonuses = list(Bonus.objects.filter(batch=batch, status__in=_COMMITTED_BONUS)
                   .values_list("amount", flat=True))
    full = estimate(reward=batch.reward, assignments=slots,
                    assignments_per_hit=batch.assignments_per_task, fees=fees,
                    bonuses=bonuses + ([extra_bonus] if extra_bonus else []))
    approved = Assignment.objects.filter(batch=batch, status=Assignment.Status.APPROVED).count()
    paid = list(Bonus.objects.filter(batch=batch, status=Bonus.Status.PAID)
                .values_list("amount", flat=True))
    spent = estimate(reward=batch.reward, assignments=approved,
                     assignments_per_hit=batch.assignments_per_task, fees=fees, bonuses=paid)
    return BatchCosts(estimate=full, spent=spent.total, budget=batch.budget)


def batch_status_counts(batch: Batch) -> dict[str, dict[str, int]]:
    """HITs by status, marketplace submissions by status and flag, our assignments by status."""
    def counts(qs, field):
        return {row[field]: row["n"] for row in qs.values(field).annotate(n=Count("id"))}

    subs = ProviderSubmission.objects.filter(hit__batch=batch)
    return {
        "hits": counts(ProviderHit.objects.filter(batch=batch), "status"),
        "remote": counts(subs, "remote_status"),
        "flagged": counts(subs.filter(~Q(flag="")), "flag"),
        "assignments": counts(Assignment.objects.filter(batch=batch), "status"),
        "bonuses": counts(Bonus.objects.filter(batch=batch), "status"),
    }


def published_hit(task: Task, provider: str, external_id: str) -> bool:
    """Whether this deployment published ``task`` on ``provider`` as ``external_id`` (an MTurk
    HIT): the only arrivals a marketplace task page accepts."""
    return bool(external_id) and ProviderHit.objects.filter(
        task=task, batch_id=task.batch_id, provider=provider, external_id=external_id,
    ).exists()


def published_studies(batch: Batch) -> set[str]:
    """The Prolific study ids this deployment created for ``batch`` (empty until launched)."""
    return set(ProviderHit.objects.filter(batch=batch, provider=Worker.Provider.PROLIFIC)
               .exclude(external_id="").values_list("external_id", flat=True))
