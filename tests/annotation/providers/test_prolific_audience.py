"""A Prolific study's audience and pay, against the loopback Prolific server: the filters the
study is created with, the eligible-participant count and the pay floor checked before launch
(refusals shown on the admin's launch page, nothing published), earlier batches' participants
kept out, the qualification's allowlist group, device compatibility from the HIT type."""
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from annotation.core.clients.errors import MarketplaceError
from annotation.engine.hit_types import get_hit_type
from annotation.engine.services.batches import batch_create_from_rows
from annotation.engine.services.qualifications import qualification_grant
from annotation.engine.services.workers import worker_for_external
from annotation.models import Batch, ProviderHit, Qualification
from annotation.providers import services
from annotation.providers.prolific.pay import pay_check
from annotation.providers.prolific.provider import ProlificProvider

from .test_prolific import prolific_batch

pytestmark = pytest.mark.django_db(transaction=True)


def study_filters(study) -> dict:
    return {f["filter_id"]: f for f in study["filters"]}


def test_the_study_carries_the_batch_filters_approval_rate_and_the_blocklist(prolific):
    batch = prolific_batch()  # 2 tasks x 2 votes = 4 places, 0.80 each, 5 min: 9.60 / hour
    config = services.config_for(batch)
    config.audience_filters = [{"filter_id": "fluent-languages", "selected_values": ["19"]}]
    config.save()
    services.batch_launch(batch)
    (study,) = prolific.studies.values()
    filters = study_filters(study)
    assert filters["fluent-languages"]["selected_values"] == ["19"]
    assert filters["approval_rate"]["selected_range"] == {"lower": 95, "upper": 100}
    blocklist = prolific.group_named("vlmeval-blocklist")["id"]
    assert filters["participant_group_blocklist"]["selected_values"] == [blocklist]
    assert prolific.counted[-1] == study["filters"]  # the count was asked of the same audience
    assert study["device_compatibility"] == ["desktop"]  # pairwise: images side by side


def test_device_compatibility_comes_from_the_hit_type(prolific):
    rows = list(get_hit_type("feedback_ab").example_rows)
    batch = batch_create_from_rows(hit_type="feedback_ab", title="Feedback", rows=rows,
                                   assignments_per_task=1, reward=Decimal("0.80"),
                                   provider="prolific", budget=Decimal("50"))
    assert not get_hit_type("feedback_ab").desktop_only
    services.batch_launch(batch)
    (study,) = prolific.studies.values()
    assert study["device_compatibility"] == ["desktop", "tablet", "mobile"]


def launch_page(client, batch, post=False):
    url = reverse("admin:annotation_marketplacebatch_launch", args=[batch.pk])
    answer = client.post(url, {"confirm": "on"}, follow=True) if post else client.get(url)
    assert answer.status_code == 200
    return answer.content.decode()


def test_too_small_an_audience_is_refused_with_the_reason_on_the_page(prolific,
                                                                      admin_client_):
    batch = prolific_batch()
    prolific.eligible = 3  # 4 places needed
    assert "3 for 4 places" in launch_page(admin_client_, batch)  # shown before launching
    html = launch_page(admin_client_, batch, post=True)
    assert "Not launched: Audience too small: 3 participants" in html
    assert not prolific.studies and not ProviderHit.objects.exists()
    assert Batch.objects.get(pk=batch.pk).status == Batch.Status.DRAFT
    prolific.eligible = 4
    assert services.batch_launch(batch).created == 1  # exactly enough is enough


def test_pay_below_prolifics_minimum_is_refused_with_the_reason_on_the_page(prolific,
                                                                            admin_client_):
    batch = prolific_batch()
    Batch.objects.filter(pk=batch.pk).update(reward=Decimal("0.40"))  # 4.80 / hour < 6.00
    html = launch_page(admin_client_, batch, post=True)
    assert "Not launched: Pay below Prolific&#x27;s minimum: 4.80 per hour" in html
    assert not prolific.studies and not ProviderHit.objects.exists()


def test_pay_below_the_recommendation_is_shown_as_a_warning_and_launches(prolific,
                                                                         admin_client_):
    batch = prolific_batch()
    Batch.objects.filter(pk=batch.pk).update(reward=Decimal("0.60"))  # 7.20 / hour
    html = launch_page(admin_client_, batch)
    assert "7.20 per hour (5.0 min, estimated time)" in html
    assert "Pay below Prolific&#x27;s recommendation" in html
    assert services.batch_launch(batch).created == 1
    assert len(prolific.calls("GET", "/api/v1/reward-recommendations/")) == 1  # cached


def test_the_floor_comes_from_settings_when_prolific_cannot_say(prolific, settings):
    prolific.reward_recommendation = None  # an answer without the rates
    settings.PROLIFIC_MIN_HOURLY = Decimal("10.00")
    batch = prolific_batch()  # 9.60 / hour
    with pytest.raises(MarketplaceError, match="under the minimum 10.00 per hour"):
        services.batch_launch(batch)
    assert not prolific.studies


def test_the_median_measured_time_replaces_the_estimate_once_known():
    estimated = pay_check(reward=Decimal("1.00"), estimated_minutes=5, seconds_spent=[60] * 4,
                          minimum=Decimal("6"), recommended=Decimal("9"))
    assert (estimated.hourly, estimated.measured) == (Decimal("12.00"), False)
    measured = pay_check(reward=Decimal("1.00"), estimated_minutes=5,
                         seconds_spent=[600, 900, 1200, 1500, 30000],
                         minimum=Decimal("6"), recommended=Decimal("9"))
    assert (measured.hourly, measured.measured) == (Decimal("3.00"), True)  # 20 min median
    assert measured.below_minimum and "median measured time" in measured.refusal()


def test_new_participants_only_keeps_out_earlier_batches_participants(prolific):
    first = prolific_batch()
    services.batch_launch(first)
    first_study = ProviderHit.objects.get(batch=first).external_id
    second = prolific_batch()
    config = services.config_for(second)
    config.new_participants_only = True
    config.save()
    services.batch_launch(second)
    study = prolific.studies[ProviderHit.objects.get(batch=second).external_id]
    assert study_filters(study)["previous_studies_blocklist"]["selected_values"] == [
        first_study]
    assert "previous_studies_blocklist" not in study_filters(prolific.studies[first_study])


def test_a_qualification_is_an_allowlist_group_filled_as_workers_pass(prolific):
    qual = Qualification.objects.create(name="Raters")
    passed = worker_for_external("prolific", "PIDQ")
    qualification_grant(qualification=qual, worker=passed, now=timezone.now())
    assert services.qualification_push() == 1
    group = prolific.group_named("vlmeval-qualified: Raters")
    assert group["members"] == {"PIDQ"}
    batch = prolific_batch()
    Batch.objects.filter(pk=batch.pk).update(required_qualification=qual)
    services.batch_launch(Batch.objects.get(pk=batch.pk))
    (study,) = prolific.studies.values()
    assert study_filters(study)["participant_group_allowlist"]["selected_values"] == [
        group["id"]]


def test_filters_are_found_by_keyword(prolific):
    found = ProlificProvider().search_filters("LANGUAGES")
    assert [f["filter_id"] for f in found] == ["fluent-languages"]


@pytest.mark.parametrize(("value", "message"), [
    ({"filter_id": "x"}, "JSON list"),
    ([{"selected_values": ["1"]}], "filter 1: an object with a filter_id"),
    ([{"filter_id": "age", "selected_range": {"lower": "18"}}], "numeric lower"),
    ([{"filter_id": "age"}], "give selected_values or selected_range"),
    ([{"filter_id": "lang", "selected_values": [19]}], "list of choice ids"),
    ([{"filter_id": "participant_group_blocklist", "selected_values": ["g"]}],
     "set by the deployment"),
    ([{"filter_id": "lang", "selected_values": ["1"], "selected": 1}], "unknown key"),
])
def test_bad_audience_filters_are_refused_on_save(value, message):
    config = services.config_for(prolific_batch())
    config.audience_filters = value
    with pytest.raises(ValidationError, match=message):
        config.full_clean()
