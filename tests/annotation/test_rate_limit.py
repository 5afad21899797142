"""Rate limiters: the in-process bucket (fake clock), and the Redis one shared by processes.

The Redis tests need ``TEST_REDIS_URL`` (``eval "$(scripts/services.sh start)"``; ``make test``
sets it) and skip without it. Each limiter instance gets its own Redis client and connection
pool, as separate worker processes would; the budget they share lives only in Redis.
"""
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from itertools import pairwise
from pathlib import Path

import pytest
import redis

from annotation.core import rate_limit
from annotation.core.clients.llm import ChatClient, LlmEndpoint, text_message
from annotation.core.rate_limit import LocalRateLimiter, RedisRateLimiter
from tests.support.fake_clock import FakeClock
from tests.support.fake_openai import FakeOpenAIServer

# --------------------------------------------------------------------------- in-process


def test_rpm_spacing_with_fake_clock():
    clock = FakeClock()
    rl = LocalRateLimiter(requests_per_minute=60, burst_requests=2, clock=clock, sleep=clock.sleep)
    assert rl.acquire() == 0.0 and rl.acquire() == 0.0  # burst of 2
    assert rl.try_acquire() == pytest.approx(1.0)  # 1 request/s refill
    assert rl.acquire() == pytest.approx(1.0)
    assert rl.acquire() == pytest.approx(1.0)
    assert clock.now == pytest.approx(2.0)


def test_tpm_and_oversized_request():
    clock = FakeClock()
    rl = LocalRateLimiter(tokens_per_minute=600, clock=clock, sleep=clock.sleep)  # 10 tokens/s
    assert rl.acquire(tokens=500) == 0.0
    assert rl.try_acquire(tokens=200) == pytest.approx(10.0)  # 100 left, need 100 more
    # Larger than the bucket: waits for a full bucket, then goes into debt.
    assert rl.acquire(tokens=1000) == pytest.approx(50.0)
    assert rl.try_acquire(tokens=10) == pytest.approx(41.0)


def test_timeout():
    clock = FakeClock()
    rl = LocalRateLimiter(requests_per_minute=6, burst_requests=1, clock=clock, sleep=clock.sleep)
    rl.acquire()
    with pytest.raises(TimeoutError):
        rl.acquire(timeout=1.0)


def spacing(limiters, calls_each=2):
    """Acquire from each limiter in its own thread; return (elapsed, sorted acquisition times)."""
    stamps, lock = [], threading.Lock()

    def worker(rl):
        for _ in range(calls_each):
            rl.acquire()
            with lock:
                stamps.append(time.monotonic())

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker, args=(rl,)) for rl in limiters]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - t0, sorted(stamps)


def test_real_time_spacing_across_threads():
    rl = LocalRateLimiter(requests_per_minute=1200, burst_requests=1)  # one per 50 ms
    elapsed, stamps = spacing([rl, rl, rl])
    assert len(stamps) == 6
    assert elapsed >= 5 * 0.05 * 0.9  # 6 calls -> >= 5 intervals
    assert min(b - a for a, b in pairwise(stamps)) >= 0.05 * 0.5  # never two at once


_SETTING_FOR_EACH_ENV = """
import importlib, json, os, sys
for env in json.loads(sys.argv[1]):
    for name in ("CELERY_BROKER_URL", "RATE_LIMIT_REDIS_URL"):
        os.environ.pop(name, None)
    os.environ.update(env)
    import config.settings as s
    print(importlib.reload(s).RATE_LIMIT_REDIS_URL)
"""


def test_the_setting_defaults_to_a_redis_broker_only():
    envs = [{"CELERY_BROKER_URL": "redis://cache:6379/0"},
            {"CELERY_BROKER_URL": "amqp://rabbit//"},
            {},  # the embedded default: no broker, each process paces itself
            {"CELERY_BROKER_URL": "redis://cache:6379/0",
             "RATE_LIMIT_REDIS_URL": "redis://other:6379/3"}]
    result = subprocess.run(
        [sys.executable, "-c", _SETTING_FOR_EACH_ENV, json.dumps(envs)],
        env=os.environ | {"SECRET_KEY": "x" * 50}, capture_output=True, text=True, timeout=60,
        cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n") == [
        "redis://cache:6379/0", "", "", "redis://other:6379/3", ""]


def test_without_a_redis_url_each_process_paces_itself(settings):
    settings.RATE_LIMIT_REDIS_URL = ""
    assert isinstance(rate_limit.rate_limiter("k", 60), LocalRateLimiter)


def test_an_unreachable_redis_falls_back_to_pacing_in_process(caplog):
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = rate_limit._redis(f"redis://127.0.0.1:{port}/0")  # the production client's options
    clock = FakeClock()
    rl = RedisRateLimiter(client, "down", requests_per_minute=60, burst_requests=1, clock=clock,
                          sleep=clock.sleep)
    with caplog.at_level(logging.WARNING, logger="annotation.core.rate_limit"):
        t0 = time.monotonic()
        assert rl.try_acquire() == 0.0
        assert time.monotonic() - t0 < 1.0  # refused at once, not held by Redis client retries
        assert rl.try_acquire() == pytest.approx(1.0)  # the local bucket still paces
    assert len(caplog.records) == 1 and "Redis unavailable" in caplog.text  # said once


# --------------------------------------------------------------------------- shared (Redis)


@pytest.fixture
def redis_url():
    url = os.environ.get("TEST_REDIS_URL")
    if not url:
        pytest.skip("TEST_REDIS_URL not set (eval \"$(scripts/services.sh start)\")")
    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis at TEST_REDIS_URL not reachable: {exc}")
    return url


@pytest.fixture
def shared(redis_url):
    """Builds Redis limiters on one fresh key, each with its own client (= its own process)."""
    key = f"test:{uuid.uuid4().hex}"
    clients = []

    def make(**limits):
        client = redis.Redis.from_url(redis_url)
        clients.append(client)
        return RedisRateLimiter(client, key, **limits)

    yield make
    if clients:
        clients[0].delete(rate_limit.KEY_PREFIX + key)
    for client in clients:
        client.close()


def test_two_processes_share_one_request_budget(shared):
    a, b = shared(requests_per_minute=60, burst_requests=2), shared(requests_per_minute=60,
                                                                     burst_requests=2)
    assert a.try_acquire() == 0.0
    assert b.try_acquire() == 0.0  # the burst of 2 is used up between them
    wait = a.try_acquire()
    assert 0.9 < wait <= 1.0  # 1 request/s refill
    assert b.try_acquire() == pytest.approx(wait, abs=0.05)  # b sees the same empty bucket


def test_two_processes_share_one_token_budget_and_the_debt(shared):
    a, b = shared(tokens_per_minute=600), shared(tokens_per_minute=600)  # 10 tokens/s
    assert a.try_acquire(tokens=500) == 0.0
    assert b.try_acquire(tokens=200) == pytest.approx(10.0, abs=0.05)  # 100 left
    assert b.try_acquire(tokens=100) == 0.0
    # Larger than the bucket: waits for a full bucket (60 s), then leaves it in debt.
    assert a.try_acquire(tokens=1000) == pytest.approx(60.0, abs=0.05)


def test_requests_and_tokens_are_taken_together_or_not_at_all(shared):
    a = shared(requests_per_minute=60, tokens_per_minute=600, burst_requests=5)
    b = shared(requests_per_minute=60, tokens_per_minute=600, burst_requests=5)
    assert a.try_acquire(tokens=600) == 0.0
    assert b.try_acquire(tokens=100) == pytest.approx(10.0, abs=0.05)  # no tokens: no request
    assert b.try_acquire(tokens=0) == 0.0  # the request bucket was not charged: 3 of 5 left


def test_real_time_spacing_across_processes(shared):
    limits = dict(requests_per_minute=1200, burst_requests=1)  # one per 50 ms in total
    elapsed, stamps = spacing([shared(**limits), shared(**limits), shared(**limits)])
    assert len(stamps) == 6
    assert elapsed >= 5 * 0.05 * 0.9
    assert min(b - a for a, b in pairwise(stamps)) >= 0.05 * 0.5


def test_the_factory_shares_through_redis_when_configured(settings, redis_url):
    settings.RATE_LIMIT_REDIS_URL = redis_url
    key = f"test:{uuid.uuid4().hex}"
    a = rate_limit.rate_limiter(key, requests_per_minute=60, burst_requests=1)
    b = rate_limit.rate_limiter(key, requests_per_minute=60, burst_requests=1)
    assert isinstance(a, RedisRateLimiter)
    assert a.try_acquire() == 0.0 and b.try_acquire() > 0.9


def test_two_chat_clients_on_one_endpoint_share_the_limit(settings, redis_url):
    settings.RATE_LIMIT_REDIS_URL = redis_url
    with FakeOpenAIServer() as server:
        config = LlmEndpoint(base_url=server.base_url, model=f"m-{uuid.uuid4().hex}")
        limits = dict(requests_per_minute=600, burst_requests=1)  # one per 100 ms
        clients = [ChatClient(config, rate_limiter=rate_limit.rate_limiter(
            config.rate_limit_key(), **limits)) for _ in range(2)]
        t0 = time.monotonic()
        for client in clients * 2:
            client.complete([text_message("user", "hi")], temperature=0, max_tokens=5)
        elapsed = time.monotonic() - t0
        for client in clients:
            client.close()
    assert server.call_count == 4 and elapsed >= 3 * 0.1 * 0.9
