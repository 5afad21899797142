"""Benchmark the agreement statistics at crowdsourcing scale.

    .venv/bin/python bench/agreement_stats.py [--units 100000] [--boot 1000]

Krippendorff's alpha on 100,000 units x 5 coders (5-point scale, 10% missing,
coders = noisy copies of a latent label so alpha is realistic, ~0.5); target <= 1 s
for a point estimate. Compares the ``krippendorff`` package with our exact
coincidence-matrix version and times the seeded bootstrap CI. Then judge accuracy vs
the majority of 5 human votes on 100,000 comparisons. Every figure is the median of
3 runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import krippendorff  # noqa: E402

from agreement import statistics as st  # noqa: E402
from agreement.statistics import reliability as rel  # noqa: E402

TARGET_S = 1.0


def median_time(fn, runs: int = 3) -> tuple[float, object]:
    times, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def reliability_data(units: int, coders: int = 5, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=units)
    noise = np.clip(truth + rng.integers(-1, 2, size=(coders, units)), 1, 5)
    data = np.where(rng.random((coders, units)) < 0.6, truth, noise).astype(float)
    data[rng.random(data.shape) < 0.1] = np.nan
    return data


def fast_path_alpha(data: np.ndarray, level: str) -> float:
    """The exact coincidence computation each bootstrap resample uses (no package)."""
    codes, values = rel._to_codes(data, level, None)
    return rel._alpha_from(rel._Coincidences(codes, len(values)), level, values)


def bench_alpha(units: int, n_boot: int) -> None:
    data = reliability_data(units)
    print(
        f"Krippendorff's alpha: {units:,} units x {data.shape[0]} coders, 10% missing "
        f"(median of 3; target <= {TARGET_S:.0f} s)"
    )
    print(
        f"  {'level':9} {'alpha':>8} {'package':>9} {'ours':>9} {'fast path':>11} {'bootstrap':>17}"
    )
    for level in ("nominal", "ordinal", "interval"):
        t_pkg, a_pkg = median_time(
            lambda lv=level: krippendorff.alpha(reliability_data=data, level_of_measurement=lv)
        )
        t_ours, res = median_time(lambda lv=level: st.krippendorff_alpha(data, lv, n_boot=0))
        t_fast, a_fast = median_time(lambda lv=level: fast_path_alpha(data, lv))
        t_boot, boot = median_time(
            lambda lv=level: st.krippendorff_alpha(data, lv, n_boot=n_boot, seed=0)
        )
        assert abs(a_pkg - res.alpha) < 1e-9 and abs(a_pkg - a_fast) < 1e-9, (
            a_pkg,
            res.alpha,
            a_fast,
        )
        flag = "ok" if max(t_ours, t_fast) <= TARGET_S else "SLOW"
        lo, hi = boot.ci
        print(
            f"  {level:9} {a_pkg:8.4f} {t_pkg:8.3f}s {t_ours:8.3f}s {t_fast:10.3f}s "
            f"{t_boot:6.2f}s (B={n_boot})  CI [{lo:.4f}, {hi:.4f}]  {flag}"
        )


def bench_accuracy(items: int) -> None:
    rng = np.random.default_rng(1)
    truth = rng.random(items) < 0.5
    votes_np = np.where(rng.random((items, 5)) < 0.75, truth[:, None], ~truth[:, None])
    votes_np = np.where(votes_np, "A", "B")
    votes = votes_np.tolist()
    judge_np = np.where(rng.random(items) < 0.8, np.where(truth, "A", "B"), "tie")
    judge_np = np.where(rng.random(items) < 0.1, np.where(truth, "B", "A"), judge_np)
    judge = judge_np.tolist()
    other = np.where(
        rng.random(items) < 0.7, np.where(truth, "A", "B"), np.where(truth, "B", "A")
    ).tolist()
    print(f"\nAccuracy vs human majority: {items:,} comparisons x 5 votes (median of 3)")
    t_list, res = median_time(lambda: st.accuracy_vs_majority(votes, judge, seed=0))
    t_np, res_np = median_time(lambda: st.accuracy_vs_majority(votes_np, judge_np, seed=0))
    assert res.to_dict() == res_np.to_dict()
    t_cmp, cmp = median_time(lambda: st.compare_judges(votes, judge, other, seed=0))
    print(f"  accuracy_vs_majority  lists {t_list:.3f}s   numpy arrays {t_np:.3f}s")
    print(f"  compare_judges (exact McNemar)  {t_cmp:.3f}s   p = {cmp.p_value:.3g}")
    o = res.overall
    print(
        f"  overall {o.estimate:.4f} (Wilson {o.wilson[0]:.4f}-{o.wilson[1]:.4f}), "
        f"ties excluded {res.overall_ties_excluded.estimate:.4f}, judge ties {res.n_judge_ties:,}"
    )
    for key, lv in res.by_level.items():
        print(
            f"    {key}: n={lv.n_items:6,}  acc={lv.tie_broken.estimate:.4f}  "
            f"ties excluded={lv.ties_excluded.estimate:.4f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=100_000)
    ap.add_argument("--boot", type=int, default=1000)
    args = ap.parse_args()
    bench_alpha(args.units, args.boot)
    bench_accuracy(args.units)


if __name__ == "__main__":
    main()
