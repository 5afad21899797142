"""Judge-run throughput: 700 comparisons × 2 orderings against the loopback OpenAI server.

Usage: eval "$(scripts/services.sh start)"; .venv/bin/python bench/judge_run.py [--repeats 5]

The fake server (``tests/support/fake_openai.py``) answers every request after ``--latency-ms``
(200 ms). It runs in its own process, as a provider would (``--in-process-server`` to share
this interpreter's GIL instead); it logs each request, which is how calls are counted. The run
is worked by
``judge_run_execute`` with ``--concurrency`` lane threads (32): each lane is exactly the loop a
Celery lane task runs (``judge_run_work``), so this measures the production code path minus
the broker; the lanes are split over ``--processes`` forked processes (one per CPU), as
Celery's prefork pool splits lane tasks over its worker processes. Reports the time from
``judge_run_start`` (creating the run and its units, pricing them) to the run done against the
ideal ``calls × latency / concurrency`` (target ≤ 1.25×, median of the repeats), then runs the
same judge again, start included, and counts the new calls it made (targets: 0 calls, ≤ 2 s).
Each repeat uses a new judge version, so its calls are new (idempotency keys include it).
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _postgres import fresh_database  # noqa: E402


class _NoMigrations(dict):
    """Build tables straight from the models (like pytest --nomigrations)."""

    def __contains__(self, item):
        return True

    def __getitem__(self, item):
        return None


def _setup_database() -> None:
    os.environ["DATABASE_URL"] = fresh_database("bench_judges")
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    import django
    from django.conf import settings

    django.setup()
    settings.MIGRATION_MODULES = _NoMigrations()
    from django.core.management import call_command

    call_command("migrate", run_syncdb=True, verbosity=0)


def _content(n: int) -> list:
    from annotation.models import Image, Instance, InstanceImage
    from judging.models import Comparison, EvalModel, Response

    m1 = EvalModel.objects.create(name="bench-model-1")
    m2 = EvalModel.objects.create(name="bench-model-2")
    instances = Instance.objects.bulk_create(
        [Instance(instruction=f"What is unusual about picture {i}?", stage="done",
                  reference_output=f"Reference {i}.") for i in range(n)])
    images = Image.objects.bulk_create(
        [Image(source_url=f"https://example.org/{i}.png") for i in range(n)])
    InstanceImage.objects.bulk_create(
        [InstanceImage(instance=inst, image=img, position=0,
                       caption=f"A street scene number {i} with a red bus and two cyclists.")
         for i, (inst, img) in enumerate(zip(instances, images, strict=True))])
    ra = Response.objects.bulk_create(
        [Response(instance=inst, model=m1, text=f"Model one describes scene {i} in detail.")
         for i, inst in enumerate(instances)])
    rb = Response.objects.bulk_create(
        [Response(instance=inst, model=m2, text=f"Model two says scene {i} has a bus.")
         for i, inst in enumerate(instances)])
    return Comparison.objects.bulk_create(
        [Comparison(instance=inst, response_a=a, response_b=b)
         for inst, a, b in zip(instances, ra, rb, strict=True)])


class _ServerProcess:
    """The standalone fake server in a subprocess; counts requests from its request log."""

    def __init__(self, latency_ms: float) -> None:
        import socket
        import subprocess
        import tempfile

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.log = tempfile.NamedTemporaryFile(prefix="fake-openai-", suffix=".log")
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "tests/support/fake_openai.py"), "--port", str(port),
             "--latency-ms", str(latency_ms), "--verbose"],
            stdout=subprocess.DEVNULL, stderr=self.log)
        self.base_url = f"http://127.0.0.1:{port}/v1"
        import httpx

        for _ in range(100):
            try:
                httpx.get(self.base_url + "/models", timeout=0.2)
                break
            except httpx.HTTPError:
                time.sleep(0.05)

    @property
    def call_count(self) -> int:
        with open(self.log.name, encoding="utf-8", errors="replace") as fh:
            return sum('"POST /v1/chat/completions' in line for line in fh)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.log.close()


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (the forked lane processes): what
    the run costs the machine, less noisy than wall time when other work shares the cores."""
    import resource

    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                           resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _transport_floor(server, calls: int, concurrency: int) -> float:
    """Wall time of the same number of bare client calls (no database): what the machine,
    the loopback server and httpx alone allow right now."""
    from concurrent.futures import ThreadPoolExecutor

    from annotation.core.clients.llm import ChatClient, LlmEndpoint

    client = ChatClient(LlmEndpoint(base_url=server.base_url, model="floor"))
    messages = [{"role": "user", "content": "Response A: one. Response B: two. " * 40}]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(lambda i: client.complete(
            messages + [{"role": "user", "content": str(i)}], temperature=0, max_tokens=16),
            range(calls)))
    client.close()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--comparisons", type=int, default=700)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--processes", type=int, default=os.cpu_count(),
                        help="lane processes, as Celery's prefork pool (default: one per CPU)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--in-process-server", action="store_true")
    args = parser.parse_args()
    _setup_database()
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)
    from judging.judges.models import Judge
    from judging.judges.services import judge_run_execute, judge_run_start
    from tests.support.fake_openai import FakeOpenAIServer

    comparisons = _content(args.comparisons)
    uuids = [c.uuid for c in comparisons]
    calls = 2 * len(uuids)
    ideal = calls * args.latency_ms / 1000 / args.concurrency
    totals, reruns = [], []
    server_cm = (FakeOpenAIServer(latency_ms=args.latency_ms) if args.in_process_server
                 else _ServerProcess(args.latency_ms))
    with server_cm as server:
        floor = _transport_floor(server, calls, args.concurrency)
        print(f"transport floor (bare client calls, no database): {floor:.2f} s "
              f"({floor / ideal:.2f}× ideal)", flush=True)
        for repeat in range(args.repeats):
            judge = Judge.objects.create(
                name="bench-judge", version=f"r{repeat}", kind=Judge.Kind.PAIRWISE,
                base_url=server.base_url, model_name="stand-in", concurrency=args.concurrency,
                max_tokens=256, price_in_per_1k="0.0025", price_out_per_1k="0.01")
            t0 = time.perf_counter()
            run = judge_run_start(judge=judge, item_uuids=uuids, dispatch=False)
            prep = time.perf_counter() - t0
            before = server.call_count
            cpu0 = _cpu_seconds()
            t0 = time.perf_counter()
            run = judge_run_execute(run, concurrency=args.concurrency,
                                    processes=args.processes)
            wall = time.perf_counter() - t0
            cpu = _cpu_seconds() - cpu0
            made = server.call_count - before
            assert run.status == "done" and run.units_done == calls, run.status
            totals.append(prep + wall)
            print(f"repeat {repeat + 1}: {made} calls; start {prep:.2f} s + work {wall:.2f} s "
                  f"= {prep + wall:.2f} s ({(prep + wall) / ideal:.2f}× ideal {ideal:.2f} s); "
                  f"cost {run.cost}; lanes' CPU {cpu:.1f} s; load {os.getloadavg()[0]:.1f}",
                  flush=True)
            before = server.call_count
            t0 = time.perf_counter()
            again = judge_run_start(judge=judge, item_uuids=uuids, dispatch=False)
            again_prep = time.perf_counter() - t0
            again = judge_run_execute(again, concurrency=args.concurrency,
                                      processes=args.processes)
            rerun = time.perf_counter() - t0
            new_calls = server.call_count - before
            assert again.status == "done" and again.units_done == calls, again.status
            reruns.append((rerun, new_calls))
            print(f"          second run of the same judge: {new_calls} new calls, "
                  f"{again.calls_cached} cached; start {again_prep:.2f} s + work "
                  f"{rerun - again_prep:.2f} s = {rerun:.2f} s", flush=True)
    median = statistics.median(totals)
    rerun_times = [r[0] for r in reruns]
    print(f"\n{calls} calls ({args.comparisons} comparisons × 2 orderings), "
          f"{args.latency_ms:.0f} ms latency, concurrency {args.concurrency}")
    print(f"ideal {ideal:.2f} s · start + work: median {median:.2f} s "
          f"({min(totals):.2f}–{max(totals):.2f}) over {len(totals)} repeats · "
          f"ratio {median / ideal:.2f} ({min(totals) / ideal:.2f}–{max(totals) / ideal:.2f}; "
          f"target ≤ 1.25) · {'OK' if median <= 1.25 * ideal else 'MISSED'}")
    print(f"against the transport floor measured above: start + work median "
          f"{median / floor:.2f}× ({min(totals) / floor:.2f}–{max(totals) / floor:.2f}; what the "
          f"database work adds on this machine now)")
    print(f"cached re-run (start included): median {statistics.median(rerun_times):.2f} s "
          f"({min(rerun_times):.2f}–{max(rerun_times):.2f}; target ≤ 2 s) · new calls "
          f"{[r[1] for r in reruns]} (target 0) · "
          f"{'OK' if statistics.median(rerun_times) <= 2 and not any(r[1] for r in reruns) else 'MISSED'}")
    print(f"load average now: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on "
          f"{os.cpu_count()} CPUs (other processes compete for the same cores)")


if __name__ == "__main__":
    main()
