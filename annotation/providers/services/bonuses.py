"""Bonuses: a row in 'sending' before the money moves, a token derived from our ids, the budget
guard first, so a retried bonus is never paid twice."""
import hashlib
from dataclasses import dataclass
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import IntegrityError
from django.db.models import Q
from django.utils import timezone

from annotation.core.clients.errors import MarketplaceError
from annotation.core.money import MoneyField
from annotation.models import Assignment, Batch
from annotation.providers.base import (
    Provider,
    get_provider,
)
from annotation.providers.costs import budget_check
from annotation.providers.models import (
    Bonus,
)
from annotation.providers.selectors import batch_costs
from annotation.providers.services.common import (
    DONE,
    TOKEN_MEMORY,
    action_log,
    remote_assignment_id,
    require_outside_transaction,
)

BONUS_AMOUNT = MoneyField.of_column(Bonus, "amount", "bonus amount",
                                   limit_setting="MAX_BONUS_USD", positive=True)


def bonus_token(assignment: Assignment, key: str) -> str:
    """Deterministic UniqueRequestToken of a bonus: same assignment and key, same token."""
    return "bonus-" + hashlib.sha256(f"{assignment.uuid}:{key}".encode()).hexdigest()[:48]


def worker_bonus(assignment: Assignment, *, amount, reason: str, key: str = "",
                 actor: str = "") -> Bonus:
    """Pay ``amount`` to the assignment's worker once per (assignment, key), budget-guarded.

    Retrying after any failure is safe: the bonus row (created first) carries the token, a paid
    row is never sent again, and only one caller can hold a row in ``sending``.
    """
    require_outside_transaction()
    amount = BONUS_AMOUNT.parse(amount)
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError("A bonus needs a reason.")
    key = (key or f"{amount}:{reason}")[:200]
    batch = assignment.batch
    provider = get_provider(batch.provider)
    bonus = Bonus.objects.filter(assignment=assignment, key=key).first()
    if bonus is None:
        if assignment.status not in DONE:
            raise ValidationError("Bonuses go to submitted work only.")
        fee = provider.fees().bonus_fee(amount)
        budget_check(budget=batch.budget, committed=batch_costs(batch).committed,
                     extra=amount + fee, paid_marketplace=provider.paid,
                     what=f"a ${amount} bonus")
        try:
            bonus = Bonus.objects.create(
                batch=batch, assignment=assignment, worker=assignment.worker,
                provider=batch.provider, amount=amount, reason=reason[:500], key=key,
                token=bonus_token(assignment, key), created_at=timezone.now())
        except IntegrityError:
            bonus = Bonus.objects.get(assignment=assignment, key=key)
    if bonus.amount != amount:
        raise ValidationError(f"Bonus key {key!r} was already used for ${bonus.amount}.")
    return _send_bonus(bonus, provider, assignment, actor)


def _send_bonus(bonus: Bonus, provider: Provider, assignment: Assignment, actor: str) -> Bonus:
    claimable = [Bonus.Status.PENDING, Bonus.Status.FAILED]
    fresh = timezone.now() - bonus.created_at < TOKEN_MEMORY
    if provider.bonus_idempotent and fresh:
        claimable += [Bonus.Status.SENDING, Bonus.Status.UNCERTAIN]  # same token: no double pay
    if not Bonus.objects.filter(pk=bonus.pk, status__in=claimable).update(
            status=Bonus.Status.SENDING):
        bonus.refresh_from_db()
        if bonus.status == Bonus.Status.UNCERTAIN:
            raise MarketplaceError(f"Bonus {bonus.uuid} may have been paid: check on "
                                f"{provider.name} and mark it paid or failed by hand.")
        return bonus  # paid already, or another caller is sending it right now
    remote = remote_assignment_id(assignment)
    reference = ""
    if remote:
        try:
            reference = provider.send_bonus(
                worker_id=assignment.worker.external_id, assignment_id=remote,
                amount=bonus.amount, reason=bonus.reason, token=bonus.token,
                hit_id=assignment.provider_hit_id)
        except MarketplaceError as exc:
            status = Bonus.Status.FAILED if exc.definite else Bonus.Status.UNCERTAIN
            Bonus.objects.filter(pk=bonus.pk).update(status=status, error=str(exc)[:500])
            action_log(bonus.batch, provider.name, "bonus", bonus.token, False, exc, actor)
            raise
    Bonus.objects.filter(pk=bonus.pk).update(status=Bonus.Status.PAID, paid_at=timezone.now(),
                                             external_id=reference[:128], error="")
    action_log(bonus.batch, provider.name, "bonus", bonus.token, True,
         f"${bonus.amount} to {assignment.worker.external_id}", actor)
    bonus.refresh_from_db()
    return bonus


@dataclass(frozen=True)
class BonusRow:
    assignment: Assignment
    amount: Decimal
    reason: str
    key: str


def bonus_rows_parse(batch: Batch, rows) -> list[BonusRow]:
    """Validate bonus rows (``assignment``, ``amount``, ``reason``, optional ``key``) up front.

    ``assignment`` is our assignment UUID or the marketplace's assignment id. A bad row raises
    an error naming it, before anything is paid.
    """
    parsed = []
    for number, row in enumerate(rows, start=1):
        ref = (row.get("assignment") or "").strip()
        match = Q(provider_assignment_id=ref)
        try:
            match |= Q(uuid=ref) if len(ref) in (32, 36) else Q(pk__in=[])
            assignment = Assignment.objects.select_related("worker", "batch").filter(
                match, batch=batch).first()
        except ValidationError:
            assignment = None
        if assignment is None:
            raise ValidationError(f"Row {number}: no assignment {ref!r} in this batch")
        try:
            amount = BONUS_AMOUNT.parse(row.get("amount"))
        except ValidationError as exc:
            raise ValidationError(f"Row {number}: {exc.messages[0]}") from None
        reason = (row.get("reason") or "").strip()
        if not reason:
            raise ValidationError(f"Row {number}: needs a reason")
        parsed.append(BonusRow(assignment, amount, reason, (row.get("key") or "").strip()))
    return parsed
