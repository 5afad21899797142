"""Fixtures: a botocore-Stubbed MTurk client at the one seam, and a loopback Prolific server."""
import boto3
import pytest
from botocore.stub import Stubber
from django.core.cache import cache

from annotation.providers.mturk import client as mturk_client
from annotation.providers.prolific import provider as prolific_module
from tests.annotation.providers.fake_prolific import TOKEN, FakeProlific

SANDBOX = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"


@pytest.fixture
def https_base(settings):
    settings.PUBLIC_BASE_URL = "https://eval.example.org"
    return settings.PUBLIC_BASE_URL


@pytest.fixture
def mturk(monkeypatch, https_base):
    """A Stubber on the real MTurk client model; every request is validated against it.

    The Stubber answers before botocore's retry handler runs, so each stubbed error is one
    final answer; botocore's retries are tested against a loopback server (test_mturk_retries).
    """
    client = boto3.client("mturk", region_name="us-east-1", endpoint_url=SANDBOX,
                          aws_access_key_id="test", aws_secret_access_key="test")
    stubber = Stubber(client)
    monkeypatch.setattr(mturk_client, "make_client", lambda **kw: client)
    with stubber:
        yield stubber
    stubber.assert_no_pending_responses()


@pytest.fixture
def prolific(settings, https_base, monkeypatch):
    """The loopback server; retry back-offs are recorded in ``fake.sleeps``, not slept."""
    with FakeProlific() as fake:
        settings.PROLIFIC_BASE_URL = fake.base_url
        settings.PROLIFIC_API_TOKEN = TOKEN
        fake.sleeps = []
        cache.clear()  # Prolific's pay recommendation is cached between launches
        monkeypatch.setattr(prolific_module, "sleep", fake.sleeps.append)
        yield fake
