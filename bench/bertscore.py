"""BERTScore on real mixed-length answers: ours (length-batched, per-pair, cached) against
``bert_score``'s BERTScorer in its default order, in the same process and run.

Pairs: VisIT-Bench's GPT-4 predictions against the instances' reference outputs
(``../shared/data/visit_bench``), repeated to --pairs. Prints the model load (first and
again), pairs/s of each way (median of --runs, with spread), their ratio, the largest
difference from ``bert_score`` scoring each pair alone and from its default batches, and a
repeated call on the same pairs (the cache).

    .venv/bin/python bench/bertscore.py [--pairs 300] [--runs 3]
"""
from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data" / "visit_bench" / "visit_bench_multi_images.csv"


def pairs(n: int) -> tuple[list[str], list[str]]:
    rows = [r for r in csv.DictReader(DATA.open(encoding="utf-8"))
            if r["gpt4_prediction"].strip() and r["reference_output"].strip()]
    cands = [r["gpt4_prediction"] for r in rows]
    refs = [r["reference_output"] for r in rows]
    # Repeats get a distinct suffix so neither side can reuse a previous pair's embedding.
    out_c, out_r = [], []
    for i in range(n):
        k, lap = i % len(rows), i // len(rows)
        out_c.append(cands[k] + (f" ({lap})" if lap else ""))
        out_r.append(refs[k] + (f" ({lap})" if lap else ""))
    return out_c, out_r


def spread(values: list[float]) -> str:
    return (f"median {statistics.median(values):.1f} (min {min(values):.1f}, "
            f"max {max(values):.1f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(2)
    from agreement import bertscore_engine, metrics

    cands, refs = pairs(args.pairs)
    words = statistics.median(len(c.split()) for c in cands)
    print(f"{len(cands)} pairs (candidate median {words:.0f} words, longest "
          f"{max(len(c.split()) for c in cands)}), load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs")
    t = time.perf_counter()
    metrics.bertscore(cands[:1], refs[:1])
    first = time.perf_counter() - t
    t = time.perf_counter()
    metrics.bertscore(cands[1:2], refs[1:2])
    again = time.perf_counter() - t
    print(f"model load: first call {first:.2f} s (imports + weights), next call {again:.3f} s")
    model, layers = metrics.resolve_bert_model()
    scorer = metrics.bert._bert_scorer(model, layers, 64)

    theirs, ours, theirs_values, our_values = [], [], None, None
    for _ in range(args.runs):
        t = time.perf_counter()
        _, _, f1 = scorer.score(cands, refs)
        theirs.append(len(cands) / (time.perf_counter() - t))
        theirs_values = f1.tolist()
        bertscore_engine.cache_clear()
        t = time.perf_counter()
        our_values = metrics.bertscore(cands, refs)
        ours.append(len(cands) / (time.perf_counter() - t))
    t = time.perf_counter()
    metrics.bertscore(cands, refs)
    cached = time.perf_counter() - t
    alone = [float(scorer.score([c], [r])[2]) for c, r in zip(cands[:40], refs[:40], strict=False)]
    ratios = [o / b for o, b in zip(ours, theirs, strict=False)]
    print(f"bert_score (default batches) pairs/s: {spread(theirs)}")
    print(f"ours (length-batched)       pairs/s: {spread(ours)}")
    print(f"ratio ours / bert_score: median {statistics.median(ratios):.2f} "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f})")
    print(f"largest |ours - bert_score per pair alone| over 40 pairs: "
          f"{max(abs(a - b) for a, b in zip(our_values, alone, strict=False)):.1e}")
    print(f"largest |ours - bert_score default batches| over {len(cands)} pairs: "
          f"{max(abs(a - b) for a, b in zip(our_values, theirs_values, strict=False)):.1e} "
          "(bert_score's batched values depend on their batch: see bertscore_engine._match)")
    print(f"repeated call on the same {len(cands)} pairs: {cached:.3f} s "
          f"({cached / len(cands) * 1000:.3f} s per 1K)")


if __name__ == "__main__":
    main()
