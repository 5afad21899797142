"""Schemathesis fuzzing of the REST API, in process, on the test's own database transaction.

Why in process: the Django WSGI handler called through Werkzeug's client runs in the test's
thread, so it sees rows the test seeded and its writes roll back with the test (no flush, no
live server, ``on_commit`` hooks such as Celery dispatches never fire). Django's own test
client does the same; like it, we keep ``close_old_connections`` off the request signals,
which would otherwise drop the connection that holds the test transaction.

``fuzz_schema`` runs every operation with Hypothesis, deterministically (derandomized, no
example database), and collects every failure instead of stopping at the first, each with
the request that caused it and, for a 5xx, the server-side exception.
"""
from __future__ import annotations

import logging
import os
import socket
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import hypothesis
import schemathesis
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hsettings
from schemathesis.core.failures import FailureGroup
from schemathesis.generation import GenerationMode

# Operations an annotator may use; everything else must refuse them (403, or 404 for a path
# the router does not match).
ANNOTATOR_PATHS = ("/api/my/", "/api/schema/")
REFUSED = {401, 403, 404}


def annotator_may(label: str) -> bool:
    """Whether the operation ``"METHOD /path/"`` is open to annotators."""
    return label.split(" ", 1)[1].startswith(ANNOTATOR_PATHS)


@contextmanager
def in_process_app() -> Iterator[Callable]:
    """The project's WSGI application, safe to call inside a test transaction."""
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    quiet = logging.getLogger("django.request")
    level, quiet.level = quiet.level, logging.CRITICAL  # thousands of expected 4xx lines
    try:
        yield WSGIHandler()
    finally:
        quiet.setLevel(level)
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@contextmanager
def server_exceptions() -> Iterator[list[BaseException]]:
    """Every exception Django turned into a 500 while the block ran (for readable reports)."""
    from django.core.signals import got_request_exception

    seen: list[BaseException] = []

    def _record(sender, request=None, **kwargs):
        import sys

        exc = sys.exc_info()[1]
        if exc is not None:
            seen.append(exc)

    got_request_exception.connect(_record, weak=False)
    try:
        yield seen
    finally:
        got_request_exception.disconnect(_record)


@contextmanager
def loopback_only() -> Iterator[list[Any]]:
    """Refuse (and record) any outbound connection: a fuzzed launch must never reach MTurk or
    an LLM provider. Loopback stays open (the test database lives there)."""
    attempts: list[Any] = []
    real_connect = socket.socket.connect

    def guarded(sock, address):
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and (host.startswith("127.") or host in ("::1", "localhost")
                                      or sock.family == socket.AF_UNIX):
            return real_connect(sock, address)
        attempts.append(address)
        raise ConnectionRefusedError(f"fuzz: outbound connection to {address!r} refused")

    socket.socket.connect = guarded
    try:
        yield attempts
    finally:
        socket.socket.connect = real_connect


@contextmanager
def rolled_back() -> Iterator[None]:
    """Undo one request's writes: every request sees the same seeded world (deterministic
    runs), and a database error in one request cannot poison the next (as in production,
    where each request has its own transaction)."""
    from django.db import transaction

    savepoint = transaction.savepoint()
    try:
        yield
    finally:
        transaction.savepoint_rollback(savepoint)
        transaction.set_rollback(False)  # back at a clean point, even after a failed query


def load_schema(document: dict):
    """A Schemathesis schema from the OpenAPI document the app serves at /api/schema/."""
    return schemathesis.openapi.from_dict(document)


@dataclass
class FuzzReport:
    operations: list[str] = field(default_factory=list)
    calls: int = 0
    failures: dict[str, str] = field(default_factory=dict)  # signature → details
    unsatisfiable: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # per operation
    statuses: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))

    def add(self, signature: str, details: str) -> None:
        self.failures.setdefault(signature, details)

    def summary(self) -> str:
        return "\n\n".join(f"== {sig}\n{details}" for sig, details in self.failures.items())


def _place(exc: BaseException) -> str:
    """Where in our code (not a library's) the exception passed last."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = next((f for f in reversed(frames) if "site-packages" not in f.filename), None)
    return f" at {os.path.relpath(where.filename)}:{where.lineno}" if where else ""


def _exception_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}{_place(exc)}"


def fuzz_schema(schema, *, app, role: str, headers: dict[str, str],
                examples: Callable[[str], int],
                path_values: Callable[[str], dict[str, str] | None] = lambda path: None,
                checks=("not_a_server_error",)) -> FuzzReport:
    """Fuzz every operation of ``schema`` as one role; return what failed, never raise.

    ``examples(label)`` is the number of requests per generation mode and path variant for
    the operation labelled ``"METHOD /path/"``; ``path_values(path)`` gives real objects'
    path parameters, fuzzed as a second variant besides generated (mostly unknown) ones.
    """
    from schemathesis.checks import CHECKS, load_all_checks

    load_all_checks()
    chosen = CHECKS.get_by_names(list(checks))
    report = FuzzReport()
    for result in schema.get_all_operations():
        operation = result.ok()
        label = f"{operation.method.upper()} {operation.path}"
        report.operations.append(label)
        started = time.monotonic()
        fixed = path_values(operation.path)
        runs = [(mode, None) for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)]
        if fixed:
            runs.append((GenerationMode.POSITIVE, fixed))  # reach existing objects, not 404s
            if len(operation.query) or len(operation.body):
                runs.append((GenerationMode.NEGATIVE, fixed))  # something left to make invalid
        for mode, path_parameters in runs:
            strategy = operation.as_strategy(generation_mode=mode,
                                             path_parameters=path_parameters)
            _run(strategy, report=report, label=label, role=role, app=app, headers=headers,
                 checks=chosen, max_examples=examples(label))
        report.seconds[label] = time.monotonic() - started
    return report


def _run(strategy, *, report: FuzzReport, label: str, role: str, app, headers, checks,
         max_examples: int) -> None:
    restricted = role == "annotator" and not annotator_may(label)

    @hsettings(max_examples=max_examples, derandomize=True, database=None, deadline=None,
               phases=[Phase.explicit, Phase.generate], print_blob=False,
               suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def one(case):
        with server_exceptions() as raised, rolled_back():
            response = case.call(app=app, headers=headers)
        report.calls += 1
        report.statuses[label][response.status_code] += 1
        curl = case.as_curl_command(headers=headers)
        if response.status_code >= 500:
            causes = [_exception_line(e) for e in raised] or [response.text[:200]]
            kinds = ", ".join(f"{type(e).__name__}{_place(e)}" for e in raised)
            report.add(f"{role} {label} → {response.status_code} {kinds}",
                       f"{'; '.join(causes)}\n{curl}")
            return
        if restricted and response.status_code not in REFUSED:
            report.add(f"{role} {label} → {response.status_code} (must be refused)", curl)
            return
        try:
            case.validate_response(response, checks=checks, headers=headers)
        except FailureGroup as exc:
            report.add(f"{role} {label} → {exc.exceptions[0].title}", str(exc)[:1500])

    try:
        one()
    except hypothesis.errors.Unsatisfiable:
        report.unsatisfiable.append(label)  # e.g. nothing left to make invalid: all fixed
