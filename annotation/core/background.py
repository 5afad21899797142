"""Long work never runs inside a web request.

``run_outside_request(task, args)`` hands a Celery task to the broker's workers when one is
configured. With the embedded default (no broker, Celery eager) it puts the task on this
process's queue, which one thread works through one job at a time (eight reports asked for at
once build one after another, not side by side in a web worker): the request that asked answers
at once and the job's own row (status pending → running → done/failed) shows its progress.
How many may wait is capped before they get here (``core.jobs``).

A thread dies with its process: if the process exits while a job runs (a restart, gunicorn
recycling a worker, Ctrl-C on runserver), ``on_interrupted`` records why on the job, and the
job can be started again (every job here is safe to run twice). A worker killed outright
(SIGKILL, out of memory) leaves the job running: use a broker for work that must survive that.
"""
from __future__ import annotations

import atexit
import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence

from django.db import connections

log = logging.getLogger(__name__)

INTERRUPTED = ("Interrupted: the process running it stopped before it finished "
               "(a restart or shutdown); start it again")

_lock = threading.Lock()
_running: dict[threading.Thread, Callable[[str], None] | None] = {}  # job → on_interrupted
_queued: deque[tuple] = deque()  # (task, args, on_interrupted) waiting for the runner
_runner: threading.Thread | None = None  # works through _queued; gone when it is empty


def run_outside_request(task, args: Sequence = (), *,
                        on_interrupted: Callable[[str], None] | None = None,
                        ) -> threading.Thread | None:
    """Queue ``task`` (a Celery task) with a broker, else on this process's queue, worked by
    one thread a job at a time; returns that thread (tests join it). ``on_interrupted(reason)``
    records a failure the task itself could not (the task raised before recording it, or the
    process is exiting, also before it started); it must only touch a job still unfinished."""
    global _runner
    if not task.app.conf.task_always_eager:
        task.apply_async(tuple(args))  # the queue comes from CELERY_TASK_ROUTES
        return None
    with _lock:
        _queued.append((task, tuple(args), on_interrupted))
        if _runner is None:
            _runner = threading.Thread(target=_work_queue, name="job runner", daemon=True)
            _running[_runner] = None
            _runner.start()
        return _runner


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


def run_in_thread(work: Callable[[], object], name: str) -> threading.Thread:
    """``work()`` in a thread of its own, counted by ``wait_for_jobs``: short work that is not
    a Celery task (a board's refresh); the thread's connections are closed when it ends."""
    return _start(_call_then_finish, (work,), name, None)


def _call_then_finish(work: Callable[[], object]) -> None:
    try:
        work()
    finally:
        _finished()


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


def _work_queue() -> None:
    """The runner: one queued job after another until none is left, then the thread ends (the
    next job starts a new one; the check and the hand-over share ``_lock``)."""
    global _runner
    me = threading.current_thread()
    while True:
        with _lock:
            if not _queued:
                _running.pop(me, None)
                _runner = None
                break
            task, args, on_interrupted = _queued.popleft()
            _running[me] = on_interrupted
        try:
            task.apply(args, throw=True)
        except Exception as exc:  # the task records its own failure; this covers the rest
            log.exception("background job %s%s failed", task.name, args)
            _record(on_interrupted, f"{type(exc).__name__}: {exc}")
        finally:
            with _lock:
                if me in _running:  # not when the process is exiting (already recorded)
                    _running[me] = None
            connections.close_all()  # this thread's connections only


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
        pending = [*_running.values(), *(job[2] for job in _queued)]
        _running.clear()
        _queued.clear()
    for on_interrupted in pending:
        _record(on_interrupted, INTERRUPTED)
