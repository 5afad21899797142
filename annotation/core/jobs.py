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

A job whose process was killed outright (SIGKILL) stays "running" and keeps its slot until it is
cancelled or failed (a graceful exit records the failure itself: ``core.background``).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.conf import settings
from django.db import connection

_ADMISSION_LOCK = 0x4A4F4253  # "JOBS": one key for every kind, so the global count holds


@dataclass(frozen=True)
class ActiveJob:
    """A queued or running job as a source reports it."""

    kind: str
    owner: str
    job: object  # the job's own row, handed back to an identical request
    fingerprint: Callable[[], str]  # called only when kind and owner match (it may query)


class JobsBusy(Exception):
    """Refused: too many jobs queued or running. ``retry_after`` is in seconds."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.message, self.retry_after = message, retry_after


Source = Callable[[], Iterable[ActiveJob]]
_sources: dict[str, Source] = {}


def register(kind: str, source: Source) -> None:
    """Count ``source()``'s jobs (this kind's queued and running rows) in every admission."""
    _sources[kind] = source


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
    if not connection.in_atomic_block:
        raise RuntimeError("admit() belongs inside the transaction that records the job")
    from .sql import advisory_xact_lock  # loads the models: not at import (rest.py imports us)

    advisory_xact_lock(_ADMISSION_LOCK)
    active = [j for j in active_jobs() if replacing is None or j.job != replacing]
    for j in active:
        if j.kind == kind and j.owner == owner and j.fingerprint() == fingerprint:
            return j.job
    per_user, overall = settings.JOBS_MAX_PER_USER, settings.JOBS_MAX_GLOBAL
    mine = sum(1 for j in active if j.owner == owner)
    if mine >= per_user:
        raise JobsBusy(f"Not started: you already have {mine} jobs queued or running, the most "
                       f"one person may have at once ({per_user}). Try again when one has "
                       "finished.", settings.JOBS_RETRY_AFTER)
    if len(active) >= overall:
        raise JobsBusy(f"Not started: the server is busy with {len(active)} jobs, its limit "
                       f"({overall}). Try again in a few minutes.", settings.JOBS_RETRY_AFTER)
    return None
