"""Read something in a thread while this one reads something else: a report's judgments
(seconds of PostgreSQL sorting a million rows before the first arrives) while the metric
cache is read. Python holds the GIL for the rows either way; what overlaps is the waiting.

Only on PostgreSQL outside a transaction: the thread has a connection of its own, which
would not see what an open transaction of this one wrote (and SQLite's shared cache would
lock a table one writes while the other reads). Elsewhere the read happens when asked for.
A read that failed in the thread is done again here, so the thread can change only the time.
"""
from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from django.db import connection, connections

log = logging.getLogger(__name__)
T = TypeVar("T")
M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)


def _one_malloc_arena() -> None:
    """glibc gives each new thread a malloc arena of its own: what the thread read (a
    million judgments' dicts and lists) sat in one heap and the report's other work in
    another, neither reusing the other's freed space (peak RSS 619 MB instead of 586 at 1M
    judgments). Threads made after this share the main arena. Elsewhere (musl, macOS)
    nothing."""
    try:
        ctypes.CDLL("libc.so.6").mallopt(M_ARENA_MAX, 1)
    except (OSError, AttributeError):
        pass


class Meanwhile(Generic[T]):
    """``read()`` started in a thread now; ``result()`` waits for it. Use it as a context
    manager: leaving the block joins the thread, so no thread outlives the report (and the
    report's forked child is only started once this process has one thread again)."""

    def __init__(self, read: Callable[[], T]):
        self._read, self._done, self._thread = read, {}, None
        if connection.vendor == "postgresql" and not connection.in_atomic_block:
            _one_malloc_arena()
            self._thread = threading.Thread(target=self._run, name="report read", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            self._done["value"] = self._read()
        except Exception as exc:  # noqa: BLE001  done again in result(), where it raises
            self._done["error"] = exc
        finally:
            connections.close_all()  # this thread's own

    def drop(self) -> None:
        """Forget what the thread read (``result()`` reads again): before a memory peak of
        the caller's own, such as scoring a metric, the read rows are not held beside it."""
        self._join()
        self._done.clear()

    def result(self) -> T:
        self._join()
        if "value" in self._done:
            return self._done.pop("value")
        if "error" in self._done:
            log.warning("reading in a thread failed (%s); reading here", self._done.pop("error"))
        return self._read()

    def _join(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> Meanwhile[T]:
        return self

    def __exit__(self, *exc) -> None:
        self._join()
