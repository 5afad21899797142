"""What leaving trial batches' votes out costs a board's read (``judging.selectors.
without_trial_votes``): the pairwise read of the human board with the filter (the default) and
without it (``include_trial``), interleaved, on PostgreSQL.

Usage: eval "$(scripts/services.sh start)"; .venv/bin/python bench/trial_filter.py [--instances N]
A fresh database is loaded as ``bench/leaderboard_cache.py`` loads it (5 human votes per
comparison, 4 comparisons per instance: 12,000 instances ≈ 250,000 votes), then one trial
batch of 200 crowd votes is added. Prints the median and min–max of ``--runs`` reads each, the
rows read, and the filter's plan.
"""
import argparse
import os
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _postgres import django_on_fresh_database  # noqa: E402


def _trial_batch(votes: int) -> None:
    """``votes`` crowd votes through the engine in one trial batch (one worker per task)."""
    from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
    from annotation.engine.services.claims import task_claim_next
    from annotation.engine.services.submissions import assignment_submit
    from annotation.models import Batch, Worker
    from judging.models import Comparison

    uuids = Comparison.objects.order_by("pk").values_list("uuid", flat=True)[:votes]
    batch = batch_create_from_rows(hit_type="pairwise_ab", title="trial", trial=True,
                                   assignments_per_task=1, min_seconds=0,
                                   rows=[{"comparison": str(u)} for u in uuids])
    batch_set_status(batch, Batch.Status.ACTIVE)
    worker = Worker.objects.create(external_id="bench-trial")
    while (a := task_claim_next(batch=batch, worker=worker)) is not None:
        assignment_submit(assignment=a, data={"choice": "A"},
                          now=a.claimed_at + timedelta(seconds=5))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=12_000)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    django_on_fresh_database("trial_filter")
    from leaderboard_cache import build

    from judging.selectors import pairwise_judgments_encoded, pairwise_judgments_qs

    t0 = time.perf_counter()
    sizes = build(args.instances)
    _trial_batch(200)
    print(f"Loaded {sizes} and a trial batch of 200 votes in {time.perf_counter() - t0:.1f} s;"
          f" load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (noisy)")
    times: dict[bool, list[float]] = {False: [], True: []}
    rows = {}
    pairwise_judgments_encoded()  # warm the caches once
    for _ in range(args.runs):
        for include_trial in (False, True):  # interleaved: drift hits both alike
            t = time.perf_counter()
            rows[include_trial] = len(pairwise_judgments_encoded(include_trial=include_trial))
            times[include_trial].append(1000 * (time.perf_counter() - t))
    for include_trial, label in ((False, "trial votes left out (default)"),
                                 (True, "include_trial (no filter)")):
        ms = times[include_trial]
        print(f"  {label:34s} {statistics.median(ms):8.1f} ms  ({min(ms):.1f}–{max(ms):.1f}, "
              f"n={len(ms)})  {rows[include_trial]:,} rows")
    plan = pairwise_judgments_qs().values_list("pk").explain()
    print("Plan of the filtered read (its trial part):")
    print("\n".join(line for line in plan.splitlines() if "trial" in line or "Anti" in line
                    or "SubPlan" in line or "hashed" in line))


if __name__ == "__main__":
    main()
