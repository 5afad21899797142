"""Failed sign-ins are throttled, so passwords and API tokens cannot be guessed by brute force:
repeated wrong passwords lock the account and the address, wrong API tokens lock the address,
the answer is a clear 429, the lock lifts after the cool-off or when an admin unlocks it."""
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.test import Client, RequestFactory
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotation.core.lockout import client_ip

pytestmark = pytest.mark.django_db
CONFIGURED_LIMIT, CONFIGURED_COOLOFF = settings.AXES_FAILURE_LIMIT, settings.AXES_COOLOFF_TIME
LIMIT = 4  # the limit these tests lock at, whatever LOGIN_FAILURE_LIMIT the environment sets
HERE, THERE = "203.0.113.7", "198.51.100.9"


@pytest.fixture(autouse=True)
def _tested_limit(settings):
    """The tests set the limit and cool-off they test: a large LOGIN_FAILURE_LIMIT in the
    environment would otherwise make the loops below run for minutes instead of failing."""
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.AXES_COOLOFF_TIME = timedelta(minutes=15)


def _login(client, username, password, ip=HERE, url=None):
    return client.post(url or reverse("login"), {"username": username, "password": password},
                       REMOTE_ADDR=ip)


def _signed_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_defaults_are_safe():
    """The configured values (environment included) lock an account before guessing pays."""
    assert settings.AXES_ENABLED and 1 <= CONFIGURED_LIMIT <= 20
    assert CONFIGURED_COOLOFF == timedelta(minutes=15)


def test_thirty_wrong_passwords_lock_the_account_even_for_the_right_one(alice):
    client = Client()
    codes = [_login(client, "alice", f"wrong-{i}").status_code for i in range(30)]
    assert codes[:LIMIT - 1] == [200] * (LIMIT - 1)  # the form again, with its error
    assert set(codes[LIMIT - 1:]) == {429}
    locked = _login(client, "alice", "pw-alice")
    assert locked.status_code == 429 and not _signed_in(client)
    body = locked.content.decode()
    assert "Too many failed sign-in attempts" in body and "ask an admin to unlock" in body
    assert locked["Retry-After"] == str(15 * 60)
    # Per account: the right password from another address is refused too.
    other = Client()
    assert _login(other, "alice", "pw-alice", ip=THERE).status_code == 429
    assert not _signed_in(other)


def test_one_address_trying_many_accounts_is_locked(alice, bob):
    client = Client()
    for i in range(LIMIT):
        _login(client, f"nobody{i}", "guess")
    assert _login(client, "alice", "pw-alice").status_code == 429 and not _signed_in(client)
    elsewhere = Client()  # the accounts themselves are not locked
    assert _login(elsewhere, "bob", "pw-bob", ip=THERE).status_code == 302
    assert _signed_in(elsewhere)


def test_the_admin_login_is_guarded_too(admin):
    client = Client()
    url = reverse("admin:login")
    for _ in range(LIMIT):
        _login(client, "ada_admin", "wrong", url=url)
    assert _login(client, "ada_admin", "pw-ada_admin", url=url).status_code == 429
    assert not _signed_in(client)


def test_an_admin_unlocks_and_the_cooloff_expires(alice, admin_client_):
    for _ in range(LIMIT):
        _login(Client(), "alice", "wrong")
    assert _login(Client(), "alice", "pw-alice").status_code == 429
    # Admin → Axes → Access attempts → delete: unlocked at once.
    ids = [str(pk) for pk in AccessAttempt.objects.values_list("pk", flat=True)]
    changelist = reverse("admin:axes_accessattempt_changelist")
    assert admin_client_.get(changelist).status_code == 200
    resp = admin_client_.post(changelist, {"action": "delete_selected",
                                           "_selected_action": ids, "post": "yes"})
    assert resp.status_code == 302 and not AccessAttempt.objects.exists()
    client = Client()
    assert _login(client, "alice", "pw-alice").status_code == 302 and _signed_in(client)
    # Locked again, then the failures age past the cool-off: the lock lifts by itself.
    for _ in range(LIMIT):
        _login(Client(), "alice", "wrong")
    assert _login(Client(), "alice", "pw-alice").status_code == 429
    AccessAttempt.objects.update(attempt_time=AccessAttempt.objects.first().attempt_time
                                 - settings.AXES_COOLOFF_TIME - timedelta(seconds=1))
    assert _login(Client(), "alice", "pw-alice").status_code == 302


def test_wrong_api_tokens_lock_the_address(alice):
    good = Token.objects.create(user=alice).key
    client = Client()

    def call(key, ip=HERE):
        return client.get("/api/my/assignments/", HTTP_AUTHORIZATION=f"Token {key}",
                          REMOTE_ADDR=ip)

    assert call(good).status_code == 200
    codes = [call(f"{i:040x}").status_code for i in range(30)]
    assert codes[:LIMIT - 1] == [401] * (LIMIT - 1) and set(codes[LIMIT - 1:]) == {429}
    locked = call(good)
    assert locked.status_code == 429 and "Too many failed sign-in attempts" in locked.json()[
        "detail"]
    assert locked["Retry-After"] == str(15 * 60)
    assert call(good, ip=THERE).status_code == 200  # a token names no account: address only


def test_any_username_is_a_failure_not_a_server_error(alice):
    """Django's login form does not check the username's length; axes' column holds 255."""
    client = Client()
    for name in ("x" * 10_000, "é" * 10_000, "9" * 300):
        assert _login(client, name, "guess").status_code == 200
    assert AccessAttempt.objects.filter(ip_address=HERE).count() == 3


def test_client_address_behind_trusted_proxies(settings):
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2",
                                   HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.7")
    settings.TRUSTED_PROXY_COUNT = 0
    assert client_ip(request) == "10.0.0.2"  # no proxy: the header is the client's own word
    settings.TRUSTED_PROXY_COUNT = 1
    assert client_ip(request) == "203.0.113.7"  # the entry our proxy appended, not a spoof
    settings.TRUSTED_PROXY_COUNT = 2
    assert client_ip(request) == "6.6.6.6"
    settings.TRUSTED_PROXY_COUNT = 1
    forged = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="<script>")
    assert client_ip(forged) == "10.0.0.2"  # never store what is not an address
