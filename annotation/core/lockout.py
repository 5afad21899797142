"""Repeated failed sign-ins lock the account and the address (django-axes, database handler).

Two doors lead in, and both count failures in axes' ``AccessAttempt`` table, so every web
process sees the same counts and an admin unlocks from one place (Admin → Axes → Access
attempts: delete the rows; or ``manage.py axes_reset_username NAME`` / ``axes_reset_ip IP``):

- **Passwords** (``/accounts/login/`` and the admin login): ``axes.backends.AxesStandaloneBackend``
  runs before our backend. A failure counts against the username *and* the address; either
  reaching ``LOGIN_FAILURE_LIMIT`` within ``LOGIN_LOCKOUT_MINUTES`` refuses every sign-in for it,
  even with the right password, until the lockout expires or an admin unlocks it.
- **API tokens**: ``LockoutTokenAuthentication`` (DRF's token authentication) counts a wrong
  token against the address (a wrong token names no account) and refuses a locked address.

A locked request is answered ``429 Too Many Requests`` with ``Retry-After``: JSON for the API,
the login page with the reason otherwise (``lockout_response``).
"""
from __future__ import annotations

import ipaddress
import math

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_login_failed
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, Throttled

# What a wrong API token reports to axes: no username, so only the address counts.
TOKEN_CREDENTIALS = {"username": None, "method": "api-token"}


def client_ip(request: HttpRequest) -> str | None:
    """The client's address: ``REMOTE_ADDR``, or behind ``TRUSTED_PROXY_COUNT`` proxies the
    entry they appended to ``X-Forwarded-For`` (counted from the right, so a client cannot
    choose it by sending its own header); an entry that is not an address is not used."""
    hops = settings.TRUSTED_PROXY_COUNT
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if hops and forwarded:
        chain = [part.strip() for part in forwarded.split(",") if part.strip()]
        if chain:
            try:
                return str(ipaddress.ip_address(chain[-min(hops, len(chain))]))
            except ValueError:
                pass
    return request.META.get("REMOTE_ADDR")


def client_username(request: HttpRequest, credentials=None) -> str | None:
    """The username a sign-in tried, as axes stores it: at most its column's length (no account
    name is longer; Django's login form does not check the length) and without NUL."""
    from axes.models import AccessAttempt  # needs the app registry

    field = get_user_model().USERNAME_FIELD
    if credentials:
        username = credentials.get(field)
    else:
        username = getattr(request, "data", request.POST).get(field)
    if not isinstance(username, str):
        return None
    limit = AccessAttempt._meta.get_field("username").max_length
    return username.replace("\x00", "0x00")[:limit]


def lockout_parameters(request_or_attempt, credentials=None) -> list[str]:
    """Count a password failure per account and per address, a token failure per address."""
    if isinstance(request_or_attempt, HttpRequest):
        from axes.helpers import get_client_username  # needs settings configured

        username = get_client_username(request_or_attempt, credentials)
    else:  # an AccessAttempt
        username = getattr(request_or_attempt, "username", None)
    return ["username", "ip_address"] if username else ["ip_address"]


def cooloff_seconds() -> int | None:
    cooloff = settings.AXES_COOLOFF_TIME
    return None if cooloff is None else int(cooloff.total_seconds())


def lockout_message() -> str:
    seconds = cooloff_seconds()
    then = (f"Try again in {math.ceil(seconds / 60)} minutes or ask an admin to unlock it."
            if seconds else "Ask an admin to unlock it.")
    return f"Too many failed sign-in attempts for this account or from this address. {then}"


def lockout_response(request: HttpRequest, original_response=None, credentials=None):
    """axes' AXES_LOCKOUT_CALLABLE: 429 with the reason and when to retry."""
    message = lockout_message()
    if request.path.startswith("/api/") or "json" in request.META.get("HTTP_ACCEPT", ""):
        response: HttpResponse = JsonResponse({"detail": message}, status=429)
    else:
        response = render(request, "registration/locked_out.html", {"message": message},
                          status=429)
    if (seconds := cooloff_seconds()) is not None:
        response["Retry-After"] = str(seconds)
    return response


class LockoutTokenAuthentication(TokenAuthentication):
    """DRF token authentication whose wrong tokens count towards the address's lockout."""

    def authenticate(self, request):
        header = get_authorization_header(request).split()
        if not settings.AXES_ENABLED or not header \
                or header[0].lower() != self.keyword.lower().encode():
            return super().authenticate(request)
        from axes.handlers.proxy import AxesProxyHandler  # needs the app registry

        http_request = request._request
        if not AxesProxyHandler.is_allowed(http_request, TOKEN_CREDENTIALS):
            raise Throttled(wait=cooloff_seconds(), detail=lockout_message())
        try:
            return super().authenticate(request)
        except AuthenticationFailed:
            user_login_failed.send(sender=__name__, credentials=TOKEN_CREDENTIALS,
                                   request=http_request)
            raise
