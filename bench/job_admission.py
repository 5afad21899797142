"""What the job gate (annotation/core/jobs.py) adds to starting a job, on PostgreSQL.

Usage: eval "$(scripts/services.sh start)"; .venv/bin/python bench/job_admission.py [--quick]
On a fresh database, ``admit`` runs inside a transaction that is rolled back (the lock, the
count of every source's queued and running rows, the dedupe check), CALLS times per round:
with no job queued, and with the global cap's worth queued (two reports, a metric run and a
judge run of UNITS units of the same owner and judge, so its fingerprint is read from its units:
the worst case); for scale, a transaction of one SELECT 1. Prints milliseconds per call:
median over rounds and the spread.
"""
import argparse
import statistics
import sys
import time
import uuid
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _postgres import django_on_fresh_database  # noqa: E402

UNITS = 2_000



def _fill() -> tuple[int, list[str]]:
    """The queued jobs: returns the judge's pk and a different item list (no dedupe hit)."""
    from django.utils import timezone

    from agreement.models import MetricRun, Report
    from judging.judges.models import Judge, JudgeRun, JudgeUnit

    now = timezone.now()
    for seed in (1, 2):
        Report.objects.create(params={"seed": seed}, created_by="ann", created_at=now)
    MetricRun.objects.create(metrics=["length"], created_by="bob", created_at=now)
    judge = Judge.objects.create(name="bench-judge", version="1", kind="pairwise",
                                 base_url="http://127.0.0.1:9", model_name="m",
                                 price_in_per_1k=Decimal("0"), price_out_per_1k=Decimal("0"))
    run = JudgeRun.objects.create(judge=judge, scope="comparisons", created_by="cy",
                                  units_total=UNITS, created_at=now)
    JudgeUnit.objects.bulk_create([JudgeUnit(run=run, item=uuid.uuid4(), ordering=o)
                                   for _ in range(UNITS // 2) for o in ("AB", "BA")])
    return judge.pk, [str(uuid.uuid4()) for _ in range(UNITS // 2)]


def _round(calls: int, judge_id: int, items: list[str]) -> float:
    from django.db import transaction

    from annotation.core.jobs import admit
    from judging.judges.jobs import JUDGE_RUN, judge_run_fingerprint

    fingerprint = judge_run_fingerprint(judge_id, items)
    start = time.perf_counter()
    for _ in range(calls):
        with transaction.atomic():
            assert admit(JUDGE_RUN, owner="cy", fingerprint=fingerprint) is None
            transaction.set_rollback(True)
    return (time.perf_counter() - start) / calls * 1000


def _baseline(calls: int) -> float:
    """A transaction of one ``SELECT 1``, for scale (the machine's round trips)."""
    from django.db import connection, transaction

    start = time.perf_counter()
    for _ in range(calls):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            transaction.set_rollback(True)
    return (time.perf_counter() - start) / calls * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds, calls = (2, 20) if args.quick else (9, 100)
    django_on_fresh_database("job_admission", DATABASE_CONN_MAX_AGE="60", JOBS_MAX_GLOBAL="5")
    items = [str(uuid.uuid4())]
    base = [_baseline(calls) for _ in range(rounds)]
    idle = [_round(calls, 0, items) for _ in range(rounds)]
    judge_id, items = _fill()
    busy = [_round(calls, judge_id, items) for _ in range(rounds)]
    for label, times in (("for scale, a transaction of SELECT 1", base),
                         ("no job queued", idle),
                         (f"4 queued, a {UNITS:,}-unit run fingerprinted", busy)):
        print(f"{label}: {statistics.median(times):.2f} ms per call "
              f"(rounds {min(times):.2f}-{max(times):.2f}, {rounds} x {calls})")


if __name__ == "__main__":
    main()
