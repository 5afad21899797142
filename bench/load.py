"""HTTP load: gunicorn + PostgreSQL, N simulated annotators doing claim page → submit.

Usage: eval "$(scripts/services.sh start)"; .venv/bin/python bench/load.py [--quick] [--workers 10 50 200]
Each simulated annotator logs in, then loops: GET "next task" (redirects to the task page),
POST the answer (with the page's CSRF token) until the batch is done for them. Prints
throughput, p50/p95/p99 latency, and checks the invariants afterwards: 0 over-assignment,
0 duplicate answers, 0 lost submissions (every submit the server acknowledged is in the database).
Exit status 1 when an invariant is violated (CI runs --quick). The "client" column is the load
generator's own CPU share (it runs on the same machine); sessions sit in Redis when
TEST_REDIS_URL is set (as `scripts/services.sh start` exports), as a production deployment would.
"""
import argparse
import asyncio
import itertools
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _http import Client  # noqa: E402
from _postgres import fresh_database  # noqa: E402

CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
ACTION = re.compile(r'<form method="post" id="hit-form"[^>]*action="([^"]+)"', re.S)


def _database_url() -> str:
    from django.conf import settings

    if settings.configured:  # a previous round's connection must not hold the database
        from django.db import connections

        connections.close_all()
    return fresh_database("load")


def _env(db_url: str) -> dict:
    return {**os.environ, "DATABASE_URL": db_url, "SECRET_KEY": "load-bench-only",
            "DEBUG": "0", "SESSION_COOKIE_SECURE": "0", "CSRF_COOKIE_SECURE": "0",
            "ALLOWED_HOSTS": "127.0.0.1", "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_CONN_MAX_AGE": "60", "LOG_LEVEL": "WARNING",
            "CACHE_URL": os.environ.get("TEST_REDIS_URL", "")}


def _prepare(env: dict, annotators: int, tasks: int, n: int) -> tuple[str, list[str]]:
    """Migrate, seed the batch, and sign each annotator in (a session made here: logging in
    over HTTP would spend the run hashing passwords, which is not what this measures)."""
    os.environ.update(env)
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.utils.module_loading import import_string

    from tests.factories import make_batch

    call_command("migrate", verbosity=0)
    group = Group.objects.get(name="annotator")
    store = import_string(settings.SESSION_ENGINE + ".SessionStore")
    sessions = []
    for i in range(annotators):
        user = User(username=f"load{i}")
        user.set_unusable_password()
        user.save()
        user.groups.add(group)
        session = store()
        session.update({SESSION_KEY: str(user.pk), HASH_SESSION_KEY: user.get_session_auth_hash(),
                        BACKEND_SESSION_KEY: settings.AUTHENTICATION_BACKENDS[0]})
        session.create()
        sessions.append(session.session_key)
    return str(make_batch(tasks, n=n).uuid), sessions


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _annotator(base, index, session, batch_uuid, think, period, latencies, acknowledged,
                     errors):
    host, _, port = base.rpartition("//")[2].partition(":")
    client = Client(host, int(port), cookies={"sessionid": session})
    url = f"/work/batch/{batch_uuid}/next/"  # a submit redirects straight to the next task
    start = time.perf_counter() + period * random.random()  # paced annotators start spread out
    # Each annotator's first task is the warm-up (cold web workers compile templates and
    # prepare statements then); its latencies are left out, its submission still counts.
    recorded = {"page": [], "submit": []}
    for cycle in itertools.count():
        if cycle == 1:
            recorded = latencies
        if period:  # one task per period: the offered load stays put while latency varies
            await asyncio.sleep(max(0.0, start - time.perf_counter()))
            start = max(start + period, time.perf_counter() - period)
        t0 = time.perf_counter()
        page = await client.get(url, follow_redirects=True)
        recorded["page"].append(time.perf_counter() - t0)
        if "All done" in page.text:
            return
        match = ACTION.search(page.text)
        if page.status != 200 or not match:
            errors.append(f"page {page.status}")
            return
        if think:
            await asyncio.sleep(think)
        t0 = time.perf_counter()
        answer = await client.post(match.group(1), data={
            "choice": "AB"[index % 2], "csrfmiddlewaretoken": CSRF.search(page.text).group(1)})
        recorded["submit"].append(time.perf_counter() - t0)
        if answer.status == 302:
            acknowledged.append(match.group(1).rstrip("/").split("/")[-1])
            url = urlsplit(answer.headers["location"]).path
        else:
            errors.append(f"submit {answer.status}")
            url = f"/work/batch/{batch_uuid}/next/"


def _pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] * 1000 if values else float("nan")


def run(workers: int, tasks: int, n: int, gunicorn_workers: int, think: float = 0.0,
        rate: float = 0.0) -> dict:
    """One run; ``rate`` > 0 paces the annotators to that many submissions/s in total."""
    db_url = _database_url()
    env = _env(db_url)
    batch_uuid, sessions = _prepare(env, workers, tasks, n)
    port = _free_port()
    server = subprocess.Popen(
        [str(ROOT / ".venv/bin/gunicorn"), "config.wsgi", "-b", f"127.0.0.1:{port}",
         "-w", str(gunicorn_workers), "--log-level", "warning", "--no-control-socket"],
        cwd=ROOT, env=env)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                httpx.get(base + "/accounts/login/", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        latencies = {"page": [], "submit": []}
        acknowledged, errors = [], []

        async def main():
            await asyncio.gather(*(
                _annotator(base, i, session, batch_uuid, think, workers / rate if rate else 0.0,
                           latencies, acknowledged, errors)
                for i, session in enumerate(sessions)))

        start, cpu = time.perf_counter(), time.process_time()
        asyncio.run(main())
        wall, client_cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        server.terminate()
        server.wait(timeout=30)
    from django.db import connections

    connections.close_all()
    from annotation.models import Assignment

    rows = list(Assignment.objects.filter(batch__uuid=batch_uuid, counted=True)
                .values_list("task_id", "worker_id", "uuid"))
    per_task = Counter(t for t, _, _ in rows)
    stored = {str(u) for _, _, u in rows}
    invariants = {
        "over_assignment": sum(1 for c in per_task.values() if c > n),
        "duplicates": len(rows) - len({(t, w) for t, w, _ in rows}),
        "lost": len(set(acknowledged) - stored),
        "errors": len(errors),
    }
    all_latencies = latencies["page"] + latencies["submit"]
    return {"workers": workers, "submissions": len(acknowledged), "wall": wall,
            "throughput": len(acknowledged) / wall, "p50": _pct(all_latencies, 0.5),
            "p95": _pct(all_latencies, 0.95), "p99": _pct(all_latencies, 0.99),
            "submit_p95": _pct(latencies["submit"], 0.95), "client_cpu": client_cpu / wall,
            "latencies": latencies,
            **invariants,
            "complete": len(rows) == tasks * n}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="10 annotators, small batch (CI)")
    parser.add_argument("--workers", type=int, nargs="*", default=[10, 50, 200])
    parser.add_argument("--gunicorn-workers", type=int, default=4)
    parser.add_argument("--think-ms", type=float, default=0.0,
                        help="pause between seeing a task and submitting it (0 = closed loop)")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="pace the annotators to this many submissions/s in total "
                             "(0 = each goes as fast as the server answers)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per size; prints the median")
    args = parser.parse_args()
    sizes = [10] if args.quick else args.workers
    pacing = f"paced to {args.rate:.0f} submissions/s" if args.rate else "closed loop"
    print(f"gunicorn: {args.gunicorn_workers} sync workers; {pacing}; think time "
          f"{args.think_ms:.0f} ms; sessions: "
          f"{'Redis cache' if os.environ.get('TEST_REDIS_URL') else 'database'}")
    if not args.rate:
        print("Closed loop: each annotator waits for its own previous request, so by Little's law "
              "the mean latency is N / request rate — at N=50 it measures queueing, not service.")
    columns = ("subm/s", "p50", "p95", "p99", "client_cpu")
    print(f"{'N':>4} {'run':>6} {'subm':>6} {'subm/s':>7} {'p50 ms':>7} {'p95 ms':>7} "
          f"{'p99 ms':>7} {'client':>6} {'over':>5} {'dup':>4} {'lost':>5} {'err':>4}")
    ok = True
    for workers in sizes:
        tasks = 40 if args.quick else max(400, workers * 4)
        results = []
        for i in range(args.repeat):
            r = run(workers, tasks, 5, args.gunicorn_workers, args.think_ms / 1000, args.rate)
            r["subm/s"] = r["throughput"]
            results.append(r)
            ok &= r["over_assignment"] == r["duplicates"] == r["lost"] == r["errors"] == 0
            ok &= r["complete"]
            print(f"{workers:>4} {i + 1:>6} {r['submissions']:>6} {r['subm/s']:>7.0f} "
                  f"{r['p50']:>7.1f} {r['p95']:>7.1f} {r['p99']:>7.1f} {r['client_cpu']:>6.0%} "
                  f"{r['over_assignment']:>5} {r['duplicates']:>4} {r['lost']:>5} {r['errors']:>4}")
        if args.repeat > 1:
            m = {c: statistics.median(r[c] for r in results) for c in columns}
            print(f"{workers:>4} {'median':>6} {'':>6} {m['subm/s']:>7.0f} {m['p50']:>7.1f} "
                  f"{m['p95']:>7.1f} {m['p99']:>7.1f} {m['client_cpu']:>6.0%}")
    print("invariants:", "ok" if ok else "VIOLATED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
