"""Benchmark of the agreement issue: statistics, metrics and the full report.

    NLTK_DATA=var/nltk_data .venv/bin/python bench/agreement.py [--quick] [--skip-bert]

1. Krippendorff's alpha, 100,000 units x 5 coders (``bench/agreement_stats.py``'s data), each
   level, point estimate: target <= 1 s.
2. BLEU-4 + ROUGE-L + METEOR + CIDEr-D on 10,000 pairs (``bench/metrics.py``'s pairs): <= 20 s.
3. BERTScore pairs/s with the offline MiniLM model (2 torch threads).
4. The full report (every section, 1,000 bootstrap rounds, PNG + SVG plots, HTML, CSVs) from a
   fresh SQLite file holding 100,000 judgments (80,000 human votes on 16,000 comparisons, 2 judges
   x 10,000 verdicts), lexical metrics cached beforehand: target <= 30 s.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

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
        metrics.METRICS[name](cands, refs)
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


# ---------------------------------------------------------------- the report on SQLite


def _django(db_path: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{db_path}"
    os.environ.setdefault("SECRET_KEY", "bench-agreement-not-secret-" + "x" * 30)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()
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


def bench_report(n_comparisons: int, out_dir: Path | None) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-agreement-") as tmp:
        _django(Path(tmp) / "bench.sqlite3")
        from agreement.services.metric_scores import LEXICAL_METRICS, metric_scores_ensure
        from agreement.services.reports import report_generate, report_write_dir

        t0 = time.perf_counter()
        sizes = build_database(n_comparisons, votes=5, judged=n_comparisons * 5 // 8)
        t_build = time.perf_counter() - t0
        print(f"4. Report on SQLite: built {sizes} in {t_build:.1f} s (bulk_create)")
        t0 = time.perf_counter()
        metric_scores_ensure(list(LEXICAL_METRICS))
        print(f"   metrics cached ({', '.join(LEXICAL_METRICS)}) in "
              f"{time.perf_counter() - t0:.1f} s (not part of the report time)")
        t0 = time.perf_counter()
        report = report_generate({"metrics": list(LEXICAL_METRICS), "seed": 0,
                                  "bootstrap_rounds": 1000})
        dt = time.perf_counter() - t0
        c = report.snapshot["counts"]
        print(f"   full report: {dt:.1f} s  {'ok' if dt <= 30 else 'SLOW'} (target <= 30 s); "
              f"{c['judgments_used']:,} judgments, {c['items']:,} items, "
              f"{report.files.count()} files")
        if out_dir:
            report_write_dir(report, out_dir)
            print(f"   written to {out_dir}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10x smaller everywhere")
    ap.add_argument("--skip-bert", action="store_true")
    ap.add_argument("--only-report", action="store_true")
    ap.add_argument("--out", type=Path, default=None, help="Also write the report files here")
    args = ap.parse_args()
    scale = 10 if args.quick else 1
    if not args.only_report:
        bench_alpha(100_000 // scale)
        bench_metrics(10_000 // scale)
        if not args.skip_bert:
            bench_bert(500 // scale)
    bench_report(16_000 // scale, args.out)


if __name__ == "__main__":
    main()
