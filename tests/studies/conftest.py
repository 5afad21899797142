"""Fixtures shared by the study page and study API tests: a second study, its owner, and a
stand-in judge server."""
import pytest

from judging.judges.calls import close_clients
from tests.studies import builders
from tests.studies.test_pages import _member
from tests.support.fake_openai import FakeOpenAIServer


@pytest.fixture
def bench():
    return builders.study("bench-b")


@pytest.fixture
def owner(django_user_model, bench):
    return _member(django_user_model, "owner-b", bench, "owner")


@pytest.fixture
def judge_server():
    with FakeOpenAIServer() as srv:
        yield srv
    close_clients()
