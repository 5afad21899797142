"""Leaderboard views on 1,000,000 judgments: the first view (computes) and cached views.

Usage: eval "$(scripts/services.sh start)"; .venv/bin/python bench/leaderboard_cache.py [--quick]
A fresh PostgreSQL database (``bench/_postgres.py``) is bulk-loaded with COPY: 6 models,
47,500 instances, 190,000 comparisons, 950,000 human votes and 50,000 verdicts of one judge.
The cache is Redis when TEST_REDIS_URL is set (as in production), else local memory. Requests
go through Django's test client as a signed-in analyst (URL routing, middleware, permission,
template, sessions). Prints, over ``--runs`` runs each (cache emptied before every cold run):
the cold page, the first ratings plot after it (the board cached, the PNG drawn), cached views
of the page, both plots, the CSV, the API, the judge leaderboards page, a cached page that
re-counts (every ``RECHECK_SECONDS``), and the key check alone; median, min–max and the plan
of the key's query. Target: a cached leaderboard view < 100 ms.
"""
import argparse
import json
import os
import random
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _postgres import fresh_database  # noqa: E402

STRENGTH = {"Reference": 2.0, "M-strong": 1.2, "M-good": 0.6, "M-mid": 0.0, "M-weak": -0.6,
            "M-poor": -1.2}
JUDGE = "judge-good"


def _setup(reuse: bool, name: str = "leaderboard_cache") -> None:
    if reuse:  # the database a previous run loaded (its name as fresh_database makes it)
        server, _, test_db = os.environ["TEST_DATABASE_URL"].rpartition("/")
        os.environ["DATABASE_URL"] = f"{server}/{test_db}_{name}"
    else:
        os.environ["DATABASE_URL"] = fresh_database(name)
    os.environ.update(SECRET_KEY="bench-only", DJANGO_SETTINGS_MODULE="config.settings",
                      DEBUG="0", DATABASE_CONN_MAX_AGE="60")
    os.environ.pop("CELERY_BROKER_URL", None)
    if os.environ.get("TEST_REDIS_URL"):
        os.environ["CACHE_URL"] = os.environ["TEST_REDIS_URL"]
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)  # a kept database gets this code's indexes too


def _copy(model, rows, fixed: dict) -> int:
    """COPY ``rows`` (dicts of the varying columns) into ``model``'s table; ``fixed`` holds the
    other columns' values; a ``uuid`` column gets a fresh uuid per row."""
    from django.db import connection

    columns = [f.column for f in model._meta.concrete_fields if f.column != "id"]
    missing = set(columns) - set(fixed) - {"uuid"}
    n = 0
    with connection.cursor() as cursor:
        with cursor.copy(f'COPY "{model._meta.db_table}" ({", ".join(columns)}) '
                         "FROM STDIN") as copy:
            for row in rows:
                if n == 0 and missing - set(row):
                    raise SystemExit(f"{model.__name__}: no value for {missing - set(row)}")
                values = {**fixed, **row}
                if "uuid" in columns:
                    values["uuid"] = uuid.uuid4()
                copy.write_row([values[c] for c in columns])
                n += 1
    return n


NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _defaults(model, skip=()) -> dict:
    """Each column's default, in the form COPY takes (JSON as text; a timestamp set on save:
    ``NOW``)."""
    out = {}
    for f in model._meta.concrete_fields:
        if f.column in ("id", "uuid", *skip):
            continue
        value = f.get_default()
        if f.get_internal_type() == "JSONField":
            value = json.dumps(value)
        elif value is None and not f.null and f.get_internal_type() == "DateTimeField":
            value = NOW
        out[f.column] = value
    return out


def build(instances: int, seed: int = 0) -> dict:
    from django.db import connection

    from annotation.models import Instance, InstructionFamily
    from judging.models import Comparison, EvalModel, Judgment, Response
    from studies.models import default_study_id

    rnd = random.Random(seed)
    EvalModel.objects.bulk_create([EvalModel(name=n, is_reference=n == "Reference")
                                   for n in STRENGTH])
    models = dict(EvalModel.objects.values_list("name", "pk"))
    fams = [f.pk for f in InstructionFamily.objects.bulk_create(
        [InstructionFamily(name=f"Category {i}") for i in range(10)])]
    now = NOW
    _copy(Instance, ({"family_id": fams[i % 10], "instruction": f"Instruction {i}?",
                      "reference_output": f"Reference {i}."} for i in range(instances)),
          {**_defaults(Instance, ("family_id", "instruction", "reference_output")),
           "stage": "done", "reference_status": "verified", "stage_task_id": None})
    inst = list(Instance.objects.order_by("pk").values_list("pk", flat=True))
    _copy(Response, ({"instance_id": pk, "model_id": models[m], "text": f"{m} on {pk}"}
                     for pk in inst for m in STRENGTH),
          {**_defaults(Response, ("instance_id", "model_id", "text")), "created_at": now})
    resp = {(i, m): pk for pk, i, m in Response.objects.values_list("pk", "instance_id",
                                                                     "model_id")}
    names = list(STRENGTH)

    def comparisons():
        for pk in inst:
            for _ in range(4):
                a, b = rnd.sample(names, 2)
                yield {"instance_id": pk, "response_a_id": resp[(pk, models[a])],
                       "response_b_id": resp[(pk, models[b])], "swapped": rnd.random() < 0.5,
                       "sampling": rnd.choice(["uniform", "active"])}
    _copy(Comparison, comparisons(), {**_defaults(Comparison, ("instance_id", "response_a_id",
                                                               "response_b_id", "swapped",
                                                               "sampling")),
                                      "created_at": now})
    pairs = list(Comparison.objects.order_by("pk").values_list(
        "pk", "response_a__model__name", "response_b__model__name"))
    n_judged = len(pairs) * 5 // 19  # 5 votes per comparison + the judge on some: 1,000,000

    def judgments():
        k = 0
        for n, (pk, a, b) in enumerate(pairs):
            p_a = 1 / (1 + 10 ** ((STRENGTH[b] - STRENGTH[a]) / 1.5))
            for w in range(5):
                k += 1
                yield {"comparison_id": pk, "source": "human", "annotator": f"W{(n + w) % 300}",
                       "choice": "A" if rnd.random() < p_a else "B",
                       "created_at": now + timedelta(seconds=k)}
            if n < n_judged:
                k += 1
                r = rnd.random()
                yield {"comparison_id": pk, "source": JUDGE, "annotator": f"{JUDGE}@1",
                       "choice": "tie" if r < 0.05 else ("A" if (rnd.random() < p_a)
                                                         != (r < 0.15) else "B"),
                       "created_at": now + timedelta(seconds=k)}
    judged = _copy(Judgment, judgments(), {**_defaults(Judgment, ("comparison_id", "source",
                                                                  "annotator", "choice",
                                                                  "created_at")),
                                           "study_id": default_study_id()})
    with connection.cursor() as cursor:
        for model in (Instance, Response, Comparison, Judgment):
            cursor.execute(f'VACUUM ANALYZE "{model._meta.db_table}"')
    return {"instances": len(inst), "comparisons": len(pairs), "judgments": judged}


def _timed(fn, runs: int, before=None) -> list[float]:
    out = []
    for _ in range(runs):
        if before:
            before()
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _line(label: str, ms: list[float], target: float | None = None) -> None:
    med = statistics.median(ms)
    verdict = "" if target is None else ("  ok" if med < target else "  SLOW")
    print(f"  {label:44s} {med:9.1f} ms   ({min(ms):.1f}–{max(ms):.1f}, n={len(ms)}){verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50,000 judgments, 3 runs")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--reuse", action="store_true",
                        help="Measure the database the previous run loaded (no reload)")
    args = parser.parse_args()
    runs = 3 if args.quick else max(args.runs, 7)
    _setup(args.reuse)

    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, setup_test_environment
    from django.urls import reverse

    from annotation.core.permissions import ANALYST
    from judging import rating_cache
    from judging.judges.models import Judge
    from judging.models import Judgment

    setup_test_environment()  # the test client's host name is allowed
    if not args.reuse:
        t0 = time.perf_counter()
        sizes = build(2_500 if args.quick else 47_500)
        print(f"Loaded {sizes} with COPY in {time.perf_counter() - t0:.1f} s")
        Judge.objects.create(name=JUDGE, kind=Judge.Kind.PAIRWISE, model_name="stand-in",
                             base_url="http://127.0.0.1:9/v1")
        get_user_model().objects.create_user("bench_analyst", password="x")
    print(f"Cache: {'Redis' if os.environ.get('CACHE_URL') else 'local memory'}; "
          f"{os.cpu_count()} CPUs shared with other work (figures are noisy); load average "
          f"{os.getloadavg()[0]:.1f}")
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'judgment_source_latest'")
        if not cursor.fetchone():  # judging 0006 adds it; a later migration must not drop it
            print("WARNING: index judgment_source_latest missing after migrating: built here")
            cursor.execute('CREATE INDEX judgment_source_latest ON judging_judgment (source, id)')
            cursor.execute("VACUUM ANALYZE judging_judgment")
    user = get_user_model().objects.get(username="bench_analyst")
    user.groups.add(Group.objects.get_or_create(name=ANALYST)[0])
    client = Client()
    client.force_login(user)

    def get(url, **params):
        def fetch():
            response = client.get(url, params)
            assert response.status_code == 200, (url, response.status_code)
        return fetch

    page, plot = get(reverse("judging:leaderboard")), get(reverse("judging:leaderboard_ratings_png"))
    cats = get(reverse("judging:leaderboard_categories_png"))
    print(f"\nLeaderboard of {Judgment.objects.filter(source='human').count():,} human votes "
          f"({rating_cache.PAGE_ROUNDS} bootstrap rounds), {runs} runs each:")
    cold, first_plot = [], []
    for _ in range(runs):
        cache.clear()
        cold += _timed(page, 1)
        first_plot += _timed(plot, 1)
    _line("first view: page (computes everything)", cold)
    _line("first ratings plot after the page (draws)", first_plot)
    _timed(cats, 1)
    _line("cached: leaderboard page", _timed(page, runs * 3), 100)
    _line("cached: ratings plot (PNG)", _timed(plot, runs * 3), 100)
    _line("cached: categories plot (PNG)", _timed(cats, runs * 3), 100)
    _line("cached: CSV download", _timed(get(reverse("judging:leaderboard_download", args=["csv"])), runs * 3), 100)
    _line("cached: API /api/eval/leaderboard/", _timed(get(reverse("eval-leaderboard")), runs * 3),
          100)
    judge_page = get(reverse("judging:judges:leaderboards"))
    judge_cold = _timed(judge_page, 1)
    _line(f"judge leaderboards page, first ({JUDGE})", judge_cold)
    _line("cached: judge leaderboards page", _timed(judge_page, runs * 3), 100)
    clock, offset = time.time, [0.0]

    def half_a_minute_later():  # entries due for their re-count, the counts not yet taken
        offset[0] += rating_cache.RECHECK_SECONDS + 1
        time.time = lambda: clock() + offset[0]
        cache.delete_many([f"{rating_cache._token_key(s)}:count" for s in ("human", None)])
    _line(f"cached page that re-counts (each {rating_cache.RECHECK_SECONDS} s)",
          _timed(page, runs, before=half_a_minute_later))
    time.time = clock
    key = _timed(lambda: rating_cache._key("page", "human", {}, False), runs * 3)
    _line("key check alone (stamp query + token)", key)
    with CaptureQueriesContext(connection) as queries:
        rating_cache._stamp(JUDGE)
    print(f"\nPlans of the key's queries (the newest of {JUDGE}'s verdicts, with 950,000 newer "
          "human rows in a full run):")
    with connection.cursor() as cursor:
        for query in queries:
            cursor.execute("EXPLAIN ANALYZE " + query["sql"])
            print("  " + "\n  ".join(row[0] for row in cursor.fetchall()))

if __name__ == "__main__":
    main()
