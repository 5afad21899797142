"""gunicorn settings: the application preloaded, workers recycled by memory rather than count,
and a boot that leaves the heavy libraries to the code that uses them."""
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
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


HEAVY_AT_USE = ("scipy", "pandas", "matplotlib", "torch", "pyarrow", "openpyxl", "sklearn",
                "nltk", "sacrebleu", "bert_score", "krippendorff")


def test_a_web_worker_boots_without_the_heavy_libraries():
    """The web application (everything gunicorn preloads, every URLconf and view) imports the
    analysis and file-format libraries only where they are used: a boot that paid for SciPy
    and friends cost 2 CPU-seconds per worker (issue #18)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
    env.update(DEBUG="0", SECRET_KEY="boot-test-only", ALLOWED_HOSTS="127.0.0.1")
    probe = ("import json, sys, config.wsgi; "
             f"print(json.dumps(sorted(m for m in {HEAVY_AT_USE!r} if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=Path(__file__).resolve().parents[1],
                         env=env, capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
