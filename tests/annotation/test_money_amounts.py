"""Batch rewards and budgets (issue #26, item 4) through every door: the service, the REST API,
the upload page and the batch's edit page refuse the same amounts with the same message, and
store an accepted one exactly. Plus the parser itself and the settings that bound it."""
import os
import subprocess
import sys
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.forms.models import model_to_dict
from django.urls import reverse
from hypothesis import given
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.core.money import MoneyField
from annotation.engine.services.batches import batch_create_from_rows
from annotation.models import Batch
from tests.factories import make_batch, pairwise_rows
from tests.support.amounts import (
    ANY_AMOUNT,
    PROPERTY,
    as_number,
    check_refusal,
    valid_amounts,
)

pytestmark = pytest.mark.django_db


def create(**money):
    return batch_create_from_rows(hit_type="pairwise_ab", title="Money", rows=pairwise_rows(2),
                                  assignments_per_task=2, **money)


def batch_outcome(label: str, **money) -> Batch | None:
    """Create a batch with these amounts; None when refused (and then no batch was written)."""
    before = Batch.objects.count()
    try:
        batch = create(**money)
    except ValidationError as exc:
        check_refusal(exc, label)
        assert Batch.objects.count() == before
        return None
    return Batch.objects.get(pk=batch.pk)  # read back through the ORM


class TestParser:
    rule = MoneyField("test amount", limit_setting="MAX_BONUS_USD", places=2, digits=8)

    @pytest.mark.parametrize("value,why", [
        ("NaN", "finite number"), ("abc", "is not a number"), (Decimal("sNaN"), "finite"), (float("inf"), "finite"),
        ("1_000", "is not a number"), ("٣", "is not a number"), (True, "not bool"),
        ([], "not list"), ("-0.01", "must not be negative"), ("0.001", "2 decimal places"),
        ("1e9", "at most 100.00 (MAX_BONUS_USD)"), (None, "is required"), ("", "is required")])
    def test_refusals_say_why(self, value, why):
        with pytest.raises(ValidationError, match=why.replace("(", r"\(").replace(")", r"\)")):
            self.rule.parse(value)

    @pytest.mark.parametrize("value,stored", [
        ("  5 ", "5.00"), ("-0", "0.00"), (0.1, "0.10"), ("1e1", "10.00"), ("0E+9", "0.00"),
        (Decimal("5.000"), "5.00"), (7, "7.00"), ("1E-999999", None)])
    def test_accepted_forms(self, value, stored):
        if stored is None:
            with pytest.raises(ValidationError, match="decimal places"):
                self.rule.parse(value)
        else:
            assert str(self.rule.parse(value)) == stored

    def test_a_bound_above_the_column_is_cut_to_the_column(self, settings):
        settings.MAX_BONUS_USD = Decimal("1e30")
        assert self.rule.maximum() == (Decimal("999999.99"), "what the column stores, 8 digits")

    @pytest.mark.parametrize("raw", ["NaN", "inf", "-1", "lots"])
    def test_a_bad_bound_in_the_environment_stops_startup(self, raw):
        env = {**os.environ, "MAX_REWARD_USD": raw, "SECRET_KEY": "x" * 50}
        result = subprocess.run([sys.executable, "-c", "import django; from django.conf import "
                                 "settings; settings.MAX_REWARD_USD"], env=env,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode != 0 and "MAX_REWARD_USD=" in result.stderr


class TestBatchService:
    @PROPERTY
    @given(reward=ANY_AMOUNT)
    def test_any_reward_is_refused_cleanly_or_stored_exactly(self, reward):
        batch = batch_outcome("reward", reward=reward)
        if batch is not None:
            assert batch.reward == as_number(reward) and batch.reward <= Decimal("100")

    @PROPERTY
    @given(budget=ANY_AMOUNT)
    def test_any_budget_is_refused_cleanly_or_stored_exactly(self, budget):
        batch = batch_outcome("batch budget", budget=budget)
        if batch is not None:
            if budget is None or (isinstance(budget, str) and not budget.strip()):
                assert batch.budget is None
            else:
                assert batch.budget == as_number(budget) <= Decimal("100000")

    @PROPERTY
    @given(reward=valid_amounts(Decimal("100")), budget=valid_amounts(Decimal("100000")))
    def test_valid_amounts_are_accepted(self, reward, budget):
        batch = batch_outcome("reward", reward=reward, budget=budget)
        assert batch is not None
        assert (batch.reward, batch.budget) == (as_number(reward), as_number(budget))

    def test_the_column_bounds_a_budget_setting_set_too_high(self, settings):
        settings.MAX_BATCH_BUDGET_USD = Decimal("1e20")
        with pytest.raises(ValidationError, match="at most 99999999.99 .what the column"):
            create(budget="100000000")
        assert not Batch.objects.exists()


def _api_value(value):
    """``value`` as JSON can carry it (non-finite floats and Decimals as their text)."""
    if isinstance(value, Decimal | float) and not (isinstance(value, float) and value == value
                                                   and abs(value) != float("inf")):
        return str(value)
    return None if isinstance(value, bytes) else value


class TestBatchApi:
    @PROPERTY
    @given(reward=ANY_AMOUNT)
    def test_a_reward_gets_400_naming_it_or_201_storing_it_never_500(self, admin, reward):
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=admin)[0]}")
        before = Batch.objects.count()
        sent = _api_value(reward)
        response = api.post("/api/batches/", {"hit_type": "pairwise_ab", "title": "API",
                                              "reward": sent, "rows": pairwise_rows(1)},
                            format="json")
        assert response.status_code in (201, 400), response.content
        if response.status_code == 400:
            assert list(response.data) == ["reward"], response.data
            assert Batch.objects.count() == before
        else:
            assert Batch.objects.get(uuid=response.data["uuid"]).reward == as_number(sent)

    def test_above_the_setting_the_api_names_the_bound(self, admin):
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=admin)[0]}")
        response = api.post("/api/batches/", {"hit_type": "pairwise_ab", "title": "API",
                                              "reward": "100.01", "rows": pairwise_rows(1)},
                            format="json")
        assert response.status_code == 400
        assert "at most 100.00 (MAX_REWARD_USD)" in response.data["reward"][0]


class TestBatchAdmin:
    def _upload(self, client, **money):
        data = {"hit_type": "pairwise_ab", "title": "Uploaded", "provider": "local",
                "assignments_per_task": 3, "reward": "0.10", "lease_seconds": 1800,
                "min_seconds": 0, "budget": "", **money,
                "file": SimpleUploadedFile("rows.csv", b"instruction,response_a,response_b\n"
                                                      b"What?,A cat.,A dog.\n")}
        return client.post(reverse("admin:annotation_batch_upload"), data)

    def test_the_upload_page_shows_the_services_refusal_on_the_field(self, admin_client_):
        response = self._upload(admin_client_, reward="250.00")
        assert response.status_code == 200 and not Batch.objects.exists()
        assert response.context["form"].errors["reward"] == [
            "The reward must be at most 100.00 (MAX_REWARD_USD); got 250.00."]

    @pytest.mark.parametrize("field,value,label", [
        ("reward", "250", "reward"), ("reward", "NaN", None), ("budget", "100001", "batch budget"),
        ("budget", "99999999", "batch budget"), ("reward", "0.001", None)])
    def test_the_edit_page_refuses_what_the_service_refuses(self, admin_client_, field, value,
                                                            label):
        batch = make_batch(1, activate=False, budget=Decimal("10"))
        url = reverse("admin:annotation_batch_change", args=[batch.pk])
        form = admin_client_.get(url).context["adminform"].form
        data = {name: ("" if v is None else v) for name, v in model_to_dict(
            batch, fields=list(form.fields)).items()}
        response = admin_client_.post(url, {**data, field: value})
        assert response.status_code == 200, "the change was saved"
        errors = response.context["adminform"].form.errors[field]
        if label:
            assert label in errors[0]
        batch.refresh_from_db()
        assert (batch.reward, batch.budget) == (Decimal("0.10"), Decimal("10.00"))
        ok = admin_client_.post(url, {**data, field: "12.50"})
        assert ok.status_code == 302
        batch.refresh_from_db()
        assert getattr(batch, field) == Decimal("12.50")


def test_the_drawn_amounts_reach_both_outcomes():
    """The property tests above are only worth something if the amounts drawn include both
    accepted and refused ones (checked on the parser alone)."""
    rule = MoneyField("x", limit_setting="MAX_BONUS_USD", places=2, digits=8)
    outcomes = []

    @PROPERTY
    @given(ANY_AMOUNT)
    def parse(value):
        try:
            rule.parse(value)
            outcomes.append("accepted")
        except ValidationError:
            outcomes.append("refused")

    parse()
    assert 0.1 < outcomes.count("accepted") / len(outcomes) < 0.9, outcomes
