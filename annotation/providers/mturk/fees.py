"""Mechanical Turk's fee schedule (pure: no Django): 20 % of each reward and bonus (at least
$0.01), plus another 20 % of the reward on HITs with 10 or more assignments."""
from dataclasses import dataclass
from decimal import Decimal

from annotation.core.money import CENT, ZERO, cents
from annotation.providers.costs import FeeSchedule

MTURK_FEE = Decimal("0.20")
MTURK_LARGE_HIT_FEE = Decimal("0.20")
MTURK_LARGE_HIT = 10


def mturk_reward_fee(reward: Decimal, assignments_per_hit: int) -> Decimal:
    rate = MTURK_FEE + (MTURK_LARGE_HIT_FEE if assignments_per_hit >= MTURK_LARGE_HIT else ZERO)
    return max(cents(reward * rate), CENT) if reward > 0 else ZERO


def mturk_bonus_fee(amount: Decimal) -> Decimal:
    return max(cents(amount * MTURK_FEE), CENT) if amount > 0 else ZERO


@dataclass(frozen=True)
class MTurkFees(FeeSchedule):
    kind: str = "mturk"

    def reward_fee(self, reward: Decimal, assignments_per_hit: int) -> Decimal:
        return mturk_reward_fee(reward, assignments_per_hit)

    def bonus_fee(self, amount: Decimal) -> Decimal:
        return mturk_bonus_fee(amount)
