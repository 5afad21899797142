"""Benchmark of the agreement issue: statistics, metrics and the full report.

    NLTK_DATA=var/nltk_data .venv/bin/python bench/agreement.py [--quick] [--skip-bert]
    NLTK_DATA=var/nltk_data .venv/bin/python bench/agreement.py --only-report [--postgres]
        [--comparisons 160000] [--runs 5] [--cache-runs 5] [--studies 1] [--reuse]

1. Krippendorff's alpha, 100,000 units x 5 coders (``bench/agreement_stats.py``'s data), each
   level, point estimate: target <= 1 s.
2. BLEU-4 + ROUGE-L + METEOR + CIDEr-D on 10,000 pairs (``bench/metrics.py``'s pairs): <= 20 s.
3. BERTScore pairs/s with the offline MiniLM model (2 torch threads).
4. The full report (every section, 1,000 bootstrap rounds, PNG + SVG plots, HTML, CSVs) from a
   fresh database (SQLite file, or PostgreSQL with ``--postgres``) holding 100,000 judgments
   (80,000 human votes on 16,000 comparisons, 2 judges x 10,000 verdicts; ``--comparisons
   160000`` for 1M), lexical metrics cached beforehand. Targets: the report, metrics cached,
   <= 4 s at 100K judgments and <= 30 s at 1M (median of ``--runs``, best-worst beside it);
   peak RSS <= 600 MB (a worker's share of a 2-core, 24 GB machine) for caching the metrics
   from an empty cache (``--cache-runs``) and for the report, as "median (best-worst) over N
   runs". Every run is a fresh Python process (``--measure``): a peak taken after other
   work in the same process would be partly that work's. Caching scores METEOR and ROUGE-L
   in a child process (``agreement.metrics.isolated``), so its figure is the largest total RSS
   of the worker and the child, sampled while they ran (each one's peak, and the two added,
   beside it). With ``--studies N`` (PostgreSQL) the database holds N studies of that size:
   after caching, the first study is copied N-1 times with its cached scores
   (``bench/_studies.py``; a database of its own) and the report is the first study's, so
   its time says whether a study's report grows with the others' data (goal: it does not,
   and stays <= 30 s at 1M each). The database is kept; ``--reuse`` measures it again
   without rebuilding.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
# This file is named like the ``agreement`` package: the project root must come first and the
# bench folder (for agreement_stats / metrics) last, or ``import agreement`` finds this file.
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != BENCH] \
    + [str(BENCH)]

import agreement_stats  # noqa: E402
import metrics as metrics_bench  # noqa: E402

from agreement import metrics, statistics  # noqa: E402

LEXICAL = ("bleu4", "rouge_l", "meteor", "cider_d")


def bench_alpha(units: int) -> None:
    data = agreement_stats.reliability_data(units)
    print(f"1. Krippendorff's alpha, {units:,} units x 5 coders, 10% missing (median of 3)")
    for level in ("nominal", "ordinal", "interval"):
        t, res = agreement_stats.median_time(
            lambda lv=level: statistics.krippendorff_alpha(data, lv, n_boot=0))
        print(f"   {level:9s} alpha={res.alpha:.4f}  {t:.3f} s  "
              f"{'ok' if t <= 1.0 else 'SLOW'} (target <= 1 s)")


def bench_metrics(n: int) -> None:
    cands, refs = metrics_bench.make_pairs(n, seed=0)
    metrics.wordnet()  # loaded once per process, as in a worker
    total = 0.0
    print(f"2. Lexical metrics on {n:,} pairs")
    for name in LEXICAL:
        t0 = time.perf_counter()
        metrics.METRICS[name].fn(cands, refs)
        dt = time.perf_counter() - t0
        total += dt
        print(f"   {name:8s} {dt:6.2f} s")
    print(f"   total    {total:6.2f} s  {'ok' if total <= 20 else 'SLOW'} (target <= 20 s)")


def bench_bert(n: int) -> None:
    import torch

    torch.set_num_threads(2)
    cands, refs = metrics_bench.make_pairs(n, seed=1)
    t0 = time.perf_counter()
    metrics.bertscore(cands[:2], refs[:2])
    load = time.perf_counter() - t0
    t0 = time.perf_counter()
    metrics.bertscore(cands, refs)
    dt = time.perf_counter() - t0
    print(f"3. BERTScore (offline {metrics.FALLBACK_BERT_MODEL}, 2 threads): {n / dt:.1f} pairs/s "
          f"({n} pairs in {dt:.2f} s; model load {load:.2f} s)")


# ---------------------------------------------------------------- the report


def _django(database_url: str, create: bool) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("SECRET_KEY", "bench-agreement-not-secret-" + "x" * 30)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()
    if not create:
        return
    from django.apps import apps
    from django.db import connection

    with connection.schema_editor() as editor:  # tables straight from the models
        for model in apps.get_models():
            if model._meta.managed and not model._meta.proxy:
                editor.create_model(model)


def build_database(n_comparisons: int, votes: int, judged: int, seed: int = 0) -> dict:
    """Synthetic study with bulk_create: 6 models (one the reference) x n/4 instances."""
    from annotation.models import Instance, InstructionFamily
    from judging.models import Comparison, EvalModel, Judgment, Response

    rnd = random.Random(seed)
    n_inst = n_comparisons // 4
    cands, refs = metrics_bench.make_pairs(n_inst * 3, seed=seed)
    strength = {"Reference": 2.0, "M-strong": 1.2, "M-good": 0.6, "M-mid": 0.0, "M-weak": -0.6,
                "M-poor": -1.2}
    models = {n: EvalModel(name=n, family=n.split("-")[-1], is_reference=n == "Reference")
              for n in strength}
    EvalModel.objects.bulk_create(models.values())
    models = {m.name: m for m in EvalModel.objects.all()}
    fams = InstructionFamily.objects.bulk_create(
        [InstructionFamily(name=f"Category {i}") for i in range(10)])
    Instance.objects.bulk_create([
        Instance(family=fams[i % 10], instruction=f"Instruction {i}?", stage="done",
                 reference_status="verified", reference_output=refs[3 * i])
        for i in range(n_inst)], batch_size=2000)
    inst = list(Instance.objects.order_by("pk").values_list("pk", flat=True))
    Response.objects.bulk_create([
        Response(instance_id=pk, model=models[m],
                 text=(refs[3 * i] if m == "Reference" else
                       cands[3 * i + j % 3] + (" more words" * max(0, int(strength[m] * 3)))))
        for i, pk in enumerate(inst) for j, m in enumerate(strength)], batch_size=5000)
    resp = {(i, m): pk for pk, i, m in Response.objects.values_list("pk", "instance_id",
                                                                     "model__name")}
    names = list(strength)
    comps = []
    for pk in inst:
        for _ in range(4):
            a, b = rnd.sample(names, 2)
            comps.append(Comparison(instance_id=pk, response_a_id=resp[(pk, a)],
                                    response_b_id=resp[(pk, b)], swapped=rnd.random() < 0.5))
    Comparison.objects.bulk_create(comps, batch_size=5000)
    rows = list(Comparison.objects.values_list("pk", "response_a__model__name",
                                               "response_b__model__name"))
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    judgments = []
    workers = [f"W{i:03d}" for i in range(200)]
    for n, (pk, a, b) in enumerate(rows):
        p_a = 1 / (1 + 10 ** ((strength[b] - strength[a]) / 1.5))
        for w in rnd.sample(workers, votes):
            judgments.append(Judgment(comparison_id=pk, source="human", annotator=w,
                                      choice="A" if rnd.random() < p_a else "B",
                                      created_at=t0 + timedelta(seconds=len(judgments))))
        if n < judged:
            for judge, noise in (("judge-good", 0.15), ("judge-noisy", 0.35)):
                r = rnd.random()
                choice = "tie" if r < 0.05 else ("A" if (rnd.random() < p_a) != (r < noise)
                                                 else "B")
                judgments.append(Judgment(comparison_id=pk, source=judge, annotator=f"{judge}@1",
                                          choice=choice,
                                          created_at=t0 + timedelta(seconds=len(judgments))))
    Judgment.objects.bulk_create(judgments, batch_size=5000)
    return {"instances": n_inst, "responses": len(resp), "comparisons": len(rows),
            "judgments": len(judgments)}


def _peak_rss_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # KiB on Linux


def _in_child(fn) -> float:
    """Run ``fn`` in a forked process (database connections closed first, so none is shared)
    and return that process's peak RSS in MB."""
    from django.db import connections

    connections.close_all()
    proc = multiprocessing.get_context("fork").Process(target=fn)
    proc.start()
    proc.join()
    if proc.exitcode:
        sys.exit(f"{fn.__name__} failed in its process (exit code {proc.exitcode})")
    return _peak_rss_mb(resource.RUSAGE_CHILDREN)  # the largest child so far


def _database(engine: str, n_comparisons: int, reuse: bool, studies: int = 1
              ) -> tuple[str, bool]:
    """(database URL, whether its tables must be made): a file in the temp folder or a
    PostgreSQL database named after the size, kept so ``--reuse`` measures it again."""
    name = f"bench_agreement_{n_comparisons}" + (f"_studies_{studies}" if studies > 1 else "")
    if engine == "sqlite":
        path = Path(tempfile.gettempdir()) / f"{name}.sqlite3"
        if not reuse:
            path.unlink(missing_ok=True)
        return f"sqlite:///{path}", not reuse
    if reuse:
        server, _, test_db = os.environ["TEST_DATABASE_URL"].rpartition("/")
        return f"{server}/{test_db}_{name}", False
    from _postgres import fresh_database

    return fresh_database(name), True


def measure(phase: str, database_url: str) -> None:
    """One measured run, in the fresh process ``_measured`` started: cache the lexical
    metrics (``metrics``) or build the full report (``report``), then print the seconds it
    took and this process's peak RSS, and its largest child's (the report forks one)."""
    _django(database_url, create=False)
    from agreement.services.metric_scores import LEXICAL_METRICS, metric_scores_ensure
    from agreement.services.reports import report_generate

    t0 = time.perf_counter()
    if phase == "metrics":
        metric_scores_ensure(list(LEXICAL_METRICS))
    else:
        report_generate({"metrics": list(LEXICAL_METRICS), "seed": 0, "bootstrap_rounds": 1000})
    seconds = time.perf_counter() - t0
    print(f"MEASURED {seconds:.3f} {_peak_rss_mb():.1f} "
          f"{_peak_rss_mb(resource.RUSAGE_CHILDREN):.1f}")


def _measured(phase: str, database_url: str) -> tuple[float, float, float, float]:
    """(seconds, peak RSS MB, its children's largest total RSS MB, the largest total RSS of it
    and its children, both sampled every 10 ms) of ``phase`` run in a fresh Python process: a
    peak measured after other work in the same process would be that work's as much as this
    phase's. Sampled from here, so the measured process runs no thread of ours. (Its
    ``RUSAGE_CHILDREN`` peak is no use: a child started by fork inherits the parent's peak.)"""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, __file__, "--measure", phase,
                                 "--database-url", database_url], stdout=out, stderr=err,
                                text=True)
        children = total = 0.0
        while proc.poll() is None:
            own = _tree_rss_mb(proc.pid, children=False)
            tree = _tree_rss_mb(proc.pid)
            children, total = max(children, tree - own), max(total, tree)
            time.sleep(0.01)
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    line = next((ln for ln in stdout.splitlines() if ln.startswith("MEASURED ")), None)
    if proc.returncode or line is None:
        sys.exit(f"measuring {phase} failed (exit code {proc.returncode}):\n{stderr}")
    seconds, peak, _ = map(float, line.split()[1:])
    return seconds, peak, children, total


def _tree_rss_mb(pid: int, children: bool = True) -> float:
    """RSS of ``pid`` and (``children``) all its descendants now, in MB (0 for a process
    already gone; pages a forked child shares with its parent count in both)."""
    total = 0.0
    with suppress(OSError):
        with open(f"/proc/{pid}/status") as f:
            total += next((int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:")), 0) / 1024
        for task in os.listdir(f"/proc/{pid}/task") if children else ():
            with open(f"/proc/{pid}/task/{task}/children") as f:
                total += sum(_tree_rss_mb(int(c)) for c in f.read().split())
    return total


def _spread(values: list[float], fmt: str, unit: str) -> str:
    """"median unit (best-worst unit) over N runs"."""
    return (f"{format(median(values), fmt)} {unit} ({format(min(values), fmt)}-"
            f"{format(max(values), fmt)} {unit}) over {len(values)} runs")


def _peak_line(what: str, peaks: list[float], goal: float = 600) -> str:
    return (f"   peak RSS {what}: {_spread(peaks, '.0f', 'MB')}  "
            f"{'ok' if median(peaks) <= goal else 'OVER'} (goal <= {goal:.0f} MB)")


def _drop_lexical_scores() -> None:
    """Empty the lexical metrics' cache of the measured (default) study, so a caching run
    scores every response again (the copies' scores stay: they are what they would cache)."""
    from agreement.models import MetricScore
    from agreement.services.metric_scores import LEXICAL_METRICS
    from studies.models import default_study_id

    MetricScore.objects.filter(metric__in=list(LEXICAL_METRICS),
                               response__instance__study_id=default_study_id()).delete()


def bench_report(n_comparisons: int, runs: int, cache_runs: int, engine: str, reuse: bool,
                 out_dir: Path | None, studies: int = 1) -> None:
    if studies > 1 and engine != "postgres":
        sys.exit("--studies needs --postgres")
    url, create = _database(engine, n_comparisons, reuse, studies)
    _django(url, create)
    from agreement.models import Report
    from agreement.services.reports import report_write_dir

    print(f"4. Report on {engine} ({os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f})")
    if not reuse:
        def build():
            t0 = time.perf_counter()
            sizes = build_database(n_comparisons, votes=5, judged=n_comparisons * 5 // 8)
            print(f"   built {sizes} in {time.perf_counter() - t0:.1f} s (bulk_create)",
                  flush=True)

        _in_child(build)
        cache_runs = max(cache_runs, 1)  # the report needs the metrics cached
    from django.db import connections

    caching = []
    for i in range(cache_runs):
        if i or reuse:
            _drop_lexical_scores()
        connections.close_all()
        caching.append(_measured("metrics", url))
    if caching:
        print(f"   lexical metrics cached ({', '.join(LEXICAL)}, length, random) in "
              f"{_spread([c[0] for c in caching], '.1f', 's')} (not part of the report time)")
        print(_peak_line("caching the metrics, the worker and its METEOR/ROUGE-L process "
                         "together (sampled every 10 ms; a fresh process per run)",
                         [c[3] for c in caching]))
        print(f"   (the worker {_spread([c[1] for c in caching], '.0f', 'MB')}; its metric "
              f"process {_spread([c[2] for c in caching], '.0f', 'MB')}; the two peaks added, "
              f"an upper bound, as they never run at once at their peaks: "
              f"{_spread([c[1] + c[2] for c in caching], '.0f', 'MB')})")
    if studies > 1 and not reuse:
        import _studies

        from studies.models import Study, default_study_id

        _studies.add_copies(Study.objects.get(pk=default_study_id()), studies - 1)
    if studies > 1:
        from judging.models import Judgment

        print(f"   the first of {studies} studies; {Judgment.objects.count():,} judgments in all")
    connections.close_all()
    reports = [_measured("report", url) for _ in range(runs)]
    times = [r[0] for r in reports]
    report = Report.objects.filter(status=Report.Status.DONE).latest("finished_at")
    c = report.snapshot["counts"]
    target = 4 if c["judgments_used"] <= 100_000 else 30
    print(f"   full report, metrics cached: {_spread(times, '.2f', 's')}  "
          f"{'ok' if median(times) <= target else 'SLOW'} "
          f"(target <= {target} s at {c['judgments_used']:,} judgments); "
          f"{c['items']:,} items, {report.files.count()} files")
    print(_peak_line("of the report (a fresh process per run)", [r[1] for r in reports]))
    print(f"   (its children, the forked statistics one the largest: "
          f"{_spread([r[2] for r in reports], '.0f', 'MB')}; the report and its children, "
          f"sampled every 10 ms: {_spread([r[3] for r in reports], '.0f', 'MB')}; pages a fork "
          f"shares with the report counted in both); load average {os.getloadavg()[0]:.1f}")
    if out_dir:
        report_write_dir(report, out_dir)
        print(f"   written to {out_dir}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10x smaller everywhere")
    ap.add_argument("--skip-bert", action="store_true")
    ap.add_argument("--only-report", action="store_true")
    ap.add_argument("--out", type=Path, default=None, help="Also write the report files here")
    ap.add_argument("--comparisons", type=int, default=None,
                    help="Report size: comparisons x (5 votes + 2 judges on 5/8) judgments "
                         "(16,000 -> 100,000 judgments; 160,000 -> 1M)")
    ap.add_argument("--runs", type=int, default=5,
                    help="Report builds measured (median), each in a fresh process")
    ap.add_argument("--cache-runs", type=int, default=None,
                    help="Metric cachings measured (default: --runs), each in a fresh process "
                         "from an empty cache")
    ap.add_argument("--measure", choices=("metrics", "report"), help=argparse.SUPPRESS)
    ap.add_argument("--database-url", help=argparse.SUPPRESS)
    ap.add_argument("--postgres", action="store_true",
                    help="Build the report on PostgreSQL (TEST_DATABASE_URL's server)")
    ap.add_argument("--studies", type=int, default=1,
                    help="Studies of that size in the database (PostgreSQL); the first's "
                         "report is measured")
    ap.add_argument("--reuse", action="store_true",
                    help="Time the database (and metric cache) a previous run of this size left")
    args = ap.parse_args()
    if args.measure:
        measure(args.measure, args.database_url)
        return
    scale = 10 if args.quick else 1
    if not args.only_report:
        bench_alpha(100_000 // scale)
        bench_metrics(10_000 // scale)
        if not args.skip_bert:
            bench_bert(500 // scale)
    bench_report(args.comparisons or 16_000 // scale, args.runs,
                 args.runs if args.cache_runs is None else args.cache_runs,
                 "postgres" if args.postgres else "sqlite", args.reuse, args.out, args.studies)


if __name__ == "__main__":
    main()
