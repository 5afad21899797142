"""One gate for expensive background jobs: report builds, metric runs and judge runs are
admitted here before they are queued.

Why: eight report requests with 3,000 bootstrap rounds each used to start eight builds at once,
each a thread in a web worker. Now a start calls ``admit`` inside the transaction that records
the job's row:

- an identical request (same owner, kind and parameters' fingerprint) while one is queued or
  running gets that job back instead of a second one;
- past ``JOBS_MAX_PER_USER`` queued or running jobs of this owner, or ``JOBS_MAX_GLOBAL`` of
  everyone's, it raises ``JobsBusy``: the API answers 429 with ``Retry-After``
  (``annotation.core.rest.exception_handler``), pages show its message.

The counts come from the jobs' own rows (each app registers, in its ``AppConfig.ready``, a
source listing its queued and running rows), so no second record has to be kept in step with
them and this module names no later app. The check and the new row's insert share one lock held
until commit (a PostgreSQL advisory lock; SQLite runs write transactions one at a time), so 20
parallel requests cannot all see room for one more.

Work that runs in its caller's process and has no row of its own (a study dataset's export or
import, a backup or restore) holds a slot while it runs with ``occupying``: a PostgreSQL session
advisory lock keyed by kind and parameters, seen by every process and gone with the process.

A queued job whose process was killed outright (SIGKILL) stays "running" and keeps its slot
until it is cancelled or failed (a graceful exit records the failure itself: ``core.background``).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction

_ADMISSION_LOCK = 0x4A4F4253  # "JOBS": one key for every kind, so the global count holds
_HELD = 0x48454C44  # "HELD": the namespace of the session locks ``occupying`` takes


@dataclass(frozen=True)
class ActiveJob:
    """A queued or running job as a source reports it."""

    kind: str
    owner: str | None  # None: counted only against the global cap
    job: object  # the job's own row, handed back to an identical request
    fingerprint: Callable[[], str]  # called only when kind and owner match (it may query)


class JobsBusy(Exception):
    """Refused: too many jobs queued or running. ``retry_after`` is in seconds."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.message, self.retry_after = message, retry_after


Source = Callable[[], Iterable[ActiveJob]]
_sources: dict[str, Source] = {}


def register(name: str, source: Source) -> None:
    """Count ``source()``'s jobs (queued and running rows) in every admission."""
    _sources[name] = source


def fingerprint(*parts) -> str:
    """What makes two requests the same job: their parameters, in a stable form."""
    text = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def active_jobs() -> list[ActiveJob]:
    return [job for source in _sources.values() for job in source()]


def admit(kind: str, *, owner: str, fingerprint: str, replacing=None):
    """Let a job in, inside the transaction that records it. Returns the identical queued or
    running job (the caller hands it back instead of starting another) or None (the caller
    records and queues its job before committing). ``replacing`` is a row being queued again
    (a resumed run): it neither counts nor matches. Raises ``JobsBusy`` past a cap."""
    active = [j for j in _locked_active_jobs() if replacing is None or j.job != replacing]
    for j in active:
        if j.kind == kind and j.owner == owner and j.fingerprint() == fingerprint:
            return j.job
    _refuse_past_caps(active, owner)
    return None


@contextmanager
def occupying(kind: str, *, fingerprint: str):
    """Hold a slot of the global cap while the caller's own process does this work (it has no
    row to count); ``JobsBusy`` past the cap or while an identical one runs anywhere.
    SQLite: the cap only (nothing there is seen by another process)."""
    from .sql import session_unlock, try_session_lock

    key = _held_key(kind, fingerprint)
    with transaction.atomic():
        _refuse_past_caps(_locked_active_jobs(), None)
        if not try_session_lock(_HELD, key):
            raise JobsBusy(f"Not started: the same {kind.replace('_', ' ')} is already "
                           "running.", settings.JOBS_RETRY_AFTER)
    try:
        yield
    finally:
        session_unlock(_HELD, key)


def _held_key(kind: str, job_fingerprint: str) -> int:
    return int(fingerprint(kind, job_fingerprint)[:8], 16) & 0x7FFFFFFF  # a positive int4


def _held_jobs():
    from .sql import session_locks_held

    return [ActiveJob("held", None, key, str) for key in session_locks_held(_HELD)]


register("held", _held_jobs)


def _locked_active_jobs() -> list[ActiveJob]:
    """Every queued or running job, under the admission lock (held until commit)."""
    if not connection.in_atomic_block:
        raise RuntimeError("admit() belongs inside the transaction that records the job")
    from .sql import advisory_xact_lock  # loads the models: not at import (rest.py imports us)

    advisory_xact_lock(_ADMISSION_LOCK)
    return active_jobs()


def _refuse_past_caps(active: list[ActiveJob], owner: str | None) -> None:
    per_user, overall = settings.JOBS_MAX_PER_USER, settings.JOBS_MAX_GLOBAL
    mine = sum(1 for j in active if owner is not None and j.owner == owner)
    if mine >= per_user:
        raise JobsBusy(f"Not started: you already have {mine} jobs queued or running, the most "
                       f"one person may have at once ({per_user}). Try again when one has "
                       "finished.", settings.JOBS_RETRY_AFTER)
    if len(active) >= overall:
        raise JobsBusy(f"Not started: the server is busy with {len(active)} jobs, its limit "
                       f"({overall}). Try again in a few minutes.", settings.JOBS_RETRY_AFTER)
