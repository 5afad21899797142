"""``Forked`` runs a computation in a forked child and returns what running it here returns;
a child that fails, dies or sends garbage changes only the time, never the result."""
import os
import signal

import pytest
from django.db import connection

from agreement.reports import forked
from annotation.models import Worker

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


@pytest.fixture(autouse=True)
def allow_fork(monkeypatch):
    monkeypatch.setattr(forked, "may_fork", lambda: True)


def _where(x):
    return os.getpid(), [x * i for i in range(5)]


def test_the_result_comes_from_a_child_and_the_child_is_reaped():
    job = forked.Forked(_where, 3)
    child = job.pid
    pid, value = job.result()
    assert value == [0, 3, 6, 9, 12]
    assert pid == child != os.getpid()
    with pytest.raises(ChildProcessError):
        os.waitpid(child, os.WNOHANG)  # reaped by result()


def _fail_in_a_child(parent):
    if os.getpid() != parent:
        raise RuntimeError("only the child fails")
    return "computed here"


def _die_in_a_child(parent):
    if os.getpid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)
    return "computed here"


def _unpicklable_in_a_child(parent):
    return (lambda: None) if os.getpid() != parent else "computed here"


@pytest.mark.parametrize("fn", [_fail_in_a_child, _die_in_a_child, _unpicklable_in_a_child])
def test_whatever_goes_wrong_in_the_child_is_redone_here(fn, caplog):
    assert forked.Forked(fn, os.getpid()).result() == "computed here"
    assert "computing it here" in caplog.text


def test_without_fork_it_runs_here(monkeypatch):
    monkeypatch.setattr(forked, "may_fork", lambda: False)
    job = forked.Forked(_where, 2)
    assert job.pid is None and job.result() == (os.getpid(), [0, 2, 4, 6, 8])


def _connection_in_child():
    from django.db import connections

    return [c.connection is None for c in connections.all(initialized_only=True)]


def _count_workers():
    return Worker.objects.count()


@pytest.mark.django_db
def test_the_child_has_no_database_and_the_parents_session_survives(caplog):
    Worker.objects.create(external_id="w1")  # the parent's connection is open
    assert connection.connection is not None
    dropped = forked.Forked(_connection_in_child).result()
    assert dropped and all(dropped)
    assert "computing it here" not in caplog.text
    assert forked.Forked(_count_workers).result() == 1  # refused in the child, redone here
    assert "computing it here" in caplog.text
    assert Worker.objects.count() == 1  # the parent's session still works


def test_may_fork_refuses_with_another_thread(monkeypatch):
    import threading

    monkeypatch.undo()
    started, stop = threading.Event(), threading.Event()
    t = threading.Thread(target=lambda: (started.set(), stop.wait()))
    t.start()
    started.wait()
    try:
        assert forked.may_fork() is False
    finally:
        stop.set()
        t.join()


def _slow_and_large(seconds):
    import time

    time.sleep(seconds)
    return b"x" * 1_000_000  # more than a pipe holds: the child blocks until it is read


def test_a_large_result_comes_through_the_pipe():
    assert forked.Forked(_slow_and_large, 0).result() == b"x" * 1_000_000


def test_leaving_the_block_early_kills_and_reaps_the_child():
    with pytest.raises(RuntimeError, match="parent's own part"):
        with forked.Forked(_slow_and_large, 30) as job:
            pid = job.pid
            assert pid
            raise RuntimeError("the parent's own part failed")
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # and gone


def _blas_threads():
    from threadpoolctl import threadpool_info

    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.mark.parametrize("leave", ["result", "close"])
def test_parent_and_child_use_one_blas_thread_each_until_the_child_is_done(leave):
    import numpy  # noqa: F401  loads OpenBLAS
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=2, user_api="blas"):  # as on a 2-CPU machine
        before = _blas_threads()
        assert before and set(before) == {2}
        with forked.Forked(_blas_threads) as job:
            assert set(_blas_threads()) == {1}
            if leave == "result":
                assert set(job.result()) == {1}  # what the child saw
        assert _blas_threads() == before
