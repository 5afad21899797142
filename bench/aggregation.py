"""Majority vs worker-reliability models on simulated crowds with planted truth.

    .venv/bin/python bench/aggregation.py [--votes 100000] [--seeds 3] [--runs 3]

Each crowd: items with five votes each from distinct workers (about 500 votes per worker),
true labels A 45 %, B 45 %, tie 10 %; good workers right 80-95 % of the time; spammers
(0, 20 and 40 % of the workers) answer at random or always "A". Accuracy is the share of
items whose aggregated label equals the planted one; the plain majority's items without a
unique majority get a seeded uniform random label (VisIT-Bench's tie policy). One line per
spammer share with the median over ``--seeds`` crowds, then the spread (min-max), then each
model's fitting time at ``--votes`` votes (median of ``--runs``, crowd-kit import excluded;
CPU time beside it, since wall time on a shared machine depends on its load).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agreement.statistics import human_majority  # noqa: E402
from agreement.statistics.crowd_simulation import simulate_crowd  # noqa: E402
from agreement.statistics.worker_models import MODELS, fit_worker_model  # noqa: E402

SHARES = (0.0, 0.2, 0.4)
VOTES_PER_ITEM = 5
TARGET_S = 5.0


def majority_codes(crowd, seed: int) -> np.ndarray:
    by_item: list[list[str]] = [[] for _ in range(len(crowd.truth))]
    for item, _, label in crowd.votes:
        by_item[item].append(label)
    codes = human_majority(by_item, crowd.labels).codes
    draws = np.random.default_rng(seed).integers(len(crowd.labels), size=len(codes))
    return np.where(codes < 0, draws, codes)


def model_codes(crowd, model: str) -> np.ndarray:
    fit = fit_worker_model(crowd.votes, model, labels=crowd.labels)
    order = np.asarray(fit.items)  # items are 0..n-1 in order of first vote
    out = np.empty(len(order), dtype=np.int64)
    out[order] = fit.codes
    return out


def accuracies(n_items: int, share: float, seed: int) -> dict[str, float]:
    crowd = simulate_crowd(n_items, votes_per_item=VOTES_PER_ITEM, spammer_share=share,
                           seed=seed)
    out = {"majority": float((majority_codes(crowd, seed) == crowd.truth).mean())}
    for model in MODELS:
        out[model] = float((model_codes(crowd, model) == crowd.truth).mean())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--votes", type=int, default=100_000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    n_items = args.votes // VOTES_PER_ITEM
    import crowdkit.aggregation  # noqa: F401  (import once, outside the timings)

    print(f"{args.votes:,} votes ({n_items:,} items x {VOTES_PER_ITEM}), "
          f"median of {args.seeds} crowds")
    names = ("majority", *MODELS)
    spreads = []
    for share in SHARES:
        runs = [accuracies(n_items, share, seed) for seed in range(args.seeds)]
        cells = ", ".join(
            f"{name} {100 * statistics.median(r[name] for r in runs):.1f} %" for name in names)
        print(f"{100 * share:.0f} % spammers: {cells}", flush=True)
        spreads.append((share, {n: (min(r[n] for r in runs), max(r[n] for r in runs))
                                for n in names}))
    print("spread (min-max over crowds):")
    for share, spread in spreads:
        cells = ", ".join(f"{n} {100 * lo:.1f}-{100 * hi:.1f} %" for n, (lo, hi) in spread.items())
        print(f"  {100 * share:.0f} % spammers: {cells}")

    crowd = simulate_crowd(n_items, votes_per_item=VOTES_PER_ITEM, spammer_share=0.2, seed=0)
    print(f"time at {len(crowd.votes):,} votes, 20 % spammers (median of {args.runs}; "
          f"target <= {TARGET_S:.0f} s per model):")
    for model in MODELS:
        times, cpu = [], []
        for _ in range(args.runs):
            t0, c0 = time.perf_counter(), time.process_time()
            fit_worker_model(crowd.votes, model, labels=crowd.labels)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        print(f"  {model}: {statistics.median(times):.2f} s "
              f"(min {min(times):.2f}, max {max(times):.2f}; "
              f"CPU {statistics.median(cpu):.2f} s)", flush=True)


if __name__ == "__main__":
    main()
