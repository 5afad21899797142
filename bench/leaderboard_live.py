"""Leaderboard views while votes arrive: gunicorn + PostgreSQL + Redis, annotators voting at a
steady rate through the real submit path while an analyst's views are timed.

Usage: eval "$(scripts/services.sh start)"; .venv/bin/python bench/leaderboard_live.py
    [--instances 50000] [--rate 20] [--seconds 60] [--runs 5] [--studies 1] [--reuse]

The database is bench/leaderboard_cache.py's (``--instances 50000``: 1,000,000 human votes,
about 260,000 verdicts of an LLM judge, 15 models); ``--reuse`` keeps the one a previous run
loaded. With ``--studies N`` the deployment holds N studies of that size
(``bench/_studies.py`` copies the first; a database of its own), and the votes and views are
the first study's: its cost should not grow with the others'. A pairwise rating batch over some of its comparisons is opened and ``--rate`` annotators
each submit one vote a second through ``/work/batch/<uuid>/next/`` and the task form, while one
analyst loops over every view of the human board: the page, its JSON and CSV downloads, both
plots, the API and the study's public board. Every view kind is requested once before the votes
start (the cold computation is not what this measures). Prints per view kind p50/p95/max over
the voting window, how far behind the boards served were (the ``X-Board-*`` headers: judgments
and seconds), and the votes acknowledged; with ``--runs N`` the p95 over all views per run and
its median, best and worst. Goal: every view p95 <= 100 ms, never more than 30 s or 1 % behind.
"""
import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _http import Client  # noqa: E402
from load import ACTION, CSRF, _free_port, _wait_for_workers  # noqa: E402

VIEWS = {
    "page": "/eval/leaderboard/",
    "json": "/eval/leaderboard.json",
    "csv": "/eval/leaderboard.csv",
    "ratings.png": "/eval/leaderboard/ratings.png",
    "categories.png": "/eval/leaderboard/categories.png",
    "api": "/api/eval/leaderboard/",
    "study board": "/s/{study}/board/",
}
GOAL_MS, GOAL_SECONDS, GOAL_SHARE = 100.0, 30.0, 0.01


def _setup(instances: int, reuse: bool, studies: int = 1) -> dict:
    """The database (loaded once), its users' sessions and the rating batch."""
    import _studies
    import leaderboard_cache

    leaderboard_cache._setup(reuse, "leaderboard_cache" if studies == 1
                             else f"leaderboard_studies_{studies}")
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import Group, User
    from django.utils.module_loading import import_string

    from judging.models import Comparison, Judgment
    from studies.models import Study

    study = Study.objects.get(slug=settings.DEFAULT_STUDY_SLUG)
    if not reuse:
        print(f"Loaded {leaderboard_cache.build(instances)}", flush=True)
        _studies.add_copies(study, studies - 1)
    Study.objects.filter(pk=study.pk).update(visibility="public")
    store = import_string(settings.SESSION_ENGINE + ".SessionStore")

    def session(name: str, group: str) -> str:
        user, _ = User.objects.get_or_create(username=name)
        user.set_unusable_password()
        user.save()
        user.groups.add(Group.objects.get(name=group))
        s = store()
        s.update({SESSION_KEY: str(user.pk), HASH_SESSION_KEY: user.get_session_auth_hash(),
                  BACKEND_SESSION_KEY: settings.AUTHENTICATION_BACKENDS[-1]})
        s.create()
        return s.session_key

    return {"study": study.slug, "session": session,
            "comparisons": Comparison.objects.filter(instance__study=study),
            "human": Judgment.objects.filter(source="human", study=study),
            "studies": Study.objects.count(), "everyone": Judgment.with_rejected}


def _batch(ctx: dict, votes: int, annotators: int) -> str:
    """A rating batch with room for ``votes`` votes, 5 per comparison."""
    from decimal import Decimal

    from annotation.engine.services.batches import batch_set_status
    from annotation.models import Batch
    from judging.services.comparisons import comparison_batch_create

    per = 5
    comparisons = list(ctx["comparisons"].order_by("-pk")[: votes // per + annotators])
    batch = comparison_batch_create(comparisons=comparisons, title=f"Live votes {time.time():.0f}",
                                    judgments_per_comparison=per, reward=Decimal("0.01"))
    Batch.objects.filter(pk=batch.pk).update(min_seconds=0)  # paced here, not by the form
    batch_set_status(batch, Batch.Status.ACTIVE)
    return str(batch.uuid)


async def _annotator(base: str, session: str, batch: str, period: float, until: float,
                     log: dict) -> None:
    host, port = base.rpartition("//")[2].split(":")
    client = Client(host, int(port), cookies={"sessionid": session})
    page = await client.get(f"/work/batch/{batch}/next/", follow_redirects=True)
    due = time.perf_counter() + period * (0.5 + len(log["votes"]) % 7 / 7)
    while time.perf_counter() < until and (match := ACTION.search(page.text)):
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        due += period
        reply = await client.post(match.group(1), data={
            "choice": "AB"[int(due) % 2], "csrfmiddlewaretoken": CSRF.search(page.text).group(1)})
        if reply.status not in (200, 302):
            log["errors"].append(f"submit {reply.status}")
            break
        log["votes"].append(time.perf_counter())
        page = reply if reply.status == 200 else await client.get(
            f"/work/batch/{batch}/next/", follow_redirects=True)


async def _viewer(base: str, session: str, study: str, until: float, log: dict,
                  gap: float = 0.05) -> None:
    host, port = base.rpartition("//")[2].split(":")
    client = Client(host, int(port), cookies={"sessionid": session})
    while time.perf_counter() < until:
        for kind, path in VIEWS.items():
            t = time.perf_counter()
            reply = await client.get(path.format(study=study))
            log["views"][kind].append(time.perf_counter() - t)
            if reply.status != 200:
                log["errors"].append(f"{kind} {reply.status}")
            behind = reply.headers.get("x-board-judgments-behind")
            if behind is not None:
                log["behind"].append((int(behind),
                                      float(reply.headers["x-board-seconds-behind"])))
            if time.perf_counter() - t > GOAL_MS / 1000:
                log["slow"].append((kind, round((time.perf_counter() - t) * 1000), behind))
            await asyncio.sleep(gap)


def _warm(base: str, session: str, study: str) -> float:
    async def go():
        host, port = base.rpartition("//")[2].split(":")
        client = Client(host, int(port), cookies={"sessionid": session}, timeout=600)
        t = time.perf_counter()
        for path in VIEWS.values():
            reply = await client.get(path.format(study=study))
            assert reply.status == 200, (path, reply.status, reply.text[:300])
        return time.perf_counter() - t
    return asyncio.run(go())


def one_run(ctx: dict, rate: int, seconds: float, workers: int) -> dict:
    from django.db import connections

    batch = _batch(ctx, int(rate * seconds * 1.2), rate)
    annotators = [ctx["session"](f"live{i}", "annotator") for i in range(rate)]
    analyst = ctx["session"]("live-analyst", "analyst")
    judgments, everyone = ctx["human"].count(), ctx["everyone"].count()
    connections.close_all()
    port = _free_port()
    env = {**os.environ, "SESSION_COOKIE_SECURE": "0", "CSRF_COOKIE_SECURE": "0",
           "ALLOWED_HOSTS": "127.0.0.1", "LOG_LEVEL": "WARNING",
           "GUNICORN_TIMEOUT": "600"}  # the cold views before the votes compute for seconds
    server = subprocess.Popen(
        [str(ROOT / ".venv/bin/gunicorn"), "-c", str(ROOT / "config/gunicorn.py"),
         "config.wsgi", "-b", f"127.0.0.1:{port}", "-w", str(workers), "--log-level",
         "warning", "--access-logfile", "/dev/null"], cwd=ROOT, env=env)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_for_workers(server.pid, workers, base)
        cold = _warm(base, analyst, ctx["study"])
        log = {"views": defaultdict(list), "votes": [], "behind": [], "errors": [], "slow": []}

        async def main():
            until = time.perf_counter() + seconds
            await asyncio.gather(
                _viewer(base, analyst, ctx["study"], until, log),
                *(_annotator(base, s, batch, 1.0, until, log) for s in annotators))
        start = time.perf_counter()
        asyncio.run(main())
        wall = time.perf_counter() - start
    finally:
        server.terminate()
        server.wait(timeout=30)
    checked = _check_counts()
    every = [t for times in log["views"].values() for t in times]
    return {"checked": checked, "judgments": judgments, "everyone": everyone, "cold": cold, "wall": wall, "votes": len(log["votes"]),
            "views": log["views"], "p95": _pct(every, 0.95), "behind": log["behind"],
            "slow": log["slow"],
            "errors": log["errors"]}


def _check_counts() -> str:
    """The counts and Elo the boards were folded forward to while votes arrived through
    gunicorn equal a GROUP BY and online Elo over every row in order (not one vote lost or
    counted twice), and so do the page's folded sampling counts."""
    from django.db.models import Count

    from annotation.core import analytic
    from judging import folded_counts, leaderboards, ratings, selectors
    from judging.selectors import RATING_IDS, pairwise_judgments_qs

    time.sleep(folded_counts.SETTLE_SECONDS)  # the last votes folded too
    inputs = leaderboards.pairwise_board_inputs()
    qs = pairwise_judgments_qs()
    grouped = analytic.rows(qs.order_by().values_list(*RATING_IDS).annotate(n=Count("pk")))
    elo = ratings.continue_online_elo({}, analytic.rows(qs.order_by("created_at", "pk")
                                                        .values_list(*RATING_IDS)))
    assert sorted(inputs.counts) == sorted(grouped), "folded counts differ from a GROUP BY"
    assert inputs.elo == elo, "Elo from the state differs from Elo over every row"
    voted = qs.order_by().values_list("comparison__sampling").annotate(
        n=Count("comparison", distinct=True))
    assert selectors.comparison_sampling_counts() == sorted(
        ((m or "unrecorded", n) for m, n in voted), key=lambda x: (-x[1], x[0]))
    return (f"folded counts, Elo and sampling equal every row's ({sum(r[3] for r in grouped):,} "
            f"votes; Elo {'continued' if inputs.continued else 'rebuilt'})")


def _pct(values, q) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] * 1000 if values else float("nan")


def _print_run(n: int, run: dict) -> None:
    print(f"run {n}: {run['judgments']:,} human judgments ({run['everyone']:,} in all "
          f"studies), load avg {os.getloadavg()[0]:.1f}; "
          f"cold views {run['cold']:.1f} s; {run['votes']} votes in {run['wall']:.0f} s "
          f"({run['votes'] / run['wall']:.1f}/s); errors {len(run['errors'])} "
          f"{run['errors'][:3]}")
    for kind, times in run["views"].items():
        print(f"  {kind:<16} n={len(times):4d}  p50 {_pct(times, .5):6.1f} ms  p95 "
              f"{_pct(times, .95):6.1f} ms  max {max(times) * 1000:7.1f} ms")
    behind = run["behind"] or [(0, 0.0)]
    worst_n, worst_s = max(b[0] for b in behind), max(b[1] for b in behind)
    share = worst_n / max(run["judgments"], 1)
    print(f"  behind: median {statistics.median(b[0] for b in behind):.0f} judgments / "
          f"{statistics.median(b[1] for b in behind):.0f} s, worst {worst_n} ({share:.3%}) / "
          f"{worst_s:.0f} s  (goal <= {GOAL_SECONDS:.0f} s and {GOAL_SHARE:.0%})")
    served_current = sum(1 for *_, behind in run["slow"] if behind == "0")
    print(f"  views over {GOAL_MS:.0f} ms: {len(run['slow'])}, of which {served_current} served a "
          f"current board (recomputed in the request or just refreshed)")
    print(f"  all views p95 {run['p95']:.1f} ms; {run['checked']}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=50_000, help="x 20 human votes")
    ap.add_argument("--rate", type=int, default=20, help="votes per second")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--workers", type=int, default=3, help="gunicorn workers")
    ap.add_argument("--studies", type=int, default=1, help="studies of that size")
    ap.add_argument("--reuse", action="store_true")
    args = ap.parse_args()
    if not os.environ.get("TEST_REDIS_URL"):
        sys.exit("Set TEST_REDIS_URL (scripts/services.sh start): the processes share a cache.")
    ctx = _setup(args.instances, args.reuse, args.studies)
    runs = []
    for n in range(1, args.runs + 1):
        runs.append(one_run(ctx, args.rate, args.seconds, args.workers))
        _print_run(n, runs[-1])
    p95 = [r["p95"] for r in runs]
    n = runs[-1]["judgments"]
    print(f"live leaderboard: p95 {statistics.median(p95):.1f} ms (best {min(p95):.1f}, worst "
          f"{max(p95):.1f}, {len(p95)} runs) at {n / 1e6:.1f}M judgments with votes at "
          f"{args.rate}/s (goal <= {GOAL_MS:.0f})"
          + (f"; one of {ctx['studies']} studies, {runs[-1]['everyone'] / 1e6:.1f}M judgments "
             "in all" if ctx["studies"] > 1 else ""))
    if any(r["errors"] for r in runs):
        sys.exit("errors during the runs")


if __name__ == "__main__":
    main()
