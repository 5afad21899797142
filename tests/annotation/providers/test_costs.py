"""Cost arithmetic (pure) and the batch-level estimate, spent and guard."""
from decimal import Decimal as D

import pytest

from annotation.providers.costs import (
    BudgetExceeded,
    FeeSchedule,
    budget_check,
    estimate,
)
from annotation.providers.mturk.fees import MTurkFees, mturk_bonus_fee, mturk_reward_fee

MTURK = MTurkFees()


def test_mturk_fee_is_20_percent_and_40_from_ten_assignments_with_a_cent_minimum():
    assert mturk_reward_fee(D("1.00"), 9) == D("0.20")
    assert mturk_reward_fee(D("1.00"), 10) == D("0.40")
    assert mturk_reward_fee(D("0.02"), 3) == D("0.01")  # minimum commission
    assert mturk_reward_fee(D("0"), 3) == D("0")
    assert mturk_bonus_fee(D("0.50")) == D("0.10")


def test_estimate_adds_rewards_fees_and_bonuses():
    e = estimate(reward=D("0.10"), assignments=9, assignments_per_hit=3, fees=MTURK,
                 bonuses=[D("0.50")])
    assert (e.rewards, e.reward_fees, e.bonuses, e.bonus_fees) == (
        D("0.90"), D("0.18"), D("0.50"), D("0.10"))
    assert e.total == D("1.68")
    big = estimate(reward=D("0.10"), assignments=20, assignments_per_hit=10, fees=MTURK)
    assert big.total == D("2.80")
    prolific = estimate(reward=D("0.80"), assignments=4, assignments_per_hit=2,
                        fees=FeeSchedule(kind="rate", rate=D("0.3333")))
    assert prolific.total == D("4.28")  # 3.20 + 4 × 0.27


def test_budget_check_refuses_past_budget_and_without_one_on_paid_marketplaces():
    budget_check(budget=D("1.00"), committed=D("0.50"), extra=D("0.50"), paid_marketplace=True,
                 what="x")
    with pytest.raises(BudgetExceeded, match="1.01"):
        budget_check(budget=D("1.00"), committed=D("0.50"), extra=D("0.51"),
                     paid_marketplace=True, what="x")
    with pytest.raises(BudgetExceeded, match="Set a budget"):
        budget_check(budget=None, committed=D("0"), extra=D("1"), paid_marketplace=True, what="x")
    budget_check(budget=None, committed=D("0"), extra=D("1"), paid_marketplace=False, what="x")


@pytest.mark.django_db
def test_batch_costs_count_approved_work_and_paid_bonuses_only():
    from annotation.engine.services.claims import task_claim_next
    from annotation.engine.services.submissions import assignment_submit
    from annotation.models import Assignment, Bonus
    from annotation.providers.selectors import batch_costs
    from tests.factories import make_batch, make_workers

    batch = make_batch(2, n=3, provider="mturk", budget=D("10"))
    w1, w2 = make_workers(2, provider="mturk")
    a1 = task_claim_next(batch=batch, worker=w1)
    assignment_submit(assignment=a1, data={"choice": "A"})
    a2 = task_claim_next(batch=batch, worker=w2)
    assignment_submit(assignment=a2, data={"choice": "B"})
    Assignment.objects.filter(pk=a1.pk).update(status="approved")
    from django.utils import timezone

    Bonus.objects.create(batch=batch, assignment=a1, worker=w1, provider="mturk",
                         amount=D("0.50"), reason="r", key="k", token="t1", status="paid",
                         created_at=timezone.now())
    Bonus.objects.create(batch=batch, assignment=a2, worker=w2, provider="mturk",
                         amount=D("0.30"), reason="r", key="k", token="t2", status="failed",
                         created_at=timezone.now())
    c = batch_costs(batch)
    assert c.spent == D("0.72")  # 0.10 + 0.02 fee + 0.50 bonus + 0.10 fee
    assert c.committed == D("1.32")  # 6 × 0.12 + paid bonus with fee (failed not counted)
    assert c.left == D("8.68")
