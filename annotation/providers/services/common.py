"""What every marketplace operation shares: the rules (calls outside transactions, the action
log), the batch's marketplace settings and launch context, and the reports operations return."""
import secrets
from dataclasses import dataclass, field
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from annotation.core.clients.errors import MarketplaceError
from annotation.engine.hit_types import get_hit_type
from annotation.models import Assignment, Batch, Qualification, Task, Worker
from annotation.providers.base import (
    LaunchContext,
    Provider,
    get_provider,
)
from annotation.providers.costs import budget_check
from annotation.providers.models import (
    ProviderAction,
    ProviderConfig,
    ProviderHit,
)
from annotation.providers.selectors import batch_costs

DONE = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED, Assignment.Status.REJECTED)
TOKEN_MEMORY = timedelta(hours=23)  # MTurk forgets UniqueRequestTokens after 24 hours


class LaunchIncomplete(MarketplaceError):
    """Some units were published, then a call failed; re-running the launch resumes."""


@dataclass
class LaunchReport:
    total: int = 0
    created: int = 0
    reused: int = 0  # published by an earlier (interrupted) run or found by its token


@dataclass
class SyncReport:
    seen: int = 0
    matched: int = 0
    flagged: int = 0
    approved: int = 0
    rejected: int = 0
    errors: list[str] = field(default_factory=list)


def require_outside_transaction() -> None:
    if transaction.get_connection().in_atomic_block:
        raise RuntimeError("Marketplace calls must not run inside a database transaction.")


def action_log(batch, provider: str, action: str, target: str, ok: bool, detail: str = "",
         actor: str = "") -> None:
    ProviderAction.objects.create(
        batch=batch, provider=provider, action=action, target=target[:200], ok=ok,
        detail=str(detail)[:1000], actor=str(actor)[:150], created_at=timezone.now(),
    )


def config_for(batch: Batch) -> ProviderConfig:
    """The batch's marketplace settings, created with safe defaults on first use."""
    config, _ = ProviderConfig.objects.get_or_create(
        batch=batch, defaults={"completion_code": secrets.token_hex(4).upper()})
    if not config.completion_code:
        config.completion_code = secrets.token_hex(4).upper()
        ProviderConfig.objects.filter(pk=config.pk).update(completion_code=config.completion_code)
    return config


def remote_assignment_id(assignment: Assignment) -> str:
    """The marketplace's id when this assignment lives on the batch's marketplace, else ""."""
    if (assignment.batch.provider != Worker.Provider.LOCAL
            and assignment.worker.provider == assignment.batch.provider):
        return assignment.provider_assignment_id
    return ""


def qualification_type_id(provider: Provider, qualification: Qualification) -> str:
    ids = dict(qualification.provider_ids or {})
    if not ids.get(provider.name):
        ids[provider.name] = provider.ensure_qualification_type(
            qualification.name, qualification.description)
        Qualification.objects.filter(pk=qualification.pk).update(provider_ids=ids)
        qualification.provider_ids = ids
    return ids[provider.name]


def launch_context(batch: Batch, *, production_confirmed: bool = False,
                   qualification_type_id: str = "") -> LaunchContext:
    config = config_for(batch)
    return LaunchContext(
        title=batch.title, description=batch.description, keywords=config.keywords,
        reward=batch.reward, assignments_per_task=batch.assignments_per_task,
        lease_seconds=batch.lease_seconds, lifetime_seconds=config.lifetime_seconds,
        auto_approval_seconds=config.auto_approval_seconds,
        min_approval_rate=config.min_approval_rate,
        locales=tuple(c.strip().upper() for c in config.locales.split(",") if c.strip()),
        qualification_type_id=qualification_type_id,
        estimated_minutes=config.estimated_minutes, completion_code=config.completion_code,
        production_confirmed=production_confirmed,
        places=sum(Task.objects.filter(batch=batch).values_list("max_assignments", flat=True)),
        audience_filters=tuple(config.audience_filters or ()),
        filter_set_id=config.audience_filter_set_id,
        exclude_units=earlier_units(batch) if config.new_participants_only else (),
        seconds_spent=tuple(Assignment.objects.filter(batch=batch, status__in=DONE)
                            .exclude(seconds_spent=None).values_list("seconds_spent", flat=True)),
        desktop_only=get_hit_type(batch.hit_type).desktop_only,
        screen_out_reward=config.screen_out_reward, screening_minutes=config.screening_minutes,
    )


def earlier_units(batch: Batch) -> tuple[str, ...]:
    """The published units of earlier batches of the same HIT type on the same marketplace:
    their workers are kept out when a batch wants people who have not voted before."""
    return tuple(ProviderHit.objects.filter(
        provider=batch.provider, batch__hit_type=batch.hit_type,
        batch__created_at__lt=batch.created_at).exclude(batch=batch).exclude(external_id="")
        .order_by("created_at").values_list("external_id", flat=True))


def launch_guard(batch: Batch) -> None:
    """Refuse a launch whose full cost (every slot, fees, committed bonuses) passes the budget."""
    provider = get_provider(batch.provider)
    costs = batch_costs(batch)
    budget_check(budget=batch.budget, committed=costs.estimate.bonuses + costs.estimate.bonus_fees,
                 extra=costs.estimate.rewards + costs.estimate.reward_fees,
                 paid_marketplace=provider.paid, what=f"launching “{batch.title}”")
