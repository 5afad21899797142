"""The study dataset export with every person pseudonymised: its time and the share of it the
identities take (gathering them, scrubbing free text).

Usage: eval "$(scripts/services.sh start)"; .venv/bin/python bench/dataset_export.py [--quick]
A fresh PostgreSQL database (``bench/_postgres.py``) is loaded as ``bench/leaderboard_cache.py``
loads it (6 models; per instance 6 responses, 4 comparisons, about 21 votes of 300 imported
annotators), plus 20,000 marketplace workers and 2,000 accounts, and a written feedback naming a
worker on one vote in ten. Prints, over ``--runs`` runs: the whole export, building the
identities, and scrubbing every response text and feedback alone; median, min–max.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _postgres import fresh_database  # noqa: E402


def _setup(reuse: bool) -> None:
    if reuse:
        server, _, test_db = os.environ["TEST_DATABASE_URL"].rpartition("/")
        os.environ["DATABASE_URL"] = f"{server}/{test_db}_dataset_export"
    else:
        os.environ["DATABASE_URL"] = fresh_database("dataset_export")
    os.environ.update(SECRET_KEY="bench-only", DJANGO_SETTINGS_MODULE="config.settings",
                      DEBUG="0")
    os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()
    if not reuse:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)


def _people(workers: int, users: int) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotation.models import Worker

    Worker.objects.bulk_create(Worker(provider=Worker.Provider.MTURK,
                                      external_id=f"A{i:013X}") for i in range(workers))
    get_user_model().objects.bulk_create(
        get_user_model()(username=f"member{i}", email=f"member{i}@uni.example")
        for i in range(users))
    with connection.cursor() as cursor:  # a worker's id in one feedback of ten
        cursor.execute("UPDATE judging_judgment SET feedback = 'Seemed fine to me, said A'"
                       " || lpad(upper(to_hex(id %% %s)), 13, '0') || '.' WHERE id %% 10 = 0",
                       [workers])


def _line(label: str, seconds: list[float]) -> None:
    print(f"  {label:40s} {statistics.median(seconds):8.2f} s   "
          f"({min(seconds):.2f}–{max(seconds):.2f}, n={len(seconds)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="about 210,000 votes")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reuse", action="store_true", help="Measure the last run's database")
    args = parser.parse_args()
    _setup(args.reuse)
    from leaderboard_cache import build

    from judging.dataset.export import dataset_export
    from judging.models import Judgment, Response

    if not args.reuse:
        print(build(10_000 if args.quick else 47_500))
        _people(20_000, 2_000)
    totals, gathers, scrubs = [], [], []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            counts = dataset_export(out)
            totals.append(time.perf_counter() - t0)
        try:
            from judging.dataset.identities import Identities
        except ImportError:  # measuring the export from before identities
            continue
        t0 = time.perf_counter()
        people = Identities()
        gathers.append(time.perf_counter() - t0)
        texts = list(Response.objects.values_list("text", flat=True)) + list(
            Judgment.objects.values_list("feedback", flat=True))
        t0 = time.perf_counter()
        for text in texts:
            people.scrub(text)
        scrubs.append(time.perf_counter() - t0)
    print(counts)
    _line("export", totals)
    if gathers:
        _line(f"identities ({len(people.names):,} strings)", gathers)
        _line(f"scrub {len(texts):,} texts", scrubs)


if __name__ == "__main__":
    main()
