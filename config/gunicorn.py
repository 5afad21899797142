"""gunicorn settings: `gunicorn -c config/gunicorn.py config.wsgi`. Each value can be overridden
from the environment (GUNICORN_BIND, GUNICORN_WORKERS, GUNICORN_THREADS, GUNICORN_TIMEOUT)."""
import multiprocessing
import os

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", multiprocessing.cpu_count() * 2 + 1))
threads = int(os.environ.get("GUNICORN_THREADS", "1"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
graceful_timeout = 30
max_requests = 2000  # recycle workers to bound memory growth
max_requests_jitter = 200
forwarded_allow_ips = os.environ.get("GUNICORN_FORWARDED_ALLOW_IPS", "127.0.0.1")
# No runtime control socket: its default path is one per user account, so two instances run by
# the same user (web + a benchmark, two sites) would fight over it; use signals or systemd.
control_socket_disable = True
accesslog = "-"
errorlog = "-"
