"""A real loopback HTTP server speaking the OpenAI chat-completions protocol.

Why: the LLM client, judge pipeline and demo must be exercised over actual
sockets (timeouts, dropped connections, headers, Retry-After) without network
access or API keys.  Behaviour is scripted per request:

* a FIFO queue of :class:`Reply` objects (``server.enqueue(...)``), consumed first;
* else a ``responder(request_json) -> Reply | str`` callable;
* else :func:`default_responder`, a deterministic STAND-IN judge that emits
  judge-shaped text chosen from a hash of the prompt.  Its verdicts carry no
  information about answer quality; they only exercise parsing and plumbing.

Every request (path, lower-cased headers, parsed JSON body) is recorded.

Standalone: ``python tests/support/fake_openai.py --port 8765 --latency-ms 0``.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOpenAIServer", "RecordedRequest", "Reply", "default_responder", "prompt_text"]

STAND_IN_MODEL = "fake-judge-stand-in"


@dataclass
class Reply:
    """What the server does for one request.  Build with the classmethods."""

    kind: str = "text"  # text | error | malformed | drop
    content: str | None = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    finish_reason: str = "stop"
    refusal: str | None = None
    body: str | None = None  # raw body for error/malformed replies
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    include_usage: bool = True

    @classmethod
    def ok(cls, text: str, **kw: Any) -> Reply:
        return cls(kind="text", content=text, **kw)

    @classmethod
    def slow(cls, text: str, delay_s: float, **kw: Any) -> Reply:
        return cls(kind="text", content=text, delay_s=delay_s, **kw)

    @classmethod
    def refusal_reply(cls, style: str = "content_filter", **kw: Any) -> Reply:
        """``content_filter``: empty content + finish_reason content_filter;
        ``refusal``: OpenAI ``message.refusal`` with null content;
        ``empty``: empty content, finish_reason stop."""
        if style == "content_filter":
            return cls(kind="text", content="", finish_reason="content_filter", **kw)
        if style == "refusal":
            return cls(kind="text", content=None, refusal="I can't help with that.", **kw)
        if style == "empty":
            return cls(kind="text", content="", **kw)
        raise ValueError(style)

    @classmethod
    def error(
        cls,
        status: int,
        *,
        retry_after: float | str | None = None,
        body: str | None = None,
        **kw: Any,
    ) -> Reply:
        headers = dict(kw.pop("headers", {}))
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        if body is None:
            body = json.dumps(
                {"error": {"message": f"fake error {status}", "type": "fake_error", "code": status}}
            )
        return cls(kind="error", status=status, headers=headers, body=body, **kw)

    @classmethod
    def malformed(cls, body: str = '{"choices": [', **kw: Any) -> Reply:
        return cls(kind="malformed", body=body, **kw)

    @classmethod
    def drop(cls, **kw: Any) -> Reply:
        """Close the connection without answering (client sees a protocol error)."""
        return cls(kind="drop", **kw)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or None if the body was not JSON
    raw: bytes
    received_at: float

    def image_urls(self) -> list[str]:
        """All ``image_url`` URLs across the request's messages."""
        urls = []
        for msg in (self.body or {}).get("messages", []):
            content = msg.get("content")
            if isinstance(content, list):
                urls += [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]
        return urls


def prompt_text(request_json: dict) -> str:
    """Concatenate all text in the request's messages (images ignored)."""
    chunks = []
    for msg in request_json.get("messages", []) or []:
        content = msg.get("content")
        if isinstance(content, str):
            chunks.append(content)
        elif isinstance(content, list):
            chunks += [p.get("text", "") for p in content if p.get("type") == "text"]
    return "\n".join(chunks)


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def default_responder(request_json: dict) -> Reply:
    """STAND-IN judge: deterministic, judge-shaped output from a prompt hash.

    Recognises (by keywords, checked in this order) Prometheus rubric grading
    ("[RESULT]"), ConvBench rating extraction ("Final Rating"), VisIT-Bench
    answer extraction ("Final Answer"), pairwise judging ("Response A" and
    "Response B") and ConvBench direct grading ("Rating"); anything else gets a canned reference-style answer.
    """
    text = prompt_text(request_json)
    h = _digest(text)
    lowered = text.lower()
    if "[result]" in lowered:
        score = 1 + h % 5
        return Reply.ok(
            f"Feedback: (stand-in) The response meets the rubric at level {score}. [RESULT] {score}"
        )
    if "final rating" in lowered:
        return Reply.ok(f"Final Rating: {1 + h % 10}")
    if "final answer" in lowered:
        return Reply.ok(f"Final Answer: {'AB'[h % 2]}")
    if "response a" in lowered and "response b" in lowered:
        winner, loser = ("A", "B") if h % 2 == 0 else ("B", "A")
        return Reply.ok(
            f"(Stand-in judge; verdict derived from a prompt hash.)\n"
            f"Step 1: Response {winner} addresses the instruction more specifically.\n"
            f"Step 2: Response {loser} is less detailed.\n"
            f"Overall, Response {winner} is better."
        )
    if "rating" in lowered:
        return Reply.ok(
            f"(Stand-in grader.) The response is compared to the reference.\nRating: {h % 11}"
        )
    return Reply.ok(f"(Stand-in answer {h % 10_000:04d}) The image shows the requested content.")


def _approx_tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes; avoid 40 ms stalls
    server: _Server

    def log_message(self, fmt: str, *args: Any) -> None:  # quiet by default
        if self.server.owner.verbose:
            super().log_message(fmt, *args)

    def _send(
        self,
        status: int,
        body: bytes,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # client gave up (e.g. timed out)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            body = {"object": "list", "data": [{"id": STAND_IN_MODEL, "object": "model"}]}
            self._send(200, json.dumps(body).encode())
        else:
            self._send(404, b'{"error": {"message": "not found"}}')

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        owner = self.server.owner
        owner._record(
            RecordedRequest(
                method="POST",
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                raw=raw,
                received_at=time.time(),
            )
        )
        if not self.path.split("?")[0].rstrip("/").endswith("/chat/completions"):
            self._send(404, b'{"error": {"message": "not found"}}')
            return
        if not isinstance(body, dict):
            self._send(400, b'{"error": {"message": "body must be a JSON object"}}')
            return
        reply = owner._next_reply(body)
        delay = owner.latency_s + reply.delay_s
        if delay and owner._stopping.wait(delay):
            self.close_connection = True
            return
        if reply.kind == "drop":
            self.close_connection = True
            return
        if reply.kind in ("error", "malformed"):
            self._send(reply.status, (reply.body or "").encode(), reply.headers)
            return
        self._send(200, json.dumps(owner._completion(body, reply)).encode(), reply.headers)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: FakeOpenAIServer


class FakeOpenAIServer:
    """Loopback OpenAI-compatible server in a background thread.

    >>> with FakeOpenAIServer() as srv:
    ...     srv.enqueue(Reply.error(429, retry_after=0), Reply.ok("hi"))
    ...     url = srv.base_url  # http://127.0.0.1:<port>/v1
    """

    def __init__(
        self,
        responder: Callable[[dict], Reply | str] | None = None,
        *,
        latency_ms: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        model: str = STAND_IN_MODEL,
        verbose: bool = False,
    ) -> None:
        self.responder = responder
        self.latency_s = latency_ms / 1000.0
        self.model = model
        self.verbose = verbose
        self._host, self._port = host, port
        self._queue: collections.deque[Reply] = collections.deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0

    # lifecycle -----------------------------------------------------------
    def start(self) -> FakeOpenAIServer:
        self._stopping.clear()
        self._httpd = _Server((self._host, self._port), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="fake-openai",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._stopping.set()  # wakes handlers sleeping on a delay
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """OpenAI-style API root, e.g. ``http://127.0.0.1:54321/v1``."""
        return f"http://{self._host}:{self.port}/v1"

    # scripting & inspection ---------------------------------------------
    def enqueue(self, *replies: Reply | str) -> None:
        with self._lock:
            self._queue.extend(Reply.ok(r) if isinstance(r, str) else r for r in replies)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._requests.clear()

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def call_count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    # internals -----------------------------------------------------------
    def _record(self, req: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(req)

    def _next_reply(self, body: dict) -> Reply:
        with self._lock:
            queued = self._queue.popleft() if self._queue else None
        if queued is not None:
            return queued
        reply = (self.responder or default_responder)(body)
        return Reply.ok(reply) if isinstance(reply, str) else reply

    def _completion(self, body: dict, reply: Reply) -> dict:
        with self._lock:
            self._counter += 1
            serial = self._counter
        n = max(1, int(body.get("n") or 1))
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.refusal is not None:
            message["refusal"] = reply.refusal
        choices = [
            {
                "index": i,
                "message": dict(message),
                "logprobs": None,
                "finish_reason": reply.finish_reason,
            }
            for i in range(n)
        ]
        data: dict[str, Any] = {
            "id": f"chatcmpl-fake-{serial}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "system_fingerprint": "fake",
            "choices": choices,
        }
        if reply.include_usage:
            prompt = reply.prompt_tokens
            if prompt is None:
                images = sum(len(_images(m)) for m in body.get("messages", []))
                prompt = _approx_tokens(prompt_text(body)) + 85 * images
            completion = reply.completion_tokens
            if completion is None:
                completion = n * _approx_tokens(reply.content or "")
            data["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        return data


def _images(message: dict) -> list:
    content = message.get("content")
    return [p for p in content if p.get("type") == "image_url"] if isinstance(content, list) else []


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake OpenAI-compatible server (stand-in judge)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    server = FakeOpenAIServer(
        latency_ms=args.latency_ms, host=args.host, port=args.port, verbose=args.verbose
    ).start()
    print(f"fake OpenAI server (STAND-IN judge) listening on {server.base_url}", flush=True)
    signal.signal(signal.SIGTERM, _interrupt)  # `kill` stops it cleanly, like Ctrl-C
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
