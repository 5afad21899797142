"""Prolific retries idempotent calls only, against the loopback server (``prolific.faults``)."""
import pytest

from annotation.core.clients.errors import MarketplaceError
from annotation.providers.prolific.provider import ProlificProvider


@pytest.fixture
def provider(prolific, settings):
    settings.PROLIFIC_MAX_ATTEMPTS = 4
    prolific.studies["s1"] = {"id": "s1", "internal_name": "batch-x", "status": "ACTIVE"}
    prolific.add_submission("s1", "SESS1", "PID1")
    return ProlificProvider()


def test_a_get_is_retried_on_5xx_429_and_a_dropped_connection(provider, prolific):
    prolific.faults = [503, (429, {"Retry-After": "7"}), "drop"]
    assert provider.find_study("batch-x")["id"] == "s1"
    assert len(prolific.calls("GET", "/api/v1/studies/")) == 4
    first, second, third = prolific.sleeps
    assert 0 <= first <= 0.5 and second == 7.0 and 0 <= third <= 2.0  # jitter, Retry-After


def test_retry_after_is_capped_and_an_http_date_is_understood(provider, prolific):
    prolific.faults = [(429, {"Retry-After": "3600"}),
                       (503, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})]
    list(provider.list_submissions("s1"))
    assert prolific.sleeps == [30.0, 0.0]  # at most 30 s; a date in the past means now


def test_a_get_gives_up_after_the_attempts_and_says_it_may_not_be_definite(provider, prolific):
    prolific.faults = [502] * 4
    with pytest.raises(MarketplaceError, match=r"attempt 4\): HTTP 502") as caught:
        list(provider.list_submissions("s1"))
    assert not caught.value.definite and len(prolific.sleeps) == 3
    prolific.faults = [429] * 4
    with pytest.raises(MarketplaceError) as caught:
        provider.find_study("batch-x")
    assert caught.value.definite  # rate-limited every time: nothing happened


def test_a_client_error_is_not_retried(provider, prolific):
    prolific.faults = [404]
    with pytest.raises(MarketplaceError, match="HTTP 404"):
        provider.find_study("batch-x")
    assert len(prolific.requests) == 1 and prolific.sleeps == []


def test_the_approve_transition_is_retried_because_prolific_says_it_is_idempotent(provider,
                                                                                  prolific):
    prolific.faults = [503]
    provider.approve("SESS1")
    assert len(prolific.calls("POST", "/api/v1/submissions/SESS1/transition/")) == 2
    assert prolific.submissions["s1"][0]["status"] == "APPROVED"


@pytest.mark.parametrize("fault", [503, 429, "drop"])
def test_posts_that_create_or_pay_are_sent_once(provider, prolific, fault):
    prolific.faults = [fault]
    with pytest.raises(MarketplaceError):
        provider._request("POST", "bulk-bonus-payments/bonus1/pay/")
    prolific.faults = [fault]
    with pytest.raises(MarketplaceError):
        provider._request("POST", "studies/", json={"internal_name": "batch-y"})
    assert len(prolific.requests) == 2 and prolific.sleeps == []
    assert prolific.pays == [] and len(prolific.studies) == 1
