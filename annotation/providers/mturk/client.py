"""The one module that imports boto3 for Mechanical Turk.

Sandbox unless ``MTURK_PRODUCTION`` is on, and even then a launch must pass
``production_confirmed=True`` (the admin's confirmation box or ``--confirm-production``).
Credentials come from boto3's usual chain (environment, instance profile), never from our
database.

Retries are botocore's alone: its ``standard`` retry mode (set once in ``make_client``) retries
throttling errors (``ThrottlingException``, HTTP 429, …), 5xx responses such as MTurk's
``ServiceFault``, and connection errors, with jittered exponential backoff, up to
``MTURK_MAX_ATTEMPTS`` attempts in all; nothing here retries on top of it. A retry after a 5xx
can repeat a write MTurk did carry out: HITs and bonuses carry a ``UniqueRequestToken``, so the
repeat is answered "already exists / already processed", which the provider reads as success
(approve and reject look the assignment's status up).
``call()`` only turns what is left into ``MTurkError``, saying whether it can have taken effect.
"""
import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings

from annotation.core.clients.errors import MarketplaceError, ProductionNotConfirmed

SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
PRODUCTION_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"


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
        "mturk", region_name=settings.MTURK_REGION, endpoint_url=endpoint(), config=client_config(),
    )


def client_config() -> Config:
    # total_max_attempts counts the first attempt too (botocore's max_attempts would not).
    return Config(retries={"mode": "standard",
                           "total_max_attempts": max(1, settings.MTURK_MAX_ATTEMPTS)},
                  connect_timeout=10, read_timeout=30)


def call(client, operation: str, **params) -> dict:
    """``client.<operation>(**params)`` (botocore retries); what still fails becomes MTurkError.

    ``definite`` is False when the request may have been carried out: a ``ServiceFault`` (MTurk
    failed while handling it) or a connection error after botocore's last attempt.
    """
    try:
        return getattr(client, operation)(**params)
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code = error.get("Code", "")
        message = error.get("Message", "") or str(exc)
        turk_code = exc.response.get("TurkErrorCode", "") or error.get("TurkErrorCode", "")
        raise MTurkError(f"{operation}: {code}: {message}", code=code, turk_code=turk_code,
                         definite=code != "ServiceFault") from exc
    except BotoCoreError as exc:  # connection trouble after botocore's last attempt
        raise MTurkError(f"{operation}: {exc}", definite=False) from exc
