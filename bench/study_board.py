"""A study's public board with two studies of N judgments each: the first view (computes)
and cached views, read by an anonymous visitor at ``/s/<slug>/board/``.

Usage: eval "$(scripts/services.sh start)"; .venv/bin/python bench/study_board.py [N]
A fresh PostgreSQL database (``bench/_postgres.py``); N human votes per study (default
1,000,000; 10 per comparison, 6 models), written with ``bulk_create``. The cache is Redis when
TEST_REDIS_URL is set. Prints the first view and 21 cached views: median, quartiles, min–max;
then 21 views of study A each right after a new vote in study B (the entry checks the new
vote's study and stays: no recompute). Target: a cached view < 100 ms with 1M judgments in one
study of two.
"""
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _postgres import fresh_database  # noqa: E402


def _setup() -> None:
    os.environ["DATABASE_URL"] = fresh_database("study_board")
    os.environ.update(SECRET_KEY="bench-only", DJANGO_SETTINGS_MODULE="config.settings",
                      DEBUG="0", DATABASE_CONN_MAX_AGE="60")
    os.environ.pop("CELERY_BROKER_URL", None)
    if os.environ.get("TEST_REDIS_URL"):
        os.environ["CACHE_URL"] = os.environ["TEST_REDIS_URL"]
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _fill(study, n: int, per: int = 10) -> None:
    from django.utils import timezone

    from annotation.models import Instance
    from judging.models import Comparison, EvalModel, Judgment, Response

    models = [EvalModel.objects.create(name=f"m{i}", study=study, is_reference=i == 0)
              for i in range(6)]
    instances = Instance.objects.bulk_create(
        [Instance(study=study, instruction=f"q{i}", stage="done") for i in range(n // per)],
        batch_size=5000)
    pairs = []
    for k, inst in enumerate(instances):
        a, b = models[k % 6], models[(k + 1 + k // 6) % 6]
        b = models[(k + 2) % 6] if a == b else b
        pairs.append((inst, Response(instance=inst, model=a, text="a"),
                      Response(instance=inst, model=b, text="b")))
    Response.objects.bulk_create([r for _, ra, rb in pairs for r in (ra, rb)], batch_size=5000)
    comparisons = Comparison.objects.bulk_create(
        [Comparison(instance=i, response_a=ra, response_b=rb) for i, ra, rb in pairs],
        batch_size=5000)
    now = timezone.now()
    Judgment.objects.bulk_create(
        (Judgment(source="human", annotator=f"w{j}", kind="pairwise", comparison=c,
                  choice="AB"[(j + c.pk) % 2], created_at=now)
         for c in comparisons for j in range(per)), batch_size=5000)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    _setup()
    from django.core.cache import cache
    from django.test import Client
    from django.test.utils import setup_test_environment

    from studies.models import Study

    setup_test_environment()  # the test client's host name is allowed
    studies = [Study.objects.create(name=s, slug=s, visibility="public")
               for s in ("bench-a", "bench-b")]
    t = time.perf_counter()
    for study in studies:
        _fill(study, n)
    print(f"Loaded 2 studies x {n:,} judgments in {time.perf_counter() - t:.0f} s")
    client, path = Client(), "/s/bench-a/board/"
    cache.clear()
    t = time.perf_counter()
    assert client.get(path).status_code == 200
    print(f"first view (computes, 1000 bootstrap rounds): {time.perf_counter() - t:.2f} s")
    times = []
    for _ in range(21):
        t = time.perf_counter()
        assert client.get(path).status_code == 200
        times.append((time.perf_counter() - t) * 1000)
    _report("cached view", times)
    times = _after_votes_elsewhere(client, path, studies[1])
    _report("cached view right after a vote in the other study", times)


def _after_votes_elsewhere(client, path, other) -> list[float]:
    from judging.models import Comparison
    from judging.services.judgments.record import judgment_record

    comparison = Comparison.objects.filter(instance__study=other).first()
    times = []
    for k in range(21):
        judgment_record(source="human", annotator=f"late{k}", comparison=comparison, choice="A")
        t = time.perf_counter()
        assert client.get(path).status_code == 200
        times.append((time.perf_counter() - t) * 1000)
    return times


def _report(what: str, times: list[float]) -> None:
    q = statistics.quantiles(times, n=4)
    print(f"{what}: median {statistics.median(times):.1f} ms (quartiles {q[0]:.1f}–"
          f"{q[2]:.1f}, min {min(times):.1f}, max {max(times):.1f}; n={len(times)})")


if __name__ == "__main__":
    main()
