"""HMAC-SHA256 signatures of webhook bodies (pure: no Django).

The signed message is ``"<timestamp>.<body>"`` so a receiver can refuse replays older than
its tolerance; the header carries ``t=<timestamp>,v1=<hex digest>`` (the shape Stripe and
others use, so receivers' existing verifiers apply)."""
from __future__ import annotations

import hashlib
import hmac
import time

HEADER = "X-VLMEval-Signature"
DEFAULT_TOLERANCE = 300  # seconds


def signature(secret: str, timestamp: int, body: bytes) -> str:
    message = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signature_header(secret: str, body: bytes, timestamp: int | None = None) -> str:
    ts = int(time.time()) if timestamp is None else timestamp
    return f"t={ts},v1={signature(secret, ts, body)}"


def signature_valid(secret: str, header: str, body: bytes, *,
                    tolerance: int = DEFAULT_TOLERANCE, now: float | None = None) -> bool:
    """What a receiver runs: the header parses, the timestamp is recent, a digest matches
    (compared in constant time)."""
    fields: dict[str, list[str]] = {}
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        fields.setdefault(key, []).append(value)
    try:
        ts = int(fields["t"][0])
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - ts) > tolerance:
        return False
    expected = signature(secret, ts, body)
    return any(hmac.compare_digest(expected, given) for given in fields.get("v1", []))
