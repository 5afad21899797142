"""Majority vs worker-reliability models on simulated crowds with planted truth.

    .venv/bin/python bench/aggregation.py [--votes 100000] [--seeds 3] [--runs 3]

Each crowd: items with five votes each from distinct workers (about 500 votes per worker),
true labels A 45 %, B 45 %, tie 10 %; good workers right 80-95 % of the time; spammers
(0, 20 and 40 % of the workers) answer at random or always "A". Accuracy is the share of
items whose aggregated label equals the planted one; the plain majority's items without a
unique majority get a seeded uniform random label (VisIT-Bench's tie policy). One line per
spammer share with the median over ``--seeds`` crowds, then the spread (min-max), then each
model's fitting time at ``--votes`` votes: wall and CPU time, median of ``--runs`` with
min-max (crowd-kit import excluded), and the machine's load averages before and after, since
wall time on a shared machine depends on its load. Dawid–Skene is crowd-kit's; MACE is the
vectorised EM of ``agreement.statistics.mace`` (crowd-kit's, from one random start, came out
below the majority at 40 % spammers on seed 0: 62 % against 83 %).
"""

from __future__ import annotations

import argparse
import os
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
    print(f"time at {len(crowd.votes):,} votes, 20 % spammers (median of {args.runs}, "
          f"min-max; target <= {TARGET_S:.0f} s per model), load {_load()}:")
    for model in MODELS:
        wall, cpu = [], []
        for _ in range(args.runs):
            t0, c0 = time.perf_counter(), time.process_time()
            fit_worker_model(crowd.votes, model, labels=crowd.labels)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        print(f"  {model}: wall {_spread(wall)}, CPU {_spread(cpu)}", flush=True)
    print(f"load after: {_load()}")


def _spread(seconds: list[float]) -> str:
    return f"{statistics.median(seconds):.2f} s ({min(seconds):.2f}-{max(seconds):.2f})"


def _load() -> str:
    """The 1, 5 and 15 minute load averages (``uptime``'s): wall time on a shared machine
    depends on them, CPU time much less."""
    return "{:.2f}, {:.2f}, {:.2f}".format(*os.getloadavg()) + f" on {os.cpu_count()} CPUs"


if __name__ == "__main__":
    main()
