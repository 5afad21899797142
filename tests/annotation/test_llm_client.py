"""ChatClient against a real loopback FakeOpenAIServer (no network, no keys)."""

import time

import pytest

from annotation.core.clients.llm import (
    ChatClient,
    LlmEndpoint,
    LlmError,
    estimate_cost,
    image_parts,
    multimodal_message,
    text_message,
)
from annotation.core.rate_limit import LocalRateLimiter
from tests.support.fake_clock import FakeClock
from tests.support.fake_openai import FakeOpenAIServer, Reply

PNG = b"\x89PNG\r\n\x1a\nfake-image-bytes"


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


class RecordingSleep:
    """Records backoff delays instead of sleeping, keeping the suite fast."""

    def __init__(self):
        self.calls = []

    def __call__(self, seconds):
        self.calls.append(seconds)


def make_client(server, *, sleep=None, **overrides):
    cfg = dict(
        base_url=server.base_url,
        api_key="sk-test",
        model="judge-model",
        timeout_s=2.0,
        max_retries=3,
        backoff_base_s=0.01,
        backoff_max_s=0.05,
    )
    cfg.update(overrides)
    return ChatClient(LlmEndpoint(**cfg), sleep=sleep or RecordingSleep())


MSGS = [text_message("system", "You are a judge."), text_message("user", "Compare A and B.")]


def test_success_returns_text_usage_and_sends_payload(server):
    server.enqueue(
        Reply.ok("Overall, Response A is better.", prompt_tokens=120, completion_tokens=9)
    )
    with make_client(server) as client:
        res = client.complete(MSGS, temperature=0.0, max_tokens=256, seed=7)
    assert res.text == "Overall, Response A is better."
    assert (res.prompt_tokens, res.completion_tokens, res.total_tokens) == (120, 9, 129)
    assert res.model == "judge-model"
    assert res.attempts == 1 and not res.refused
    assert res.finish_reason == "stop"
    assert res.raw["object"] == "chat.completion"
    assert res.latency_s > 0
    (req,) = server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test"
    assert req.body["model"] == "judge-model"
    assert req.body["messages"] == MSGS
    assert req.body["temperature"] == 0.0
    assert req.body["max_tokens"] == 256
    assert req.body["seed"] == 7 and req.body["n"] == 1
    assert "idempotency-key" not in req.headers


def test_n_choices_and_default_usage(server):
    server.enqueue(Reply.ok("same"))
    with make_client(server) as client:
        res = client.complete(MSGS, temperature=1.0, max_tokens=10, n=3)
    assert res.choices == ("same", "same", "same")
    assert res.prompt_tokens > 0 and res.completion_tokens > 0
    assert "seed" not in server.requests[0].body


def test_429_with_retry_after_then_success(server):
    server.enqueue(Reply.error(429, retry_after=2), Reply.ok("fine"))
    sleep = RecordingSleep()
    with make_client(server, sleep=sleep, backoff_max_s=5.0) as client:
        res = client.complete(MSGS, temperature=0, max_tokens=5)
    assert res.text == "fine" and res.attempts == 2
    assert sleep.calls == [2.0]  # Retry-After honoured, not the jittered backoff
    assert server.call_count == 2


def test_retry_after_is_capped_by_backoff_max(server):
    server.enqueue(Reply.error(429, retry_after=120), Reply.ok("fine"))
    sleep = RecordingSleep()
    with make_client(server, sleep=sleep, backoff_max_s=0.5) as client:
        assert client.complete(MSGS, temperature=0, max_tokens=5).attempts == 2
    assert sleep.calls == [0.5]


def test_retry_after_ms_and_http_date_are_honoured(server):
    server.enqueue(Reply.error(429, headers={"retry-after-ms": "1500", "Retry-After": "9"}),
                   Reply.error(503, retry_after="Wed, 21 Oct 2015 07:28:00 GMT"),
                   Reply.ok("fine"))
    sleep = RecordingSleep()
    with make_client(server, sleep=sleep, backoff_max_s=5.0) as client:
        assert client.complete(MSGS, temperature=0, max_tokens=5).attempts == 3
    assert sleep.calls == [1.5, 0.0]  # milliseconds win; a date in the past means now


def test_500s_then_success_with_jittered_exponential_backoff(server):
    server.enqueue(Reply.error(500), Reply.error(502), Reply.error(503), Reply.ok("ok"))
    sleep = RecordingSleep()
    with make_client(server, sleep=sleep, backoff_base_s=1.0, backoff_max_s=3.0) as client:
        res = client.complete(MSGS, temperature=0, max_tokens=5)
    assert res.attempts == 4 and res.text == "ok"
    ceilings = [1.0, 2.0, 3.0]  # base * 2**k, capped at backoff_max_s
    assert len(sleep.calls) == 3
    assert all(0.0 <= s <= c for s, c in zip(sleep.calls, ceilings, strict=True))


def test_persistent_500_raises_after_max_retries(server):
    server.responder = lambda body: Reply.error(500, body='{"error": "boom"}')
    with make_client(server, max_retries=2) as client:
        with pytest.raises(LlmError) as info:
            client.complete(MSGS, temperature=0, max_tokens=5)
    assert info.value.status == 500
    assert info.value.attempts == 3
    assert "boom" in info.value.body_excerpt
    assert server.call_count == 3  # first try + max_retries


def test_timeout_on_slow_reply_is_retried(server):
    # The slow reply would take 20 s; the client gives up after 0.2 s and retries. The bound
    # leaves a loaded machine many seconds of slack and still fails a client that waited.
    server.enqueue(Reply.slow("too late", delay_s=20.0), Reply.ok("on time"))
    with make_client(server, timeout_s=0.2) as client:
        t0 = time.monotonic()
        res = client.complete(MSGS, temperature=0, max_tokens=5)
    assert res.text == "on time" and res.attempts == 2
    assert time.monotonic() - t0 < 10.0


def test_persistent_timeout_raises_without_status(server):
    server.responder = lambda body: Reply.slow("never", delay_s=1.0)
    with make_client(server, timeout_s=0.1, max_retries=1) as client:
        with pytest.raises(LlmError) as info:
            client.complete(MSGS, temperature=0, max_tokens=5)
    assert info.value.status is None and info.value.attempts == 2
    assert "Timeout" in str(info.value)


def test_dropped_connection_is_retried(server):
    server.enqueue(Reply.drop(), Reply.ok("back"))
    with make_client(server) as client:
        res = client.complete(MSGS, temperature=0, max_tokens=5)
    assert res.text == "back" and res.attempts == 2


def test_connection_refused_is_retried_then_raises():
    with FakeOpenAIServer() as srv:
        base_url = srv.base_url  # port is free again after stop
    cfg = LlmEndpoint(
        base_url=base_url,
        model="m",
        timeout_s=0.5,
        max_retries=2,
        backoff_base_s=0.01,
        backoff_max_s=0.01,
    )
    sleep = RecordingSleep()
    with ChatClient(cfg, sleep=sleep) as client:
        with pytest.raises(LlmError) as info:
            client.complete(MSGS, temperature=0, max_tokens=5)
    assert info.value.attempts == 3 and len(sleep.calls) == 2


def test_bad_scheme_is_not_retried():
    cfg = LlmEndpoint(base_url="ftp://127.0.0.1/v1", model="m", max_retries=3)
    sleep = RecordingSleep()
    with ChatClient(cfg, sleep=sleep) as client:
        with pytest.raises(LlmError, match="bad base_url"):
            client.complete(MSGS, temperature=0, max_tokens=5)
    assert sleep.calls == []


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_other_4xx_is_not_retried(server, status):
    server.enqueue(
        Reply.error(status, body='{"error": {"message": "bad request: max_tokens"}}'),
        Reply.ok("should not be reached"),
    )
    sleep = RecordingSleep()
    with make_client(server, sleep=sleep) as client:
        with pytest.raises(LlmError) as info:
            client.complete(MSGS, temperature=0, max_tokens=5)
    assert info.value.status == status
    assert "max_tokens" in info.value.body_excerpt
    assert server.call_count == 1 and sleep.calls == []


def test_malformed_body_raises_without_retry(server):
    server.enqueue(Reply.malformed(), Reply.ok("unused"))
    with make_client(server) as client:
        with pytest.raises(LlmError, match="malformed"):
            client.complete(MSGS, temperature=0, max_tokens=5)
    assert server.call_count == 1


@pytest.mark.parametrize("style", ["content_filter", "refusal", "empty"])
def test_refusal_is_flagged_not_raised(server, style):
    server.enqueue(Reply.refusal_reply(style))
    with make_client(server) as client:
        res = client.complete(MSGS, temperature=0, max_tokens=5)
    assert res.refused
    assert res.text == ""
    if style == "content_filter":
        assert res.finish_reason == "content_filter"
    if style == "refusal":
        assert res.refusal == "I can't help with that."


def test_image_parts_reach_the_server(server):
    msg = multimodal_message(
        "user", "What is shown?", [(PNG, "image/png"), "https://example.org/cat.jpg"]
    )
    with make_client(server) as client:
        client.complete([msg], temperature=0, max_tokens=5)
    (req,) = server.requests
    urls = req.image_urls()
    assert urls[0].startswith("data:image/png;base64,")
    assert urls[1] == "https://example.org/cat.jpg"
    parts = req.body["messages"][0]["content"]
    assert parts[-1] == {"type": "text", "text": "What is shown?"}


def test_image_parts_helper_roundtrip():
    import base64

    (part,) = image_parts([(PNG, "image/jpeg")], detail="low")
    url = part["image_url"]["url"]
    assert part["type"] == "image_url" and part["image_url"]["detail"] == "low"
    assert base64.b64decode(url.split(",", 1)[1]) == PNG


def test_idempotency_key_sent_on_every_attempt(server):
    server.enqueue(Reply.error(503), Reply.ok("ok"))
    with make_client(server) as client:
        client.complete(MSGS, temperature=0, max_tokens=5, idempotency_key="judge-42-ab")
    keys = [r.headers.get("idempotency-key") for r in server.requests]
    assert keys == ["judge-42-ab", "judge-42-ab"]


def test_extra_headers_and_azure_style_url(server):
    # Azure-style: deployment path + api-version query string, api-key header.
    cfg = LlmEndpoint(
        base_url=server.base_url + "/deployments/gpt4o?api-version=2024-06-01",
        api_key=None,
        model="gpt4o",
        extra_headers={"api-key": "azure-key"},
    )
    assert cfg.endpoint().endswith("/v1/deployments/gpt4o/chat/completions?api-version=2024-06-01")
    with ChatClient(cfg) as client:
        client.complete(MSGS, temperature=0, max_tokens=5)
    (req,) = server.requests
    assert req.path == "/v1/deployments/gpt4o/chat/completions?api-version=2024-06-01"
    assert req.headers["api-key"] == "azure-key" and "authorization" not in req.headers
    azure = LlmEndpoint(base_url="https://res.openai.azure.com/openai/v1", api_key="k")
    assert azure.headers()["api-key"] == "k" and "Authorization" not in azure.headers()


def test_estimate_cost():
    assert estimate_cost(1000, 500, 0.005, 0.015) == pytest.approx(0.0125)
    assert estimate_cost(0, 0, 1.0, 1.0) == 0.0
    assert estimate_cost(800, 250, 0.01, 0.03) == pytest.approx(0.0155)


# --------------------------------------------------------------------------
# rate limiter (the limiters themselves: tests/annotation/test_rate_limit.py)


def test_client_uses_rate_limiter(server):
    clock = FakeClock()
    rl = LocalRateLimiter(requests_per_minute=60, burst_requests=1, clock=clock, sleep=clock.sleep)
    cfg = LlmEndpoint(base_url=server.base_url, model="m")
    with ChatClient(cfg, rate_limiter=rl) as client:
        client.complete(MSGS, temperature=0, max_tokens=5)
        client.complete(MSGS, temperature=0, max_tokens=5)
    assert clock.now == pytest.approx(1.0)
    assert server.call_count == 2


def test_rate_limit_key_names_the_quota_without_revealing_the_api_key():
    base = LlmEndpoint(base_url="https://api.example.com/v1", api_key="sk-secret", model="m")
    same = LlmEndpoint(base_url="https://api.example.com/v1/chat/completions",
                       api_key="sk-secret", model="m", timeout_s=5, max_retries=0)
    assert base.rate_limit_key() == same.rate_limit_key()  # retry settings share the quota
    others = [LlmEndpoint(base_url="https://api.example.com/v1", api_key="sk-other", model="m"),
              LlmEndpoint(base_url="https://api.example.com/v1", api_key="sk-secret", model="n"),
              LlmEndpoint(base_url="https://other.example.com/v1", api_key="sk-secret",
                          model="m")]
    assert len({base.rate_limit_key(), *(e.rate_limit_key() for e in others)}) == 4
    assert "secret" not in base.rate_limit_key()


def test_default_stand_in_responder_is_deterministic_and_parseable(server):
    from judging.parsers import parse_direct_grade, parse_pairwise, parse_rubric_score

    pair = [text_message("user", "Response A: cat. Response B: dog. Which is better?")]
    with make_client(server) as client:
        first = client.complete(pair, temperature=0, max_tokens=50).text
        second = client.complete(pair, temperature=0, max_tokens=50).text
        rubric = client.complete(
            [text_message("user", "Score it. [RESULT] n")], temperature=0, max_tokens=50
        ).text
        grade = client.complete(
            [text_message("user", "Finish with Rating: X")], temperature=0, max_tokens=50
        ).text
    assert first == second and parse_pairwise(first) in ("A", "B")
    assert parse_rubric_score(rubric) is not None
    assert parse_direct_grade(grade) is not None
