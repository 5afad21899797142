"""Fuzzing every URL's query and form parameters (pages, admin, downloads, API), in process.

The pieces ``tests/test_url_fuzz.py`` puts together:

- ``HOSTILE``: the fixed list of hostile values, as raw bytes (they are percent-encoded into
  the query string or the form body as they are, so a NUL, a CR/LF, a lone surrogate's
  UTF-8-style bytes or bytes that are not UTF-8 at all reach Django exactly as an outside
  client could send them); ``hostile_values()``: the Hypothesis strategy for more.
- ``read_names()``: which query/form/file parameter names the code read while a block ran
  (it records ``get``/``getlist``/``[]``/``in`` on Django's ``QueryDict`` and
  ``MultiValueDict``), so each view is fuzzed on the parameters it really reads, found by
  running it, not from a list kept by hand.
- ``form_values(html)``: a page's POST forms' current values (inputs, selects, textareas),
  a valid baseline for posting back with one field made hostile.
- ``Prober``: sends one request as one role on the test's own transaction (each request
  rolled back to a savepoint), and records every answer ≥ 500 and every record logged at
  ERROR or above with the request that caused it and where the exception passed last in our
  code.
"""
from __future__ import annotations

import logging
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from http.cookies import SimpleCookie
from urllib.parse import quote_from_bytes

from hypothesis import strategies as st

from tests.support.api_fuzz import _exception_line, rolled_back, server_exceptions

# label → raw value. Every one must be answered below 500 by every URL, as every role.
HOSTILE: dict[str, bytes] = {
    "nul": b"\x00",
    "nul inside": b"a\x00b",
    "crlf header injection": b"x\r\nSet-Cookie: hijack=1",
    "lone cr": b"\r",
    "lone surrogate (UTF-8-style)": b"\xed\xa0\x80",
    "not utf-8": b"\xff\xfe\xc0",
    "10k chars": b"a" * 10_000,
    "whitespace": b" \t\n\x0b\x0c ",
    "empty": b"",
    "beyond 64-bit": b"18446744073709551616",
    "huge int": b"9" * 400,
    "beyond int digits": b"1" * 5_000,  # over Python's int() digit limit
    "negative": b"-9223372036854775809",
    "float": b"1e309",
    "path traversal": b"../../../../etc/passwd",
    "quote and backslash": b'"\\\';--',
    "markup": b"<script>alert(1)</script>",
    "emoji and bidi": "\U0001f600\u202e".encode(),
}
# One parameter at a time (the others valid): the values that take different paths.
SWEEP = ("nul", "crlf header injection", "lone surrogate (UTF-8-style)", "not utf-8",
         "10k chars", "whitespace", "empty", "beyond 64-bit", "huge int", "beyond int digits",
         "negative", "path traversal")
# In a path segment (str/path converters, DRF lookups): what a resolver and a lookup may see.
IN_PATH = ("nul inside", "crlf header injection", "lone surrogate (UTF-8-style)", "not utf-8",
           "10k chars", "path traversal", "whitespace")
# Roles besides the one that sweeps, and Django's generated admin pages: a few that break most.
FEW = ("nul", "crlf header injection", "not utf-8", "10k chars", "beyond 64-bit")
# Refused roles: their refusal must come before any parsing; one value holding everything.
KITCHEN_SINK = b"\x00\r\n\xed\xa0\x80\xff-1 ../" + b"9" * 400 + b"a" * 10_000


def encode_pairs(pairs: Iterable[tuple[str, bytes]]) -> str:
    """``application/x-www-form-urlencoded`` of raw byte values (nothing re-encoded)."""
    return "&".join(f"{quote_from_bytes(name.encode())}={quote_from_bytes(value)}"
                    for name, value in pairs)


def as_bytes(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")


def multipart(pairs: Iterable[tuple[str, bytes]],
              files: dict[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    """A multipart/form-data body of raw byte values and files, and its content type."""
    boundary = uuid.uuid4().hex
    parts = []
    for name, value in pairs:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
                     .encode() + value + b"\r\n")
    for name, (filename, content) in files.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
                     f'filename="{filename}"\r\nContent-Type: application/octet-stream\r\n\r\n'
                     .encode() + content + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def hostile_values():
    """Hypothesis: any text (control characters, lone surrogates, every plane), raw bytes,
    integers far beyond any column, and the fixed list."""
    return st.one_of(
        st.text(alphabet=st.one_of(st.characters(), st.characters(categories=["Cs", "Cc"])),
                max_size=40).map(as_bytes),
        st.binary(max_size=40),
        st.integers(min_value=-(2**130), max_value=2**130).map(lambda n: str(n).encode()),
        st.sampled_from(list(HOSTILE.values())),
    )


def nested_json(depth: int, *, kind: str = "list") -> str:
    """``[[[…]]]`` or ``{"a": {"a": …}}`` ``depth`` levels deep."""
    if kind == "list":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "null" + "}" * depth


# ------------------------------------------------------------------ which names code reads
@dataclass
class ReadNames:
    query: set[str] = field(default_factory=set)  # QueryDict: request.GET / request.POST
    files: set[str] = field(default_factory=set)  # MultiValueDict: request.FILES


@contextmanager
def read_names() -> Iterator[ReadNames]:
    """Record the parameter names read from request.GET/POST/FILES while the block runs."""
    from django.http import QueryDict
    from django.utils.datastructures import MultiValueDict

    seen = ReadNames()
    names = ("get", "getlist", "__getitem__", "__contains__")
    own = {name: MultiValueDict.__dict__.get(name) for name in names}  # None: dict's

    inner = {"django.utils.datastructures", "django.http.request"}

    def recording(method):
        def wrapper(self, key, *args, **kwargs):
            # A name asked for by code, not by items()/copy()/urlencode() walking them all,
            # nor the URL resolver's own MultiValueDict.
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if isinstance(key, str) and caller not in inner and not caller.startswith(
                    "django.urls"):
                (seen.query if isinstance(self, QueryDict) else seen.files).add(key)
            return method(self, key, *args, **kwargs)
        return wrapper

    for name in names:
        setattr(MultiValueDict, name, recording(own[name] or getattr(dict, name)))
    try:
        yield seen
    finally:
        for name, method in own.items():
            if method is None:
                delattr(MultiValueDict, name)
            else:
                setattr(MultiValueDict, name, method)


# ------------------------------------------------------------------ a page's forms
class _Forms(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.forms: list[dict] = []
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.forms.append({"method": (a.get("method") or "get").lower(),
                               "action": a.get("action") or "", "values": [], "files": set()})
            return
        if not self.forms:
            return
        values, name = self.forms[-1]["values"], a.get("name")
        if tag == "input" and name:
            kind = (a.get("type") or "text").lower()
            if kind == "file":
                self.forms[-1]["files"].add(name)
            elif kind in ("checkbox", "radio"):
                if "checked" in a:
                    values.append((name, a.get("value", "on")))
            elif kind not in ("submit", "button", "image", "reset"):
                values.append((name, a.get("value") or ""))
        elif tag == "select" and name:
            self._select = name
        elif tag == "option" and self._select and "selected" in a:
            values.append((self._select, a.get("value") or ""))
        elif tag == "textarea" and name:
            self._textarea = name
            values.append((name, ""))

    def handle_endtag(self, tag):
        if tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None

    def handle_data(self, data):
        if self._textarea and self.forms and self.forms[-1]["values"]:
            name, text = self.forms[-1]["values"][-1]
            self.forms[-1]["values"][-1] = (name, text + data.lstrip("\n"))


def form_values(html: str) -> list[dict]:
    """The POST forms of a page: ``{"action", "values": [(name, value)], "files": {names}}``,
    values as a browser would send them unchanged (no csrf token: the test client skips it)."""
    parser = _Forms()
    parser.feed(html)
    return [{**f, "values": [(n, v) for n, v in f["values"] if n != "csrfmiddlewaretoken"]}
            for f in parser.forms if f["method"] == "post"]


# ------------------------------------------------------------------ sending and recording
@contextmanager
def quiet_4xx_logs() -> Iterator[None]:
    """Thousands of expected "Bad Request"/"Not Found" warnings: keep only ERROR and up."""
    loggers = [logging.getLogger(name) for name in ("django.request", "django.security")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


class _ErrorLog(logging.Handler):
    """Records logged at ERROR and up, except Django's "django.security" reports: Django
    answers a SuspiciousOperation (e.g. the admin's ``_to_field=x``) with a 400 and logs it
    there at ERROR by design."""

    def __init__(self):
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        if not record.name.startswith("django.security"):
            self.records.append(record)


@dataclass
class Prober:
    """One logged-in client per role; ``send`` records failures instead of raising."""

    clients: dict  # role → django.test.Client (logged in, or anonymous)
    failures: dict[str, str] = field(default_factory=dict)  # signature → details
    statuses: Counter = field(default_factory=Counter)  # per status class: 200, 300, …
    calls: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    _cookies: dict = field(default_factory=dict)

    def __post_init__(self):
        from django.conf import settings

        name = settings.SESSION_COOKIE_NAME
        self._cookies = {role: (c.cookies[name].value if name in c.cookies else None)
                         for role, c in self.clients.items()}

    def send(self, role: str, method: str, path: str, *, query: str = "",
             body: bytes | str | None = None, content_type: str | None = None,
             label: str = "", where: str = ""):
        """One request, rolled back; returns the response and records it if it failed."""
        from django.conf import settings

        client = self.clients[role]
        session = self._cookies[role]  # every request as a fresh tab of the same session
        client.cookies = SimpleCookie({settings.SESSION_COOKIE_NAME: session} if session else {})
        url = f"{path}?{query}" if query else path
        log = _ErrorLog()
        root = logging.getLogger()
        root.addHandler(log)
        started = time.monotonic()
        try:
            with server_exceptions() as raised, rolled_back():
                if method == "GET":
                    response = client.get(url)
                else:
                    response = client.generic(method, url, body or b"",
                                              content_type=content_type or
                                              "application/x-www-form-urlencoded")
        finally:
            root.removeHandler(log)
            self.seconds[where or path] += time.monotonic() - started
        self.calls += 1
        self.statuses[response.status_code // 100 * 100] += 1
        if response.status_code >= 500 or raised or log.records:
            causes = ([_exception_line(e) for e in raised]
                      + [f"logged {r.levelname} {r.name}: {r.getMessage()[:150]}"
                         for r in log.records if not r.exc_info or not raised])
            shown = body if isinstance(body, str) else (body or b"")[:300]
            request = f"{method} {url[:300]}" + (f"\n  body: {shown!r}" if body else "")
            kinds = ", ".join(sorted({c.split(":", 1)[0] for c in causes})) or "no exception"
            self.failures.setdefault(
                f"{where or path} [{label}] → {response.status_code} {kinds}",
                f"as {role}: {request}\n  " + "\n  ".join(causes or [response.content[:200]]))
        return response

    def summary(self) -> str:
        return "\n\n".join(f"== {sig}\n{details}" for sig, details in self.failures.items())

