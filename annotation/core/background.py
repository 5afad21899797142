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


def run_outside_request(task, args: Sequence = (), *,
                        on_interrupted: Callable[[str], None] | None = None,
                        ) -> threading.Thread | None:
    """Queue ``task`` (a Celery task) with a broker, else run it in a new thread; returns the
    thread (tests join it). ``on_interrupted(reason)`` records a failure the task itself could
    not (the task raised before recording it, or the process is exiting); it must only touch a
    job that is still unfinished."""
    if not task.app.conf.task_always_eager:
        task.apply_async(tuple(args))  # the queue comes from CELERY_TASK_ROUTES
        return None
    return _start(_run, (task, tuple(args), on_interrupted), f"job {task.name}{tuple(args)}",
                  on_interrupted)


def run_each_outside_request(task, arg_lists: Sequence[Sequence]) -> threading.Thread | None:
    """Many jobs of one kind: with a broker one message each, which the workers share; without
    one, a single thread runs them in turn (pushing 1,000 instances starts one thread, not
    1,000). A failing job is logged and the rest go on; each job records its own outcome, and
    one cut short by an exit is simply started again by the next push."""
    arg_lists = [tuple(args) for args in arg_lists]
    if not arg_lists:
        return None
    if not task.app.conf.task_always_eager:
        for args in arg_lists:
            task.apply_async(args)
        return None
    return _start(_run_each, (task, arg_lists), f"jobs {task.name} ×{len(arg_lists)}", None)


def wait_for_jobs(timeout: float | None = None) -> bool:
    """Wait for this process's background threads; True when none is left. A management
    command calls it before exiting (its threads would die with it), tests to see the result."""
    with _lock:
        threads = list(_running)
    for thread in threads:
        thread.join(timeout)
    with _lock:
        return not _running


def _start(target, args: tuple, name: str, on_interrupted) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
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
        _finished()


def _run_each(task, arg_lists: list[tuple]) -> None:
    try:
        for args in arg_lists:
            try:
                task.apply(args, throw=True)
            except Exception:
                log.exception("background job %s%s failed", task.name, args)
    finally:
        _finished()


def _finished() -> None:
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
