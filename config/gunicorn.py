"""gunicorn settings: `gunicorn -c config/gunicorn.py config.wsgi`. Each value can be overridden
from the environment (GUNICORN_BIND, GUNICORN_WORKERS, GUNICORN_THREADS, GUNICORN_TIMEOUT,
GUNICORN_MAX_REQUESTS, GUNICORN_MAX_WORKER_MB, GUNICORN_PRELOAD).

The application is loaded once in the master (``preload_app``) and the workers are forked from
it: a worker starts in milliseconds instead of paying the imports again, and the pages of the
loaded code are shared. Workers are recycled by memory, not by request count: recycling every
few thousand requests re-paid a worker's start under load every half minute, and that was the
latency tail.
"""
import multiprocessing
import os
from pathlib import Path

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", multiprocessing.cpu_count() * 2 + 1))
threads = int(os.environ.get("GUNICORN_THREADS", "1"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
graceful_timeout = 30
preload_app = os.environ.get("GUNICORN_PRELOAD", "1") != "0"  # 0: a HUP reloads the code
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "0"))  # 0: never by count
max_requests_jitter = max_requests // 10
MAX_WORKER_MB = int(os.environ.get("GUNICORN_MAX_WORKER_MB", "768"))  # 0: never by memory
forwarded_allow_ips = os.environ.get("GUNICORN_FORWARDED_ALLOW_IPS", "127.0.0.1")
# No runtime control socket: its default path is one per user account, so two instances run by
# the same user (web + a benchmark, two sites) would fight over it; use signals or systemd.
control_socket_disable = True
accesslog = "-"
errorlog = "-"

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _resident_mb() -> float:
    """This process's resident memory now (Linux; 0 elsewhere, which never recycles)."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * _PAGE / 2**20
    except (OSError, IndexError, ValueError):
        return 0.0


def post_request(worker, req, environ, resp):
    """A worker grown past GUNICORN_MAX_WORKER_MB finishes this request and is replaced."""
    if MAX_WORKER_MB and _resident_mb() > MAX_WORKER_MB:
        worker.log.info("worker %s at %.0f MB: recycling", worker.pid, _resident_mb())
        worker.alive = False


def when_ready(server):
    """Before the first fork: a database connection the master opened while loading would be
    shared by every worker's socket; close it here, and each worker opens its own."""
    from django.db import connections

    connections.close_all()
