"""Boards refreshed behind the reader's back, and how fresh the board a reader got is.

While votes arrive every second, a board keyed on its newest judgment is stale at almost every
view; recomputing it in the request (seconds at a million judgments) made nearly every view
the slow first one. ``judging.rating_cache`` instead serves an expensive entry that is only a
little behind (``LEADERBOARD_STALE_SECONDS``, ``LEADERBOARD_STALE_SHARE``) and asks here for
one refresh in the background: a thread of this process (``annotation.core.background``, which
closes its connections), one per entry across every process (a cache lock). The refresh runs
with ``refreshing()`` set: an entry it is built from that is due too is recomputed in it
(replacing the old one only when done, so other views keep reading that), or, when another
refresh is computing it, awaited; one refreshed moments ago is taken as it is. Each entry is
then computed once per refresh period however many entries are built on it, and what is built
on an entry behind keeps that entry's stamp and time (``computing_from``), so it says how far
behind it really is.

``watching()`` collects, for one view, how far behind the entries it was served are, so the
page (and the downloads' headers) can say "as of N judgments / T s ago".
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from django.core.cache import cache

from annotation.core import background

log = logging.getLogger(__name__)

_local = threading.local()


@dataclass
class Freshness:
    """How far behind the served entries are: the judgments that arrived after the oldest of
    them was computed and the seconds since (0 and 0 when every entry was current)."""

    judgments_behind: int = 0
    seconds_behind: float = 0.0
    # what this view's entries read of the judgments (newest per scope, how many after a
    # stamp): asked once per view, not once per entry (``view_memo``)
    reads: dict = field(default_factory=dict)

    def note(self, judgments: int, seconds: float) -> None:
        self.judgments_behind = max(self.judgments_behind, judgments)
        self.seconds_behind = max(self.seconds_behind, seconds)

    @property
    def current(self) -> bool:
        return self.judgments_behind == 0

    def headers(self) -> dict[str, str]:
        """What a download says of it (a CSV or JSON file has no room for a banner)."""
        return {"X-Board-Judgments-Behind": str(self.judgments_behind),
                "X-Board-Seconds-Behind": f"{self.seconds_behind:.0f}"}


_watching: contextvars.ContextVar[Freshness | None] = contextvars.ContextVar(
    "board_freshness", default=None)


@contextlib.contextmanager
def watching() -> Iterator[Freshness]:
    """Within it, every entry served records how far behind it is in the yielded object."""
    seen = Freshness()
    token = _watching.set(seen)
    try:
        yield seen
    finally:
        _watching.reset(token)


def once_per_view(key: tuple, read: Callable[[], object]) -> object:
    """``read()``, asked once per view (``watching``) for ``key``: a page's entries check the
    same newest judgment and the same judgments after it, each check a query. Outside a view
    (a refresh, a command) it is read every time."""
    if (seen := _watching.get()) is None:
        return read()
    if key not in seen.reads:
        seen.reads[key] = read()
    return seen.reads[key]


def current() -> Freshness:
    """The freshness being collected for this view (a detached one outside ``watching``)."""
    return _watching.get() or Freshness()


def tells_freshness(view):
    """A view (or an API view's method) whose response says, in its headers, how far behind
    the boards it served were; the view itself may show ``current()`` on its page."""
    @functools.wraps(view)
    def wrapped(*args, **kwargs):
        with watching() as seen:
            response = view(*args, **kwargs)
        for name, value in seen.headers().items():
            response[name] = value
        return response
    return wrapped


# (stamp, snapshot time) of every entry served behind while a result is being computed from it
_nested: contextvars.ContextVar[list | None] = contextvars.ContextVar("board_nested",
                                                                     default=None)


def served(judgments_behind: int, seconds_behind: float, seen: tuple | None = None,
           snapshot_at: float | None = None) -> None:
    """An entry ``judgments_behind`` and ``seconds_behind`` was served: the view says so, and
    a result computed from it (``computing_from``) is as old as that entry's ``seen`` stamp and
    ``snapshot_at``."""
    if (watched := _watching.get()) is not None:
        watched.note(judgments_behind, seconds_behind)
    if seen is not None:
        built_from(seen, snapshot_at)


def built_from(seen: tuple, snapshot_at: float) -> None:
    if (found := _nested.get()) is not None:
        found.append((seen, snapshot_at))


@contextlib.contextmanager
def computing_from() -> Iterator[list]:
    """Within it, the (stamp, snapshot time) of every entry served behind is collected: what
    is computed from them is no newer than the oldest (a page built on a board 8 s behind is
    8 s behind, whatever time it was stored)."""
    found: list = []
    token = _nested.set(found)
    try:
        yield found
    finally:
        _nested.reset(token)


def refreshing() -> bool:
    """True inside a background refresh: what it reads must be current, not served stale."""
    return getattr(_local, "refreshing", False)


def claim(key: str, lock_seconds: int) -> bool:
    """The refresh of ``key`` is ours (False: one is running somewhere; the lock expires after
    ``lock_seconds`` if its process died). ``release`` it when done."""
    return cache.add(_lock(key), 1, lock_seconds)


def release(key: str) -> None:
    cache.delete(_lock(key))


def wait_for_release(key: str, timeout: float, poll: float = 0.05) -> bool:
    """Wait until nobody refreshes ``key`` (True) or ``timeout`` seconds passed (False)."""
    deadline = time.monotonic() + timeout
    while cache.get(_lock(key)) is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(poll)
    return True


def _lock(key: str) -> str:
    return f"{key}:refreshing"


def refresh_in_background(key: str, work: Callable[[], object], lock_seconds: int) -> bool:
    """Run ``work`` in a thread unless a refresh of ``key`` is already running somewhere;
    True when one was started."""
    if not claim(key, lock_seconds):
        return False
    background.run_in_thread(lambda: _run(_lock(key), work), "board refresh")
    return True


def _run(lock: str, work: Callable[[], object]) -> None:
    _local.refreshing = True
    try:
        work()
    except Exception:  # the next stale view starts another; the reader already has a board
        log.exception("Background board refresh failed")
    finally:
        _local.refreshing = False
        cache.delete(lock)


def wait_for_refreshes(timeout: float | None = None) -> bool:
    """Wait for this process's background threads, refreshes among them; True when none is
    left (tests, a command exiting)."""
    return background.wait_for_jobs(timeout)
