"""Judge-run budgets and sampling costs (issue #26, item 4): a budget from the command line, the
admin or a submission is refused with a message naming it unless it is a plain amount within
``MAX_JUDGE_BUDGET_USD`` and the column (12 digits, 6 places); an accepted one reads back
exactly. Before, "NaN" or "1e30" reached the database (PostgreSQL: a 500; NaN is a valid
``numeric`` there, and the budget check then compared against NaN)."""
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from hypothesis import given

from judging.judges.models import JudgeRun
from judging.judges.services import judge_run_resume, judge_run_start
from judging.services.comparisons import SamplingError, budget_limit
from tests.judging.judges.conftest import make_comparisons, make_judge
from tests.support.amounts import (
    ANY_AMOUNT,
    PROPERTY,
    as_number,
    check_refusal,
    valid_amounts,
)

pytestmark = pytest.mark.django_db


def _blank(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


@pytest.fixture
def run_items(server):
    return make_judge(server), [c.uuid for c in make_comparisons(2)]


class TestJudgeRunBudget:
    def start(self, run_items, budget) -> JudgeRun | None:
        judge, items = run_items
        before = JudgeRun.objects.count()
        try:
            run = judge_run_start(judge=judge, item_uuids=items, budget=budget, dispatch=False)
        except ValidationError as exc:
            check_refusal(exc, "judge-run budget")
            assert JudgeRun.objects.count() == before
            return None
        return JudgeRun.objects.get(pk=run.pk)

    @PROPERTY
    @given(budget=ANY_AMOUNT)
    def test_any_budget_is_refused_cleanly_or_stored_exactly(self, run_items, budget):
        run = self.start(run_items, budget)
        if run is not None:
            assert run.budget == (None if _blank(budget) else as_number(budget))

    @PROPERTY
    @given(budget=valid_amounts(Decimal("10000"), places=6))
    def test_every_valid_budget_is_accepted(self, run_items, budget):
        run = self.start(run_items, budget)
        assert run is not None and run.budget == as_number(budget)

    @PROPERTY
    @given(budget=ANY_AMOUNT)
    def test_a_resume_budget_is_refused_cleanly_or_stored_exactly(self, run_items, budget):
        judge, items = run_items
        run = judge_run_start(judge=judge, item_uuids=items, budget=Decimal("1"),
                              dispatch=False)
        try:
            judge_run_resume(run, budget=budget, dispatch=False)
        except ValidationError as exc:
            check_refusal(exc, "judge-run budget")
            run.refresh_from_db()
            assert run.budget == Decimal("1") and run.status == JudgeRun.Status.PENDING
            return
        run.refresh_from_db()
        assert run.budget == (Decimal("1") if _blank(budget) else as_number(budget))

    def test_the_command_reports_the_refusal(self, run_items):
        judge, _ = run_items
        with pytest.raises(CommandError, match=r"judge-run budget must be at most 10000\.00 "
                                               r"\(MAX_JUDGE_BUDGET_USD\)"):
            call_command("judge_run", "--judge", judge.name, "--budget", "1e30")
        assert not JudgeRun.objects.exists()

    @pytest.mark.parametrize("value", ["NaN", "-1", "10000.01", "0.0000001", "abc"])
    def test_the_admin_edit_page_refuses_what_the_service_refuses(self, run_items,
                                                                  admin_client_, value):
        judge, items = run_items
        run = judge_run_start(judge=judge, item_uuids=items, budget=Decimal("2"),
                              dispatch=False)
        url = reverse("admin:judging_judgerun_change", args=[run.pk])
        response = admin_client_.post(url, {"budget": value})
        assert response.status_code == 200
        assert response.context["adminform"].form.errors["budget"]
        run.refresh_from_db()
        assert run.budget == Decimal("2")
        assert admin_client_.post(url, {"budget": "3.5"}).status_code == 302
        run.refresh_from_db()
        assert run.budget == Decimal("3.5")


class TestSamplingCost:
    @PROPERTY
    @given(max_cost=ANY_AMOUNT, reward=ANY_AMOUNT)
    def test_a_cost_or_reward_is_refused_as_a_sampling_error_or_used_exactly(self, max_cost,
                                                                             reward):
        try:
            limit = budget_limit(wanted=1000, max_cost=max_cost, reward=reward,
                                 judgments_per_comparison=3)
        except SamplingError as exc:
            assert "budget" in str(exc) or "reward" in str(exc), exc
            return
        per = as_number(reward) * 3
        if _blank(max_cost) or per == 0:
            assert limit == 1000
        else:
            assert limit == min(1000, int(as_number(max_cost) // per))
