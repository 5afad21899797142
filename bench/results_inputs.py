"""What do the results' ``input.*`` columns cost? A batch's CSV with and without them, same run.

Usage: eval "$(scripts/services.sh start)"; .venv/bin/python bench/results_inputs.py [--quick]
On a fresh PostgreSQL database filled through the real services (a pairwise batch whose rows
name their models, so every task is a stored comparison: TASKS tasks x 4 submitted answers),
writes the batch's CSV ROUNDS times with the inputs and with the input columns left out
(rounds interleaved). Prints seconds per export (median, lowest and highest round), the
queries each export made, and the CSV's size.
"""
import argparse
import copy
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _postgres import django_on_fresh_database  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    tasks, rounds = (60, 2) if args.quick else (args.tasks, args.rounds)
    django_on_fresh_database("results_inputs", DATABASE_CONN_MAX_AGE="60")

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.engine import results
    from annotation.engine.hit_types import get_hit_type
    from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
    from annotation.engine.services.claims import task_claim_next
    from annotation.engine.services.submissions import assignment_submit
    from annotation.engine.services.workers import worker_for_external
    from annotation.models import Batch

    rows = []
    for i in range(tasks):
        row = copy.deepcopy(get_hit_type("pairwise_ab").example_rows[i % 2])
        row["instruction"] += f" (#{i})"
        rows.append(row)
    batch = batch_set_status(batch_create_from_rows(
        hit_type="pairwise_ab", title="bench", rows=rows, assignments_per_task=4,
        min_seconds=0), Batch.Status.ACTIVE)
    for worker in (worker_for_external("local", f"bench-{n}") for n in range(4)):
        while (a := task_claim_next(batch=batch, worker=worker)) is not None:
            assignment_submit(assignment=a, data={"choice": "A"})
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")

    real = (results.input_columns, results._inputs)
    # "without": neither the columns nor the reading of the inputs (what the export did before)
    variants = {"with inputs": real,
                "without inputs": (lambda batches: {}, lambda chunk: defaultdict(dict))}
    times: dict[str, list[float]] = {name: [] for name in variants}
    facts: dict[str, tuple[int, int]] = {}
    for _ in range(rounds):
        for name, (columns, reader) in variants.items():
            results.input_columns, results._inputs = columns, reader
            with CaptureQueriesContext(connection) as queries:
                started = time.perf_counter()
                size = sum(len(chunk) for chunk in results.csv_stream([batch]))
                times[name].append(time.perf_counter() - started)
            facts[name] = (len(queries), size)
    results.input_columns, results._inputs = real
    print(f"{tasks} tasks x 4 answers = {tasks * 4} rows, {rounds} rounds")
    for name, spent in times.items():
        queries, size = facts[name]
        print(f"{name:>15}: median {statistics.median(spent):.3f} s "
              f"(min {min(spent):.3f}, max {max(spent):.3f}); {queries} queries; "
              f"{size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
