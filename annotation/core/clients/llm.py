"""Minimal client for OpenAI-compatible chat-completions endpoints.

Why this exists: reference generation and LLM/VLM-as-a-judge must run against
hosted APIs (OpenAI, Azure) and self-hosted servers (vLLM, Ollama, llama.cpp)
alike, and must be testable against a loopback fake.  Plain httpx keeps the
wire format explicit and avoids an SDK dependency.  No Django here: callers
build a :class:`LlmEndpoint` from settings.

Why not the official ``openai`` package (it also retries and honours Retry-After):
its backoff is fixed (0.5 s doubling to 8 s) and it follows a Retry-After of up to
two minutes, while a judge's call lease is computed from *our* per-judge
``backoff_max_s`` (``judging.judges.calls.lease_seconds``) — a longer wait than the
lease lets a second worker claim and send the same paid call.  It sleeps with
``time.sleep`` inside the SDK (the loopback tests would wait for real), version 3
runs on ``httpx2`` (a second HTTP stack beside our httpx), and Azure deployment
URLs need its separate ``AzureOpenAI`` client.  Mapping its errors to
:class:`LlmError`, reading attempts from raw responses and routing Azure would add
code, not remove it, so this module keeps its ~30-line retry loop.

Retry policy (timing in :mod:`annotation.core.clients.retry`): 429, 5xx (and 408),
timeouts and connection errors are retried with exponential backoff and full
jitter (``uniform(0, min(max, base * 2**k))``); a ``Retry-After`` header (seconds
or HTTP date) or ``retry-after-ms`` replaces the jittered delay, capped at
``backoff_max_s`` so one call can never hang unboundedly.
``max_retries`` counts *retries*: at most ``max_retries + 1`` attempts.
Other 4xx and malformed 200 bodies raise :class:`LlmError` at once
(retrying a deterministic failure only burns money).

Rate limits: pass a limiter from :func:`annotation.core.rate_limit.rate_limiter`
keyed by :meth:`LlmEndpoint.rate_limit_key` so every process shares one budget;
each attempt (retries included) takes from it.

Refusals (empty content, ``finish_reason == "content_filter"`` or an
OpenAI ``message.refusal``) are returned with ``refused=True`` so callers
can record them as data rather than crash.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from annotation.core.clients.retry import RETRYABLE_STATUS, backoff_delay, retry_after_seconds
from annotation.core.rate_limit import Limiter

__all__ = [
    "ChatClient",
    "ChatResult",
    "LlmEndpoint",
    "LlmError",
    "estimate_cost",
    "image_parts",
    "multimodal_message",
    "text_message",
]

_BODY_EXCERPT = 500


@dataclass(frozen=True)
class LlmEndpoint:
    """Connection + retry settings for one OpenAI-compatible provider.

    ``base_url`` is the API root, e.g. ``https://api.openai.com/v1``,
    ``http://localhost:11434/v1`` (Ollama) or an Azure deployment URL such as
    ``https://res.openai.azure.com/openai/deployments/gpt4o?api-version=2024-06-01``
    (query strings are preserved; ``*.azure.com`` hosts get an ``api-key``
    header instead of ``Authorization: Bearer``).  A URL already ending in
    ``/chat/completions`` is used as is.
    """

    base_url: str
    api_key: str | None = None
    model: str = ""
    timeout_s: float = 60.0
    max_retries: int = 3
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    extra_headers: Mapping[str, str] = field(default_factory=dict)

    def endpoint(self) -> str:
        parts = urlsplit(self.base_url)
        path = parts.path.rstrip("/")
        if not path.endswith("/chat/completions"):
            path += "/chat/completions"
        return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))

    def headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            host = urlsplit(self.base_url).hostname or ""
            if host.endswith(".azure.com"):
                headers["api-key"] = self.api_key
            else:
                headers["Authorization"] = f"Bearer {self.api_key}"
        headers.update(self.extra_headers)
        return headers

    def rate_limit_key(self) -> str:
        """Names the provider quota this endpoint draws on (URL, model, API key), for a shared
        rate limiter; the key itself only enters as part of a hash."""
        identity = "\n".join((self.endpoint(), self.model, self.api_key or ""))
        return "llm:" + hashlib.sha256(identity.encode()).hexdigest()[:24]


class LlmError(RuntimeError):
    """A call failed for good (non-retryable status, or retries exhausted)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body_excerpt: str = "",
        attempts: int = 1,
        retryable: bool = False,
    ) -> None:
        detail = f"{message} (status={status}, attempts={attempts})"
        if body_excerpt:
            detail += f": {body_excerpt}"
        super().__init__(detail)
        self.status = status
        self.body_excerpt = body_excerpt
        self.attempts = attempts
        self.retryable = retryable


@dataclass(frozen=True)
class ChatResult:
    """One completed call.  ``latency_s`` spans all attempts incl. backoff.

    Token counts are 0 when the server omits ``usage`` (some llama.cpp builds).
    ``choices`` holds every choice's text when ``n > 1``; ``text`` is the first.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str
    raw: dict[str, Any]
    latency_s: float
    attempts: int
    refused: bool = False
    refusal: str | None = None
    finish_reason: str | None = None
    choices: tuple[str, ...] = ()

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


# --------------------------------------------------------------------------
# message helpers


def text_message(role: str, text: str) -> dict[str, Any]:
    """A plain ``{"role", "content"}`` message."""
    return {"role": role, "content": text}


ImageInput = str | tuple[bytes, str]


def image_parts(images: Iterable[ImageInput], *, detail: str | None = None) -> list[dict]:
    """Content parts for images given as ``(bytes, mime)`` pairs or URL strings.

    Bytes become base64 data URLs (works offline with vLLM/Ollama); strings
    (``https://…`` or ``data:…``) are passed through untouched.
    """
    parts = []
    for img in images:
        if isinstance(img, str):
            url = img
        else:
            data, mime = img
            url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
        image_url: dict[str, str] = {"url": url}
        if detail:
            image_url["detail"] = detail
        parts.append({"type": "image_url", "image_url": image_url})
    return parts


def multimodal_message(
    role: str, text: str, images: Iterable[ImageInput] = (), *, detail: str | None = None
) -> dict[str, Any]:
    """A message whose content is image parts followed by one text part."""
    content = image_parts(images, detail=detail) + [{"type": "text", "text": text}]
    return {"role": role, "content": content}


def estimate_cost(
    prompt_tokens: int,
    completion_tokens: int,
    price_in_per_1k: float,
    price_out_per_1k: float,
) -> float:
    """Cost in the prices' currency, rounded to 1e-8 to avoid float noise."""
    cost = prompt_tokens / 1000 * price_in_per_1k + completion_tokens / 1000 * price_out_per_1k
    return round(cost, 8)


# --------------------------------------------------------------------------
# client


def _excerpt(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _BODY_EXCERPT else text[:_BODY_EXCERPT] + "…"


def _estimate_prompt_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    chars = 0
    images = 0
    for msg in messages:
        content = msg.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            for part in content:
                if part.get("type") == "text":
                    chars += len(part.get("text", ""))
                else:
                    images += 1
    return chars // 4 + 800 * images


@functools.lru_cache(maxsize=1)
def _shared_ssl_context():
    """Building an SSL context costs ~0.1 s; share one across clients."""
    return httpx.create_ssl_context()


class ChatClient:
    """Calls ``POST {base_url}/chat/completions`` with retries.

    Thread-safe (one pooled ``httpx.Client``); use as a context manager or
    call :meth:`close`.  ``sleep`` and ``rng`` are injectable so tests can
    observe backoff delays without waiting.
    """

    def __init__(
        self,
        config: LlmEndpoint,
        *,
        rate_limiter: Limiter | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        self.config = config
        self.rate_limiter = rate_limiter
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._rng_lock = threading.Lock()
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(
            timeout=httpx.Timeout(config.timeout_s), verify=_shared_ssl_context()
        )

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def backoff_delay(self, retry_index: int, retry_after: float | None = None) -> float:
        """Delay before retry number ``retry_index`` (1-based)."""
        with self._rng_lock:
            return backoff_delay(retry_index, base=self.config.backoff_base_s,
                                 cap=self.config.backoff_max_s, retry_after=retry_after,
                                 rng=self._rng)

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        temperature: float,
        max_tokens: int,
        seed: int | None = None,
        n: int = 1,
        idempotency_key: str | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> ChatResult:
        """Send one chat completion; see module docstring for retry rules."""
        cfg = self.config
        payload: dict[str, Any] = {
            "model": cfg.model,
            "messages": list(messages),
            "temperature": temperature,
            "max_tokens": max_tokens,
            "n": n,
        }
        if seed is not None:
            payload["seed"] = seed
        if extra_body:
            payload.update(extra_body)
        headers = cfg.headers()
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        body = json.dumps(payload).encode("utf-8")
        url = cfg.endpoint()
        token_estimate = _estimate_prompt_tokens(messages) + max_tokens * n

        start = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            if self.rate_limiter is not None:
                self.rate_limiter.acquire(token_estimate)
            retry_after: float | None = None
            try:
                resp = self._http.post(url, content=body, headers=headers)
            except httpx.UnsupportedProtocol as exc:  # bad base_url: retrying cannot help
                raise LlmError(f"bad base_url: {exc}", attempts=attempt) from exc
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                failure = LlmError(
                    f"{type(exc).__name__}: {exc}", attempts=attempt, retryable=True
                )
            else:
                if resp.status_code == 200:
                    return self._parse(resp, attempt, time.monotonic() - start)
                failure = LlmError(
                    "provider returned an error",
                    status=resp.status_code,
                    body_excerpt=_excerpt(resp.text),
                    attempts=attempt,
                    retryable=resp.status_code in RETRYABLE_STATUS,
                )
                retry_after = retry_after_seconds(resp.headers)
            if not failure.retryable or attempt > cfg.max_retries:
                raise failure
            self._sleep(self.backoff_delay(attempt, retry_after))

    def _parse(self, resp: httpx.Response, attempts: int, latency: float) -> ChatResult:
        try:
            data = resp.json()
            choices = data["choices"]
            if not isinstance(choices, list) or not choices:
                raise ValueError("no choices")
            first = choices[0]
        except (ValueError, KeyError, TypeError) as exc:
            raise LlmError(
                f"malformed response body ({exc})",
                status=resp.status_code,
                body_excerpt=_excerpt(resp.text),
                attempts=attempts,
            ) from exc
        texts = []
        for choice in choices:
            message = (choice or {}).get("message") or {}
            content = message.get("content")
            texts.append(content if isinstance(content, str) else "")
        message = first.get("message") or {}
        finish_reason = first.get("finish_reason")
        refusal = message.get("refusal") or None
        text = texts[0]
        refused = bool(refusal) or finish_reason == "content_filter" or not text.strip()
        usage = data.get("usage") or {}
        return ChatResult(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            model=str(data.get("model") or self.config.model),
            raw=data,
            latency_s=latency,
            attempts=attempts,
            refused=refused,
            refusal=refusal,
            finish_reason=finish_reason,
            choices=tuple(texts),
        )
