"""Bonus amounts (issue #26, item 4): ``worker_bonus`` and the bonus CSV refuse every amount
that is not a plain number of cents within ``MAX_BONUS_USD`` and the column, with a message
naming it, and write nothing; an accepted amount reads back exactly.

Before: 1000000, 99999999999, 1e9 and NaN raised a bare ``decimal.InvalidOperation`` (or a
database error), and an amount wider than the column could be stored and not read back.
"""
import itertools
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from hypothesis import given

from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.models import Assignment, Bonus
from annotation.providers import services
from annotation.providers.prolific.provider import ProlificProvider
from tests.factories import make_batch, make_workers
from tests.support.amounts import (
    ANY_AMOUNT,
    PROPERTY,
    as_number,
    check_refusal,
    valid_amounts,
)

pytestmark = pytest.mark.django_db(transaction=True)  # worker_bonus runs outside transactions

_keys = itertools.count(1)


def submitted_assignment() -> Assignment:
    """A local worker's submitted assignment: a bonus is recorded and paid at once."""
    batch = make_batch(1, n=1)
    (worker,) = make_workers(1)
    a = task_claim_next(batch=batch, worker=worker)
    assignment_submit(assignment=a, data={"choice": "A"})
    return Assignment.objects.select_related("worker", "batch").get(pk=a.pk)


def bonus_outcome(assignment: Assignment, amount) -> Bonus | None:
    """Pay ``amount``; None when refused. Either way the bonus table holds exactly the row."""
    key = f"k{next(_keys)}"
    before = Bonus.objects.count()
    try:
        services.worker_bonus(assignment, amount=amount, reason="Careful work", key=key)
    except ValidationError as exc:
        check_refusal(exc, "bonus amount")
        assert Bonus.objects.count() == before
        return None
    assert Bonus.objects.count() == before + 1
    return Bonus.objects.get(assignment=assignment, key=key)  # read back through the ORM


@pytest.fixture
def assignment():
    """One assignment for all of a property test's examples (their rows differ by key)."""
    return submitted_assignment()


class TestWorkerBonusAmounts:
    @pytest.mark.parametrize("amount", [1000000, 99999999999, 1e9, "NaN", Decimal("NaN"),
                                        float("nan"), "inf", Decimal("-Infinity"), "sNaN"])
    def test_the_amounts_from_the_issue_are_refused_and_nothing_is_written(self, amount):
        a = submitted_assignment()
        with pytest.raises(ValidationError) as refused:
            services.worker_bonus(a, amount=amount, reason="Careful work")
        check_refusal(refused.value, "bonus amount")
        assert not Bonus.objects.exists()

    def test_the_refusal_names_the_bound_and_its_setting(self):
        with pytest.raises(ValidationError, match=r"at most 100\.00 \(MAX_BONUS_USD\)"):
            services.worker_bonus(submitted_assignment(), amount="100.01", reason="Careful")

    def test_the_column_bounds_a_setting_set_too_high(self, settings):
        """The unreadable row of the issue: above the column's 8 digits even when the
        setting would allow it."""
        settings.MAX_BONUS_USD = Decimal("1e12")
        a = submitted_assignment()
        with pytest.raises(ValidationError, match="what the column stores"):
            services.worker_bonus(a, amount="1000000", reason="Careful work")
        assert not Bonus.objects.exists()
        assert bonus_outcome(a, "999999.99").amount == Decimal("999999.99")

    def test_more_places_than_cents_are_refused_not_rounded(self):
        a = submitted_assignment()
        with pytest.raises(ValidationError, match="more than 2 decimal places"):
            services.worker_bonus(a, amount="0.005", reason="Careful work")
        assert bonus_outcome(a, "0.50").amount == Decimal("0.50")

    @PROPERTY
    @given(amount=ANY_AMOUNT)
    def test_any_amount_is_refused_cleanly_or_stored_exactly(self, assignment, amount):
        bonus = bonus_outcome(assignment, amount)
        if bonus is not None:
            assert bonus.amount == as_number(amount)
            assert Decimal("0.01") <= bonus.amount <= Decimal("100")
            assert bonus.amount.as_tuple().exponent == -2

    @PROPERTY
    @given(amount=valid_amounts(Decimal("100"), positive=True))
    def test_every_valid_amount_is_accepted(self, assignment, amount):
        bonus = bonus_outcome(assignment, amount)
        assert bonus is not None and bonus.amount == as_number(amount)


class TestBonusCsvAmounts:
    @PROPERTY
    @given(amount=ANY_AMOUNT.filter(lambda v: isinstance(v, str)))
    def test_a_csv_amount_is_refused_naming_its_row_or_parsed_exactly(self, assignment, amount):
        a = assignment
        rows = [{"assignment": str(a.uuid), "amount": amount, "reason": "Careful work"}]
        try:
            (row,) = services.bonus_rows_parse(a.batch, rows)
        except ValidationError as exc:
            check_refusal(exc, "bonus amount")
            assert exc.messages[0].startswith("Row 1: ")
            return
        assert row.amount == as_number(amount) and row.amount.as_tuple().exponent == -2

    def test_the_pay_command_refuses_before_paying_anything(self, tmp_path):
        a = submitted_assignment()
        path = tmp_path / "bonuses.csv"
        path.write_text(f"assignment,amount,reason\n{a.uuid},0.50,Good\n{a.uuid},NaN,Bad\n")
        with pytest.raises(CommandError, match="Row 2: The bonus amount must be a finite number"):
            call_command("provider_pay", str(a.batch.uuid), str(path))
        assert not Bonus.objects.exists()


class TestFeeRate:
    @pytest.mark.parametrize("rate", [float("nan"), float("inf"), -0.1, 1.5, "abc"])
    def test_an_unusable_prolific_fee_rate_is_refused_naming_the_setting(self, settings, rate):
        settings.PROLIFIC_FEE_RATE = rate
        with pytest.raises(ValidationError) as refused:
            ProlificProvider().fees()
        check_refusal(refused.value, "PROLIFIC_FEE_RATE")

    def test_the_documented_rate_is_used_as_given(self, settings):
        settings.PROLIFIC_FEE_RATE = 0.3333
        assert ProlificProvider().fees().rate == Decimal("0.3333")
