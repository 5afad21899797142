"""Library or fast path? Times each re-implementation against the library it stands in for.

    .venv/bin/python bench/library_first.py [--runs 5] [--only alpha,cider,rouge,bt]

Realistic sizes, same inputs for both sides, and both sides timed inside the same run
(interleaved), so the ratio holds even when other jobs share the 2 cores:

* Krippendorff's alpha: bootstrap CI (1,000 rounds) on 1,000 items x 5 anonymous votes
  (``krippendorff_alpha_from_counts``) vs ``krippendorff.alpha(value_counts=...)`` on each
  resample (the same multinomial draws); and the point estimate on 100,000 units x 5 coders.
* CIDEr-D on 1,000 pairs of ~55-word texts vs pycocoevalcap's ``Cider.compute_score``.
* ROUGE-L on 1,000 pairs vs ``rouge_score.RougeScorer(['rougeL'])`` (same tokenizer object).
* Bradley-Terry on 1,000,000 judgments with the bootstrap: our batched Newton vs
  ``scipy.optimize.minimize`` (L-BFGS-B) on the same resampled counts; the library side
  is timed on a few rounds and scaled to 1,000.

Prints the median and the worst of --runs runs per side, and the ratio of the medians.
Each figure checks the two sides agree before it is printed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # import without Django

import krippendorff  # noqa: E402
from scipy.optimize import minimize  # noqa: E402

from agreement import metrics  # noqa: E402
from agreement import statistics as st  # noqa: E402
from agreement.statistics import reliability as rel  # noqa: E402
from judging import ratings as R  # noqa: E402


def _bench_module(name: str):
    """A sibling bench script as a module (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def race(label: str, ours, library, runs: int, scale: float = 1.0) -> tuple[float, float]:
    """Time ``ours()`` and ``library()`` alternately ``runs`` times; print and return the
    medians (the library's times multiplied by ``scale`` when it runs a fraction of the work)."""
    t_ours, t_lib = [], []
    for _ in range(runs):
        for fn, times, k in ((ours, t_ours, 1.0), (library, t_lib, scale)):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * k)
    m_ours, m_lib = statistics.median(t_ours), statistics.median(t_lib)
    note = f" (x{scale:g}, extrapolated)" if scale != 1 else ""
    print(f"  {label}")
    print(f"    ours     median {m_ours:8.3f} s   worst {max(t_ours):8.3f} s")
    print(f"    library  median {m_lib:8.3f} s   worst {max(t_lib):8.3f} s{note}")
    print(f"    library / ours = {m_lib / m_ours:.1f}x")
    return m_ours, m_lib


# ------------------------------------------------------------------ Krippendorff's alpha
def anonymous_votes(items: int, votes: int = 5, seed: int = 0) -> np.ndarray:
    """items x (A, B, tie) vote counts: a latent winner, 70% of votes agree, 5% ties."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, items)
    u = rng.random((items, votes))
    label = np.where(u < 0.7, truth[:, None], np.where(u < 0.95, 1 - truth[:, None], 2))
    return np.stack([(label == c).sum(1) for c in range(3)], axis=1)


def alpha_bootstrap_with_package(table: np.ndarray, n_boot: int, seed: int, level="nominal"):
    """The same CI as ``krippendorff_alpha_from_counts``, every resample scored by the package."""
    values = np.arange(table.shape[1], dtype=float)
    co = rel._Coincidences.from_counts(table)
    profiles = co.counts.toarray()
    rng = np.random.default_rng(seed)
    boots = np.array([
        krippendorff.alpha(value_counts=np.repeat(profiles, w, axis=0), value_domain=values,
                           level_of_measurement=level)
        for draws in rel._multinomial_draws(rng, co.n_units, co.freq / co.freq.sum(), n_boot)
        for w in draws
    ])
    return rel._percentile_ci(boots, 0.95)


def bench_alpha(runs: int) -> None:
    table = anonymous_votes(1_000)
    ours = st.krippendorff_alpha_from_counts(table, n_boot=1000, seed=0)
    lib_ci = alpha_bootstrap_with_package(table, 1000, 0)
    assert np.allclose(ours.ci, lib_ci, atol=1e-12), (ours.ci, lib_ci)
    print(f"Krippendorff's alpha = {ours.alpha:.4f}, CI {ours.ci[0]:.4f}-{ours.ci[1]:.4f}")
    race("bootstrap CI, 1,000 rounds, 1,000 items x 5 anonymous votes (nominal)",
         lambda: st.krippendorff_alpha_from_counts(table, n_boot=1000, seed=0),
         lambda: alpha_bootstrap_with_package(table, 1000, 0), runs)

    data = _bench_module("agreement_stats").reliability_data(100_000)
    codes, values = rel._to_codes(data, "ordinal", None)
    co = rel._Coincidences(codes, len(values))
    assert abs(rel._alpha_from(co, "ordinal", values)
               - krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")) < 1e-9
    race("point estimate, 100,000 units x 5 coders, 5-point ordinal (both from raw data)",
         lambda: rel._alpha_from(rel._Coincidences(*_codes(data)), "ordinal", values),
         lambda: krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal"), runs)


def _codes(data):
    codes, values = rel._to_codes(data, "ordinal", None)
    return codes, len(values)


# ------------------------------------------------------------------------- text metrics
def caption_pairs(n: int) -> tuple[list[str], list[str]]:
    return _bench_module("metrics").make_pairs(n, seed=0)


def bench_cider(runs: int, cands, refs) -> None:
    fast, stock = metrics.cider_d(cands, refs), metrics.cider_d(cands, refs, stock=True)
    assert np.allclose(fast, stock, rtol=1e-9, atol=1e-12)
    print(f"CIDEr-D, {len(cands):,} pairs")
    race("cider_d vs pycocoevalcap Cider.compute_score (same tokenised text)",
         lambda: metrics.cider_d(cands, refs), lambda: metrics.cider_d(cands, refs, stock=True),
         runs)


def bench_rouge(runs: int, cands, refs) -> None:
    from rouge_score.rouge_scorer import RougeScorer

    scorer = RougeScorer(["rougeL"], tokenizer=metrics.rouge_tokenizer())

    def library():
        return [scorer.score(r, c)["rougeL"].fmeasure for c, r in zip(cands, refs, strict=True)]

    assert metrics.rouge_l(cands, refs) == library()
    print(f"ROUGE-L, {len(cands):,} pairs (the same memoised tokenizer on both sides)")
    race("rouge_l (bit-parallel LCS) vs RougeScorer(['rougeL']).score",
         lambda: metrics.rouge_l(cands, refs), library, runs)


# ------------------------------------------------------------------------ Bradley-Terry
def _lbfgs_fit(w: np.ndarray, ridge: float) -> np.ndarray:
    """The same penalised BT likelihood minimised by scipy (as in tests/judging)."""
    def nll(beta):
        p = 1 / (1 + np.exp(beta[None, :] - beta[:, None]))
        grad = ((w + w.T) * p - w).sum(1) + ridge * beta
        return -(w * np.log(p)).sum() + 0.5 * ridge * beta @ beta, grad

    beta = minimize(nll, np.zeros(len(w)), jac=True, method="L-BFGS-B",
                    options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 10_000}).x
    return beta - beta.mean()


def bt_bootstrap_with_scipy(j, rounds: int, seed: int) -> np.ndarray:
    """Point fit + ``rounds`` rounds with the same multinomial count draws as ours."""
    models, wins, ties = R.pair_counts(j)
    weights = R._matches(wins, ties)
    beta = _lbfgs_fit(wins + 0.5 * ties, R.RIDGE)
    cells = R._Cells(wins, ties)
    rng = np.random.default_rng(seed)
    n = int(cells.counts.sum())
    wr = cells.win_matrices(rng.multinomial(n, cells.counts / n, size=rounds))
    samples = np.array([_lbfgs_fit(w, R.RIDGE) for w in wr])
    return R._to_rating(np.vstack([beta, samples]), None, weights)


def bench_bt(runs: int, n: int, rounds: int, lib_rounds: int) -> None:
    rows, _ = _bench_module("ratings").synthetic(n, 40, np.random.default_rng(0))
    j = R.encode(rows)
    _, point, samples = R.bootstrap_bradley_terry(j, rounds=rounds, seed=0)
    lib = bt_bootstrap_with_scipy(j, lib_rounds, 0)
    err = max(np.abs(lib[0] - point).max(), np.abs(lib[1:] - samples[:lib_rounds]).max())
    assert err < 1e-3, err  # Elo points; L-BFGS stops at its own tolerance
    print(f"Bradley-Terry, {n:,} judgments, 40 models, {rounds:,} bootstrap rounds "
          f"(max difference {err:.1e} Elo points)")
    race(f"bootstrap_bradley_terry vs scipy L-BFGS-B per round ({lib_rounds} rounds timed)",
         lambda: R.bootstrap_bradley_terry(j, rounds=rounds, seed=0),
         lambda: bt_bootstrap_with_scipy(j, lib_rounds, 0), runs, scale=rounds / lib_rounds)
    models, wins, ties = R.pair_counts(j)
    race("point fit only (bradley_terry_from_counts vs one L-BFGS-B fit)",
         lambda: R.bradley_terry_from_counts(wins, ties),
         lambda: _lbfgs_fit(wins + 0.5 * ties, R.RIDGE), runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="alpha,cider,rouge,bt")
    ap.add_argument("--pairs", type=int, default=1_000)
    ap.add_argument("--judgments", type=int, default=1_000_000)
    ap.add_argument("--bt-lib-rounds", type=int, default=20)
    args = ap.parse_args()
    only = set(args.only.split(","))
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
          f"{args.runs} runs per side, interleaved\n")
    if "alpha" in only:
        bench_alpha(args.runs)
    if only & {"cider", "rouge"}:
        cands, refs = caption_pairs(args.pairs)
        words = sum(len(t.split()) for t in cands + refs) / (2 * len(cands))
        print(f"\n{len(cands):,} caption pairs, mean {words:.1f} words per text")
        if "cider" in only:
            bench_cider(args.runs, cands, refs)
        if "rouge" in only:
            bench_rouge(args.runs, cands, refs)
    if "bt" in only:
        print()
        bench_bt(args.runs, args.judgments, 1000, args.bt_lib_rounds)


if __name__ == "__main__":
    main()
