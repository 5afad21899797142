"""Fair pay on Prolific: the hourly rate a reward implies, judged against Prolific's floor and
its recommendation (pure: no models or settings; amounts in the currency's major unit, e.g. 8.00 = $8).

Prolific refuses to publish below its minimum hourly rate and recommends a higher one; both
come from its reward-recommendations endpoint (or settings when it cannot be reached). A
participant does one task per session, so the rate is the per-task reward over the time one
task takes: the measured median once enough work is in, the batch's estimate before that.
"""
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from statistics import median

from annotation.providers.prolific.audience import screen_out_bounds_problem

MIN_MEASURED = 5  # submissions before the measured median replaces the estimate
CENT = Decimal("0.01")


@dataclass(frozen=True)
class PayCheck:
    hourly: Decimal
    minutes: Decimal
    measured: bool  # True: from the median measured time
    minimum: Decimal
    recommended: Decimal

    @property
    def below_minimum(self) -> bool:
        return self.hourly < self.minimum

    @property
    def below_recommended(self) -> bool:
        return self.hourly < self.recommended

    def refusal(self) -> str:
        return (f"Pay below Prolific's minimum: {self.describe()}, under the minimum "
                f"{self.minimum:.2f} per hour. Raise the reward or shorten the task.")

    def warning(self) -> str:
        return (f"Pay below Prolific's recommendation: {self.describe()}, under the "
                f"recommended {self.recommended:.2f} per hour.")

    def describe(self) -> str:
        source = "median measured time" if self.measured else "estimated time"
        return f"{self.hourly:.2f} per hour ({self.minutes:.1f} min, {source})"


def task_minutes(estimated_minutes: int, seconds_spent: list[float]) -> tuple[Decimal, bool]:
    """Minutes one task takes: the median of measured times once ``MIN_MEASURED`` are known."""
    measured = [s for s in seconds_spent if s and s > 0]
    if len(measured) >= MIN_MEASURED:
        return Decimal(str(median(measured))) / 60, True
    return Decimal(max(1, estimated_minutes)), False


def hourly_rate(reward: Decimal, minutes: Decimal) -> Decimal:
    if minutes <= 0:
        raise ValueError("A task takes a positive time.")
    return (Decimal(reward) * 60 / minutes).quantize(CENT, rounding=ROUND_HALF_UP)


def pay_check(*, reward: Decimal, estimated_minutes: int, seconds_spent: list[float],
              minimum: Decimal, recommended: Decimal) -> PayCheck:
    minutes, measured = task_minutes(estimated_minutes, seconds_spent)
    return PayCheck(hourly=hourly_rate(reward, minutes), minutes=minutes, measured=measured,
                    minimum=Decimal(minimum), recommended=Decimal(recommended))


def screen_out_problem(screen_out_reward: Decimal, reward: Decimal, *, screening_minutes: int = 1,
                       minimum: Decimal | None = None) -> str:
    """Why a screen-out reward cannot be used ("" when it can): the bounds of
    ``screen_out_bounds_problem``, and (when Prolific's floor is known) the floor per hour on
    the screening time."""
    problem = screen_out_bounds_problem(screen_out_reward, reward)
    if problem or minimum is None:
        return problem
    hourly = hourly_rate(Decimal(screen_out_reward), Decimal(max(1, screening_minutes)))
    if hourly < Decimal(minimum):
        return (f"Screen-out pay below Prolific's minimum: {hourly:.2f} per hour "
                f"({screening_minutes} min of screening), under the minimum "
                f"{Decimal(minimum):.2f} per hour. Raise the screen-out reward.")
    return ""


_CURRENCY_SIGNS = {"GBP": "£", "USD": "$", "EUR": "€"}


def money_label(amount: Decimal, currency: str) -> str:
    """An amount as a participant reads it: "£0.50", or "0.50 CAD" for a currency without a sign
    here."""
    sign = _CURRENCY_SIGNS.get(currency.upper())
    return f"{sign}{Decimal(amount):.2f}" if sign else f"{Decimal(amount):.2f} {currency}"
