"""Requests-per-minute / tokens-per-minute limits for outside APIs, shared by every process.

A provider's quota is per key, not per worker: N Celery workers each pacing themselves to the
configured rate would send N times that. So the budget lives in Redis when
``RATE_LIMIT_REDIS_URL`` is set (by default the Celery broker's Redis), and in the process only
in the embedded setup (no broker: everything runs in one process anyway).

Both limiters are the same token bucket: capacity ``burst`` (default: the whole per-minute
budget), refilled continuously at ``per_minute / 60`` per second. A request takes one unit from
the request bucket and its estimated tokens from the token bucket, all or nothing; a request
larger than the token bucket waits for a full bucket and then leaves it in debt. The Redis
limiter does the same in one Lua script (atomic; the clock is Redis's ``TIME``, so machines with
skewed clocks still agree), keyed by the caller's key, e.g. one per API endpoint and model.

If Redis cannot be reached, a call falls back to an in-process bucket and logs a warning: pacing
degrades to per-process rather than stopping work (the provider's 429s and the client's retries
still apply).
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import lru_cache
from typing import Protocol

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

logger = logging.getLogger(__name__)

KEY_PREFIX = "vlmeval:ratelimit:"


class Limiter(Protocol):
    def try_acquire(self, tokens: float = 0) -> float: ...

    def acquire(self, tokens: float = 0, timeout: float | None = None) -> float: ...


class _Bucket:
    """Token bucket refilled continuously at ``rate_per_s`` up to ``capacity``."""

    def __init__(self, per_minute: float, capacity: float, now: float) -> None:
        self.rate_per_s = per_minute / 60.0
        self.capacity = capacity
        self.level = capacity
        self.stamp = now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate_per_s)
        self.stamp = now

    def wait_for(self, amount: float) -> float:
        # Requests bigger than the bucket wait for a full bucket, then go into debt.
        need = min(amount, self.capacity)
        return 0.0 if self.level >= need else (need - self.level) / self.rate_per_s


class _Blocking:
    """``acquire`` on top of ``try_acquire``: sleep for the wait the limiter names, ask again."""

    _clock: Callable[[], float]
    _sleep: Callable[[float], None]

    def try_acquire(self, tokens: float = 0) -> float:
        raise NotImplementedError

    def acquire(self, tokens: float = 0, timeout: float | None = None) -> float:
        """Block until capacity is available; return seconds waited.

        Raises ``TimeoutError`` if the wait would exceed ``timeout``.
        """
        start = self._clock()
        while True:
            wait = self.try_acquire(tokens)
            waited = self._clock() - start
            if wait == 0.0:
                return waited
            if timeout is not None and waited + wait > timeout:
                raise TimeoutError(f"rate limiter: need {wait:.3f}s more, timeout {timeout}s")
            self._sleep(wait)


class LocalRateLimiter(_Blocking):
    """Thread-safe in-process limiter.

    ``burst_requests``/``burst_tokens`` default to the full per-minute budget; set
    ``burst_requests=1`` for evenly spaced calls. Token counts are caller estimates (e.g. prompt
    chars/4 + ``max_tokens``). ``clock``/``sleep`` are injectable for tests.
    """

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        *,
        burst_requests: float | None = None,
        burst_tokens: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        now = clock()
        self._req = (
            _Bucket(requests_per_minute, burst_requests or requests_per_minute, now)
            if requests_per_minute
            else None
        )
        self._tok = (
            _Bucket(tokens_per_minute, burst_tokens or tokens_per_minute, now)
            if tokens_per_minute
            else None
        )

    def try_acquire(self, tokens: float = 0) -> float:
        """Take capacity now and return 0.0, or take nothing and return the wait."""
        with self._lock:
            now = self._clock()
            wait = 0.0
            for bucket, amount in ((self._req, 1), (self._tok, tokens)):
                if bucket is not None and amount:
                    bucket.refill(now)
                    wait = max(wait, bucket.wait_for(amount))
            if wait > 0:
                return wait
            if self._req is not None:
                self._req.level -= 1
            if self._tok is not None and tokens:
                self._tok.level -= tokens
            return 0.0


# Both buckets in one hash: <b>l = level, <b>s = stamp (Redis TIME, seconds). ARGV: per-second
# rate and capacity of the request bucket, then of the token bucket (rate 0 = no limit), then
# the request's tokens. Returns the wait in seconds as a string ("0" = taken).
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local buckets = {
  {'r', tonumber(ARGV[1]), tonumber(ARGV[2]), 1},
  {'t', tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])},
}
local levels = {}
local wait = 0
for i, b in ipairs(buckets) do
  local name, rate, cap, amount = b[1], b[2], b[3], b[4]
  if rate > 0 then
    local level = tonumber(redis.call('HGET', KEYS[1], name .. 'l'))
    local stamp = tonumber(redis.call('HGET', KEYS[1], name .. 's'))
    if level == nil or stamp == nil then
      level = cap
    else
      level = math.min(cap, level + math.max(0, now - stamp) * rate)
    end
    levels[i] = level
    local need = math.min(amount, cap)
    if amount > 0 and level < need then
      wait = math.max(wait, (need - level) / rate)
    end
  end
end
if wait > 0 then
  return string.format('%.6f', math.max(wait, 0.000001))  -- never "0": nothing was taken
end
local ttl = 1
for i, b in ipairs(buckets) do
  if levels[i] ~= nil then
    local left = levels[i] - b[4]
    redis.call('HSET', KEYS[1], b[1] .. 'l', string.format('%.6f', left),
               b[1] .. 's', string.format('%.6f', now))
    ttl = math.max(ttl, (b[3] - left) / b[2])
  end
end
-- Once both buckets are full again the state says nothing: let Redis drop it.
redis.call('PEXPIRE', KEYS[1], math.ceil(ttl * 1000) + 1000)
return '0'
"""


class RedisRateLimiter(_Blocking):
    """The same buckets in Redis under ``key``: every process using the key shares them.

    ``redis_client`` is a ``redis.Redis``; ``clock``/``sleep`` only time the caller's own waits.
    """

    def __init__(
        self,
        redis_client,
        key: str,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        *,
        burst_requests: float | None = None,
        burst_tokens: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.key = KEY_PREFIX + key
        self._clock = clock
        self._sleep = sleep
        self._take = redis_client.register_script(_TAKE)
        rpm, tpm = requests_per_minute or 0, tokens_per_minute or 0
        self._args = [rpm / 60.0, burst_requests or rpm, tpm / 60.0, burst_tokens or tpm]
        self._fallback = LocalRateLimiter(
            requests_per_minute, tokens_per_minute, burst_requests=burst_requests,
            burst_tokens=burst_tokens, clock=clock, sleep=sleep)
        self._degraded = False

    def try_acquire(self, tokens: float = 0) -> float:
        """Take capacity now and return 0.0, or take nothing and return the wait."""
        try:
            wait = float(self._take(keys=[self.key], args=[*self._args, tokens]))
        except redis.RedisError as exc:
            if not self._degraded:
                logger.warning("rate limiter %s: Redis unavailable (%s); pacing this process "
                               "only until it is back", self.key, exc)
                self._degraded = True
            return self._fallback.try_acquire(tokens)
        if self._degraded:
            logger.warning("rate limiter %s: Redis is back", self.key)
            self._degraded = False
        return wait


@lru_cache(maxsize=8)
def _redis(url: str) -> redis.Redis:
    # Short timeouts and one immediate retry (a pooled connection gone stale after a Redis
    # restart): a dead Redis must not hold an API call for long (see the fallback).
    return redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1,
                                retry=Retry(NoBackoff(), 1))


def rate_limiter(
    key: str,
    requests_per_minute: float | None = None,
    tokens_per_minute: float | None = None,
    *,
    burst_requests: float | None = None,
    burst_tokens: float | None = None,
) -> Limiter:
    """The limiter for ``key``: shared through Redis when ``RATE_LIMIT_REDIS_URL`` is set,
    otherwise in this process. Callers keep one per key (the Redis one holds no state)."""
    from django.conf import settings

    url = getattr(settings, "RATE_LIMIT_REDIS_URL", "")
    limits = dict(burst_requests=burst_requests, burst_tokens=burst_tokens)
    if url:
        return RedisRateLimiter(_redis(url), key, requests_per_minute, tokens_per_minute,
                                **limits)
    return LocalRateLimiter(requests_per_minute, tokens_per_minute, **limits)
