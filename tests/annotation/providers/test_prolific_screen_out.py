"""Screened out with a fixed reward, against the loopback Prolific server: a batch declaring a
screen-out reward creates its study with in-study screening (one SCREENED_OUT code paying that
reward); the reward is refused at 0, above the full reward, and below Prolific's hourly floor on
the screening time (nothing published); a SCREENED OUT submission releases its slot and counts
in the batch's spend at the screen-out reward, fees included."""
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from annotation.core.clients.errors import MarketplaceError
from annotation.engine.selectors import batch_costs, batches_overview
from annotation.models import ProviderHit, Task
from annotation.providers import services
from annotation.providers.prolific.pay import screen_out_problem
from annotation.providers.prolific.provider import screen_out_code

from .test_prolific import arrive, prolific_batch

pytestmark = pytest.mark.django_db(transaction=True)


def with_screen_out(batch, reward, minutes=1):
    config = services.config_for(batch)
    config.screen_out_reward = Decimal(reward)
    config.screening_minutes = minutes
    config.full_clean()
    config.save()
    return config


def test_the_study_is_created_with_in_study_screening_at_the_fixed_reward(prolific):
    batch = prolific_batch()  # 4 places at 0.80
    config = with_screen_out(batch, "0.15")  # 9.00 / hour for 1 minute
    services.batch_launch(batch)
    (study,) = prolific.studies.values()
    assert study["is_custom_screening"] is True
    codes = {c["code_type"]: c for c in study["completion_codes"]}
    assert codes["COMPLETED"]["code"] == config.completion_code
    assert codes["SCREENED_OUT"]["code"] == screen_out_code(config.completion_code)
    assert codes["SCREENED_OUT"]["code"] != config.completion_code
    assert codes["SCREENED_OUT"]["actions"] == [{
        "action": "FIXED_SCREEN_OUT_PAYMENT", "fixed_screen_out_reward": 15, "slots": 4}]


def test_without_a_screen_out_reward_nobody_is_screened_out(prolific):
    services.batch_launch(prolific_batch())
    (study,) = prolific.studies.values()
    assert "is_custom_screening" not in study
    assert [c["code_type"] for c in study["completion_codes"]] == ["COMPLETED"]


@pytest.mark.parametrize(("reward", "message"), [
    ("0", "more than 0"), ("-0.10", "more than 0"), ("0.81", "cannot be more than the reward")])
def test_a_bad_screen_out_reward_is_refused_on_save(reward, message):
    batch = prolific_batch()
    with pytest.raises(ValidationError, match=message):
        with_screen_out(batch, reward)
    assert services.config_for(batch).screen_out_reward is None


def test_screen_out_pay_below_the_floor_on_the_screening_time_refuses_the_launch(prolific):
    batch = prolific_batch()
    with_screen_out(batch, "0.20", minutes=3)  # 4.00 / hour, Prolific's minimum is 6.00
    with pytest.raises(MarketplaceError, match="Screen-out pay below Prolific's minimum: 4.00"):
        services.batch_launch(batch)
    assert not prolific.studies and not ProviderHit.objects.filter(external_id__gt="").exists()


def test_the_floor_rule_itself():
    assert screen_out_problem(Decimal("0.10"), Decimal("1"), minimum=Decimal("6")) == ""
    assert "0.60 per hour" not in screen_out_problem(Decimal("0.10"), Decimal("1"))
    assert "5.40 per hour" in screen_out_problem(Decimal("0.09"), Decimal("1"),
                                                 minimum=Decimal("6"))


def test_a_screened_out_place_reopens_and_is_paid_at_the_screen_out_reward(prolific, client,
                                                                            settings):
    settings.PROLIFIC_FEE_RATE = "0.25"
    batch = prolific_batch()
    with_screen_out(batch, "0.20")
    services.batch_launch(batch)
    study = ProviderHit.objects.get(batch=batch).external_id
    before = batch_costs(batch).spent
    shown_before = batches_overview([batch])[0].spent
    assert arrive(client, batch, "PID1", "SESS1", study).status_code == 302
    taken = sum(Task.objects.filter(batch=batch).values_list("slots_taken", flat=True))
    assert taken == 1
    prolific.add_submission(study, "SESS1", "PID1", status="SCREENED OUT")
    services.batch_sync(batch)
    assert sum(Task.objects.filter(batch=batch).values_list("slots_taken", flat=True)) == 0
    assert batch_costs(batch).spent - before == Decimal("0.25")  # 0.20 + 25 % fee
    services.batch_sync(batch)  # counted once however often it is synced
    assert batch_costs(batch).spent - before == Decimal("0.25")
    # The dashboard's row says the same: the screen-out is money spent there too.
    assert batches_overview([batch])[0].spent - shown_before == Decimal("0.25")
