"""Cost arithmetic (pure: no Django): rewards, marketplace fees, bonuses, the budget guard.

A ``FeeSchedule`` bills nothing or a flat rate (Prolific's service fee, a study's own rate);
a marketplace with other rules subclasses it in its subpackage (``mturk.fees``).
Amounts are Decimals rounded to the cent, half up, per assignment — as the marketplaces bill.
"""
from dataclasses import dataclass
from decimal import Decimal

from annotation.core.money import CENT, ZERO, cents  # noqa: F401  (the cost figures' rounding)


class BudgetExceeded(Exception):
    """A launch or bonus would take the batch past its budget; nothing was sent."""


def rate_fee(amount: Decimal, rate: Decimal) -> Decimal:
    return cents(amount * rate) if amount > 0 else ZERO


@dataclass(frozen=True)
class FeeSchedule:
    """How one provider bills: ``kind`` is "none" or "rate" (with ``rate``); a marketplace's
    subclass names its own kind and overrides the two fees."""

    kind: str = "none"
    rate: Decimal = ZERO

    def reward_fee(self, reward: Decimal, assignments_per_hit: int) -> Decimal:
        return rate_fee(reward, self.rate) if self.kind == "rate" else ZERO

    def bonus_fee(self, amount: Decimal) -> Decimal:
        return rate_fee(amount, self.rate) if self.kind == "rate" else ZERO


@dataclass(frozen=True)
class CostEstimate:
    rewards: Decimal
    reward_fees: Decimal
    bonuses: Decimal
    bonus_fees: Decimal

    @property
    def total(self) -> Decimal:
        return self.rewards + self.reward_fees + self.bonuses + self.bonus_fees


def estimate(*, reward: Decimal, assignments: int, assignments_per_hit: int, fees: FeeSchedule,
             bonuses: list[Decimal] = ()) -> CostEstimate:
    """Full cost of ``assignments`` paid assignments plus the given bonuses, fees included."""
    reward = Decimal(reward)
    bonus_list = [Decimal(b) for b in bonuses]
    return CostEstimate(
        rewards=cents(reward * assignments),
        reward_fees=fees.reward_fee(reward, assignments_per_hit) * assignments,
        bonuses=cents(sum(bonus_list, ZERO)),
        bonus_fees=sum((fees.bonus_fee(b) for b in bonus_list), ZERO),
    )


def budget_check(*, budget: Decimal | None, committed: Decimal, extra: Decimal,
                 paid_marketplace: bool, what: str) -> None:
    """Refuse (``BudgetExceeded``) when ``committed + extra`` would pass ``budget``.

    A paid marketplace needs a budget at all: money never moves without a ceiling.
    """
    if budget is None:
        if paid_marketplace:
            raise BudgetExceeded(f"Set a budget on the batch before {what}.")
        return
    if committed + extra > budget:
        raise BudgetExceeded(
            f"Refused {what}: ${committed + extra:.2f} (already committed ${committed:.2f} "
            f"+ ${extra:.2f}) would pass the batch budget of ${budget:.2f}."
        )
