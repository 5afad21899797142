"""Long work never runs inside a web request.

``run_outside_request(task, args)`` hands a Celery task to the broker's workers when one is
configured. With the embedded default (no broker, Celery eager) it runs the task in a thread of
this process instead of in the caller, so the request that asked for it answers at once and the
job's own row (status pending → running → done/failed) shows its progress.

A thread dies with its process: if the process exits while a job runs (a restart, gunicorn
recycling a worker, Ctrl-C on runserver), ``on_interrupted`` records why on the job, and the
job can be started again (every job here is safe to run twice). A worker killed outright
(SIGKILL, out of memory) leaves the job running: use a broker for work that must survive that.
"""
from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable, Sequence

from django.db import connections

log = logging.getLogger(__name__)

INTERRUPTED = ("Interrupted: the process running it stopped before it finished "
               "(a restart or shutdown); start it again")

_lock = threading.Lock()
_running: dict[threading.Thread, Callable[[str], None] | None] = {}  # job → on_interrupted


def run_outside_request(task, args: Sequence = (), *, queue: str | None = None,
                        on_interrupted: Callable[[str], None] | None = None,
                        ) -> threading.Thread | None:
    """Queue ``task`` (a Celery task) with a broker, else run it in a new thread; returns the
    thread (tests join it). ``on_interrupted(reason)`` records a failure the task itself could
    not (the task raised before recording it, or the process is exiting); it must only touch a
    job that is still unfinished."""
    if not task.app.conf.task_always_eager:
        task.apply_async(tuple(args), **({"queue": queue} if queue else {}))
        return None
    thread = threading.Thread(target=_run, args=(task, tuple(args), on_interrupted),
                              name=f"job {task.name}{tuple(args)}", daemon=True)
    with _lock:
        _running[thread] = on_interrupted
    try:
        thread.start()
    except BaseException:
        with _lock:
            _running.pop(thread, None)
        raise
    return thread


def _run(task, args: tuple, on_interrupted) -> None:
    try:
        task.apply(args, throw=True)
    except Exception as exc:  # the task records its own failure; this covers what it could not
        log.exception("background job %s%s failed", task.name, args)
        _record(on_interrupted, f"{type(exc).__name__}: {exc}")
    finally:
        with _lock:
            _running.pop(threading.current_thread(), None)
        connections.close_all()  # this thread's connections only


def _record(on_interrupted, reason: str) -> None:
    if on_interrupted is None:
        return
    try:
        on_interrupted(reason[:2000])
    except Exception:  # never mask the original failure
        log.exception("could not record a background job's failure")


@atexit.register
def _interrupt_unfinished() -> None:
    with _lock:
        pending = list(_running.values())
        _running.clear()
    for on_interrupted in pending:
        _record(on_interrupted, INTERRUPTED)
