"""Run a pure, CPU-bound part of a report in a forked child while this process does another:
statistics and drawing hold the GIL, so two of them at once need two processes.

A child only computes: it has no database (the inherited connections are dropped, and
connecting raises, so a stray query fails the child instead of talking on the parent's
socket), sends its result back pickled through a pipe and leaves by ``os._exit``. Anything
going wrong in it is redone here, so forking can change how long a report takes, never what
it contains. Use it as a context manager: leaving the block early (the parent's own part
raised) kills and reaps a child still at work, so no process outlives its report.
"""
from __future__ import annotations

import logging
import os
import pickle
import signal
import threading
from collections.abc import Callable

from threadpoolctl import threadpool_limits

log = logging.getLogger(__name__)


def may_fork() -> bool:
    """Fork only where it is safe and pays: a POSIX process with one thread (a child forked
    from a threaded process could wait forever on a lock another thread held) and two CPUs."""
    if not hasattr(os, "fork") or threading.active_count() != 1:
        return False
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cpus or 1) > 1


class Forked:
    """``fn(*args)``, started in a forked child when ``may_fork()``; ``result()`` returns it
    (computed here, then, if there was no child or the child failed)."""

    def __init__(self, fn: Callable, *args):
        self.fn, self.args, self._blas = fn, args, None
        self.pid, self.read = self._start() if may_fork() else (None, None)

    def _start(self) -> tuple[int | None, int | None]:
        read, write = os.pipe()
        # Two processes on two CPUs: BLAS threads in each (OpenBLAS starts one per CPU) would
        # fight over them, slowing both by up to half. One each until the child is done.
        self._blas = threadpool_limits(limits=1, user_api="blas")
        try:
            pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            self._restore_blas()
            return None, None
        if pid == 0:
            _child(self.fn, self.args, read, write)
        os.close(write)
        return pid, read

    def __enter__(self) -> Forked:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _restore_blas(self) -> None:
        if self._blas is not None:
            self._blas.restore_original_limits()
            self._blas = None

    def close(self) -> None:
        """Kill and reap the child if it is still there (its result was never asked for)."""
        self._restore_blas()
        if self.pid is None:
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        os.close(self.read)
        self.pid = self.read = None

    def result(self):
        if self.pid is None:
            return self.fn(*self.args)
        with os.fdopen(self.read, "rb") as pipe:
            payload = pipe.read()
        _, status = os.waitpid(self.pid, 0)
        self.pid = self.read = None
        self._restore_blas()
        if os.waitstatus_to_exitcode(status) == 0:
            try:
                return pickle.loads(payload)
            except Exception:  # noqa: BLE001  a truncated payload: redo it below
                pass
        log.warning("the forked child computing %s failed (status %s); computing it here",
                    getattr(self.fn, "__name__", self.fn), status)
        return self.fn(*self.args)


def _child(fn: Callable, args: tuple, read: int, write: int) -> None:
    code = 1
    try:
        os.close(read)
        _drop_database_connections()
        with os.fdopen(write, "wb") as pipe:
            pickle.dump(fn(*args), pipe, protocol=pickle.HIGHEST_PROTOCOL)
        code = 0
    except BaseException:  # noqa: BLE001, S110  the parent redoes the work
        pass
    finally:
        os._exit(code)


_inherited: list = []


def _drop_database_connections() -> None:
    """Forget every connection inherited from the parent, keeping a reference: a collected
    connection object closes its socket (libpq's PQfinish sends the server a goodbye), which
    would end the parent's session; ``os._exit`` collects nothing."""
    from django.db import connections

    for conn in connections.all(initialized_only=True):
        _inherited.append(conn.connection)
        conn.connection = None
    for conn in connections.all():
        conn.connect = _no_database


def _no_database():
    raise RuntimeError("a forked report child computes from what it was given; it has no "
                       "database connection")
