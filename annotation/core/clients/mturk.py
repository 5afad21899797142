"""The one module that imports boto3 for Mechanical Turk.

Sandbox unless ``MTURK_PRODUCTION`` is on, and even then a launch must pass
``production_confirmed=True`` (the admin's confirmation box or ``--confirm-production``).
Credentials come from boto3's usual chain (environment, instance profile), never from our
database. Calls go through ``call()``, which turns botocore errors into ``MTurkError`` and
backs off on throttling and service faults (botocore's own retries cover the network layer).
"""
import time
from collections.abc import Callable

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings

from annotation.core.clients.errors import MarketplaceError, ProductionNotConfirmed

SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
PRODUCTION_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"
SANDBOX_WORKER_URL = "https://workersandbox.mturk.com"
PRODUCTION_WORKER_URL = "https://worker.mturk.com"
_RETRYABLE = {"ThrottlingException", "Throttling", "ServiceFault", "ServiceUnavailable",
              "RequestLimitExceeded", "TooManyRequestsException"}

sleep: Callable[[float], None] = time.sleep  # tests replace it


class MTurkError(MarketplaceError):
    def __init__(self, message: str, *, code: str = "", turk_code: str = "",
                 definite: bool = True):
        super().__init__(message, definite=definite)
        self.code, self.turk_code = code, turk_code


def is_production() -> bool:
    return bool(settings.MTURK_PRODUCTION)


def endpoint() -> str:
    return settings.MTURK_ENDPOINT_URL or (
        PRODUCTION_ENDPOINT if is_production() else SANDBOX_ENDPOINT
    )


def worker_site() -> str:
    return PRODUCTION_WORKER_URL if is_production() else SANDBOX_WORKER_URL


def make_client(*, launch: bool = False, production_confirmed: bool = False):
    """A boto3 MTurk client for the configured mode; the single seam tests replace.

    In production a client for a launch needs ``production_confirmed``; follow-up calls
    (sync, review, bonuses) act on HITs that a confirmed launch created.
    """
    if is_production() and launch and not production_confirmed:
        raise ProductionNotConfirmed(
            "MTURK_PRODUCTION is on: confirm that this spends real money (admin checkbox or "
            "--confirm-production)."
        )
    return boto3.client(
        "mturk", region_name=settings.MTURK_REGION, endpoint_url=endpoint(),
        config=Config(retries={"max_attempts": settings.MTURK_MAX_ATTEMPTS, "mode": "standard"},
                      connect_timeout=10, read_timeout=30),
    )


def call(client, operation: str, **params) -> dict:
    """``client.<operation>(**params)`` with backoff on throttling; errors become MTurkError."""
    attempts = max(1, settings.MTURK_MAX_ATTEMPTS)
    for attempt in range(1, attempts + 1):
        try:
            return getattr(client, operation)(**params)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = error.get("Code", "")
            message = error.get("Message", "") or str(exc)
            turk_code = exc.response.get("TurkErrorCode", "") or error.get("TurkErrorCode", "")
            retryable = code in _RETRYABLE or "rate exceeded" in message.lower()
            if retryable and attempt < attempts:
                sleep(min(0.5 * 2 ** (attempt - 1), 20.0))
                continue
            raise MTurkError(f"{operation}: {code}: {message}", code=code, turk_code=turk_code,
                             definite=code != "ServiceFault") from exc
        except BotoCoreError as exc:  # connection trouble after botocore's own retries
            raise MTurkError(f"{operation}: {exc}", definite=False) from exc
    raise AssertionError("unreachable")
