"""Shared fixtures: named personas (admin, analyst, two annotators) and logged-in clients."""
import os

import pytest

from tests.support.migrations import back_to_latest  # noqa: F401 (a fixture for data-migration tests)
from tests.support.webhook_receiver import receiver_factory  # noqa: F401 (a loopback receiver)

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API + live_server


def pytest_collection_modifyitems(config, items):
    """``postgres`` tests skip, saying why, when the suite runs on SQLite (``make test-fast``)."""
    from django.db import connections

    if connections["default"].vendor == "postgresql":
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL (TEST_DATABASE_URL; `make test` starts one)")
    for item in items:
        if item.get_closest_marker("postgres"):
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _fresh_cache():
    """The cache outlives each test's database (the rating cache's keys carry uuids, so a stale
    hit is impossible, but a test should not even see another's entries)."""
    from django.core.cache import cache

    cache.clear()


def _user(django_user_model, username, *, groups=(), staff=False):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username=username, password="pw-" + username,
                                                 is_staff=staff, is_superuser=staff)
    for name in groups:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    return user


@pytest.fixture
def admin(django_user_model):
    return _user(django_user_model, "ada_admin", staff=True)


@pytest.fixture
def analyst(django_user_model):
    return _user(django_user_model, "ann_analyst", groups=["analyst"])


@pytest.fixture
def alice(django_user_model):
    return _user(django_user_model, "alice", groups=["annotator"])


@pytest.fixture
def bob(django_user_model):
    return _user(django_user_model, "bob", groups=["annotator"])


def _client_for(user):
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def alice_client(alice):
    return _client_for(alice)


@pytest.fixture
def bob_client(bob):
    return _client_for(bob)


@pytest.fixture
def admin_client_(admin):
    return _client_for(admin)


@pytest.fixture
def analyst_client(analyst):
    return _client_for(analyst)


@pytest.fixture
def held_report_builds(monkeypatch):
    """Report builds wait at their start until ``held_report_builds.set()``, so admitted
    reports stay queued (a page shows them queued or running); released at teardown."""
    import threading

    from agreement import tasks
    from annotation.core.background import wait_for_jobs

    gate = threading.Event()
    real = tasks.report_build
    monkeypatch.setattr(tasks, "report_build", lambda pk: (gate.wait(60), real(pk))[1])
    yield gate
    gate.set()
    assert wait_for_jobs(120)
