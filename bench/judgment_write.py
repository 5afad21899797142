"""What the superseded-verdict indexes cost a judgment write, on PostgreSQL.

Usage: eval "$(scripts/services.sh start)"; .venv/bin/python bench/judgment_write.py [--n 5000]

``judgment_comparison_generation`` and ``judgment_response_generation`` (judging 0015) make the
correlated check of ``selectors.current_verdicts`` one index descent. Each vote written pays
for them: this times single-row inserts of pairwise votes (one statement and commit each, as a
worker's submit writes them) with the indexes and, in the same run on the same data, without
them (dropped, then re-created), alternating, and prints medians with best and worst.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _postgres import django_on_fresh_database  # noqa: E402

INDEXES = ("judgment_comparison_generation", "judgment_response_generation")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000, help="votes written per timed run")
    ap.add_argument("--runs", type=int, default=5, help="runs with and without, alternating")
    args = ap.parse_args()
    django_on_fresh_database("judgment_write")
    from django.db import connection, transaction
    from django.utils import timezone

    from judging.models import Comparison, Judgment
    from tests.studies import builders

    study = builders.study("bench")
    models = builders.models(study, "a", "b")
    comparisons = builders.voted(study, [(models["a"], models["b"], "")] * 200)
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = ANY(%s)",
                       [list(INDEXES)])
        definitions = [row[0] for row in cursor.fetchall()]
    assert len(definitions) == len(INDEXES), "migrate first: judging 0015 is missing"

    def write(run: int) -> float:
        now = timezone.now()
        start = time.perf_counter()
        for k in range(args.n):
            with transaction.atomic():
                Judgment.objects.create(comparison=comparisons[k % len(comparisons)],
                                        source="human", annotator=f"r{run}w{k}",
                                        choice="AB"[k % 2], created_at=now)
        return (time.perf_counter() - start) / args.n * 1e6

    def indexes(present: bool) -> None:
        with connection.cursor() as cursor:
            for name, definition in zip(INDEXES, definitions, strict=True):
                cursor.execute(definition if present else f"DROP INDEX {name}")

    times = {True: [], False: []}
    for run in range(args.runs * 2):
        present = run % 2 == 0
        if not present:
            indexes(False)
        times[present].append(write(run))
        if not present:
            indexes(True)
    print(f"{args.n:,} single-row vote inserts per run, {args.runs} runs each, "
          f"{Judgment.objects.count():,} judgments at the end, "
          f"{Comparison.objects.count()} comparisons")
    for present, label in ((False, "without the generation indexes"),
                           (True, "with them")):
        values = times[present]
        print(f"  {label:<32} median {statistics.median(values):6.1f} µs per vote "
              f"(best {min(values):.1f}, worst {max(values):.1f})")
    ratio = statistics.median(times[True]) / statistics.median(times[False])
    print(f"judgment write: {ratio:.2f}x the time without the generation indexes")


if __name__ == "__main__":
    main()
