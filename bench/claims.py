"""Claim + submit throughput and latency on PostgreSQL at 1, 10 and 50 concurrent workers.

Usage: eval "$(scripts/services.sh start)"; .venv/bin/python bench/claims.py [--quick]
Each worker is a thread with its own connection running the real services
(task_claim_next then assignment_submit) until the batch is full. Prints throughput,
p50/p95 latency per claim+submit pair (median over repeats) and checks the invariants.
"""
import argparse
import os
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _postgres import fresh_database  # noqa: E402


def _setup_database() -> None:
    os.environ["DATABASE_URL"] = fresh_database("bench")
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def run(workers: int, tasks: int, n: int) -> dict:
    from django.db import connections

    from annotation.engine.services.claims import task_claim_next
    from annotation.engine.services.submissions import assignment_submit
    from annotation.models import Assignment
    from tests.factories import make_batch, make_workers

    batch = make_batch(tasks, n=n)
    people = make_workers(workers)
    latencies: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(workers + 1)

    def work(worker):
        mine = []
        barrier.wait()
        while True:
            t0 = time.perf_counter()
            a = task_claim_next(batch=batch, worker=worker)
            if a is None:
                break
            assignment_submit(assignment=a, data={"choice": "A"})
            mine.append(time.perf_counter() - t0)
        with lock:
            latencies.extend(mine)
        connections.close_all()

    threads = [threading.Thread(target=work, args=(w,)) for w in people]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    counted = Assignment.objects.filter(batch=batch, counted=True)
    per_task = Counter(counted.values_list("task_id", flat=True))
    pairs = list(counted.values_list("task_id", "worker_id"))
    ok = (counted.count() == tasks * n and set(per_task.values()) == {n}
          and len(pairs) == len(set(pairs)))
    lat = sorted(latencies)
    return {"throughput": len(lat) / wall, "p50": lat[len(lat) // 2] * 1000,
            "p95": lat[int(len(lat) * 0.95)] * 1000, "ok": ok, "submissions": len(lat)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    _setup_database()
    tasks, n = (40, 5) if args.quick else (200, 5)
    repeats = 1 if args.quick else args.repeats
    print(f"claim+submit on PostgreSQL, {tasks} tasks x {n}, median of {repeats} runs")
    print(f"{'workers':>8} {'subm/s':>9} {'p50 ms':>8} {'p95 ms':>8}  invariants")
    baseline = None
    for workers in (1, 10, 50):
        runs = [run(workers, tasks, n if workers >= n else 1) for _ in range(repeats)]
        med = {k: statistics.median(r[k] for r in runs) for k in ("throughput", "p50", "p95")}
        baseline = baseline or med["throughput"]
        print(f"{workers:>8} {med['throughput']:>9.0f} {med['p50']:>8.1f} {med['p95']:>8.1f}  "
              f"{'ok' if all(r['ok'] for r in runs) else 'VIOLATED'}"
              f"   ({med['throughput'] / baseline:.2f}x the 1-worker rate)")


if __name__ == "__main__":
    main()
