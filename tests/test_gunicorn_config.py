"""gunicorn settings: the application preloaded, workers recycled by memory rather than count."""
import logging
from types import SimpleNamespace

import pytest

from config import gunicorn


def _worker():
    return SimpleNamespace(alive=True, pid=1234, log=logging.getLogger("gunicorn.test"))


def test_the_application_is_preloaded_and_not_recycled_by_count():
    assert gunicorn.preload_app is True
    assert gunicorn.max_requests == 0  # by count only when GUNICORN_MAX_REQUESTS asks


def test_a_worker_past_the_memory_limit_finishes_its_request_and_is_replaced(monkeypatch):
    assert gunicorn._resident_mb() > 1  # this process, read from /proc
    monkeypatch.setattr(gunicorn, "MAX_WORKER_MB", 1)
    worker = _worker()
    gunicorn.post_request(worker, None, {}, None)
    assert worker.alive is False


@pytest.mark.parametrize("limit", [0, 10**6])  # off, or far above this process
def test_a_worker_under_the_limit_or_without_one_stays(monkeypatch, limit):
    monkeypatch.setattr(gunicorn, "MAX_WORKER_MB", limit)
    worker = _worker()
    gunicorn.post_request(worker, None, {}, None)
    assert worker.alive is True
