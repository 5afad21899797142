"""Prolific's hook signatures (pure: no Django).

Prolific signs each hook request: ``X-Prolific-Request-Signature`` is the base64 of the
HMAC-SHA256, under the workspace's hook secret, of the ``X-Prolific-Request-Timestamp``
header (UNIX seconds) followed by the raw body. A receiver refuses a stale timestamp (a
replayed request) and compares digests in constant time (a forged one).
"""
import base64
import hashlib
import hmac
import time

SIGNATURE_HEADER = "X-Prolific-Request-Signature"
TIMESTAMP_HEADER = "X-Prolific-Request-Timestamp"
EVENT_ID_HEADER = "X-Event-ID"
TOLERANCE_S = 300


def sign(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def verify(secret: str, *, timestamp: str, signature: str, body: bytes,
           tolerance: int = TOLERANCE_S, now: float | None = None) -> str:
    """"" when the request is authentic and fresh, else why it is refused."""
    if not secret:
        return "no hook secret is configured"
    try:
        sent = int(timestamp)
    except (TypeError, ValueError):
        return "missing or malformed timestamp"
    if abs((time.time() if now is None else now) - sent) > tolerance:
        return "timestamp outside the accepted window"
    if not hmac.compare_digest(sign(secret, timestamp, body).encode(), (signature or "").encode()):
        return "signature does not match"
    return ""
