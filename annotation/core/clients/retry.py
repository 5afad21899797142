"""Retry timing for the HTTP clients that have no SDK doing it for them (the OpenAI-compatible
client and Prolific). MTurk is not here: botocore's own retry mode handles it.

Full-jitter exponential backoff: retry ``k`` (1-based) waits ``uniform(0, min(cap, base * 2**(k-1)))``.
A server's ``Retry-After`` (seconds or an HTTP date; OpenAI also sends ``retry-after-ms``)
replaces the jittered delay, capped at ``cap`` so one call can never hang unboundedly.
"""
from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping

# 408 is a server-side timeout and 429 a rate limit; every other 4xx is the caller's fault.
RETRYABLE_STATUS = frozenset({408, 429}) | frozenset(range(500, 600))


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a response asks for, or None. ``headers`` must be case-insensitive (httpx's)."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(retry_index: int, *, base: float, cap: float,
                  retry_after: float | None = None, rng: random.Random | None = None) -> float:
    """Seconds to wait before retry number ``retry_index`` (1-based)."""
    if retry_after is not None:
        return min(retry_after, cap)
    return (rng or random).uniform(0.0, min(cap, base * 2 ** (retry_index - 1)))
