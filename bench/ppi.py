"""How many human votes a judge saves: judge-powered (PPI++) boards on simulated studies.

    .venv/bin/python bench/ppi.py               # 200 repetitions (a few minutes on 2 cores)
    .venv/bin/python bench/ppi.py --reps 40     # a quick look

Each repetition is a study with a known truth: 20-40 models (drawn), BT strengths ~ N(0, 0.8),
and a verbosity per model. Every comparison is a random pair whose responses differ in
length by ``verbosity_a - verbosity_b + noise``. Three workers vote on each comparison: a tie
with probability 0.1, else the BT preference, flipped with probability 0.15 (careless
workers). The human estimand is the Bradley-Terry projection of these votes (what human-only
boards converge to), anchored like the boards. Humans vote on ``HUMAN_PER_MODEL * M / 2``
comparisons (all of them in the human-only baseline); each judge gives a verdict on
``JUDGE_FACTOR`` times as many comparisons, those included. A judge with agreement ``q``
returns the human majority with probability ``q`` and otherwise one of the two other
outcomes; the biased judge returns the majority with probability 0.7 and otherwise the
longer response.

Per judge the bench fits the judge-powered board with a fraction of the human votes (a grid
of fractions, the rest becoming judge-only comparisons) and finds, by interpolation in
log-log, the fraction whose median CI width (mean over repetitions of the per-study median)
equals the human-only board's with all votes. Beside it: the bound ``1 - rho^2`` (``rho`` the
correlation of the human and judge residuals on the human-voted comparisons, the quantity
that sets PPI's variance), the coverage of the true ratings by the 95 % CIs at that fraction
and the worst over all fractions, and the share of studies in which every model's true rank
lies in its simultaneous rank-set.

Findings (3 runs of 200 studies, seeds 0 / 1000 / 2000, ~90 s CPU each, 2 shared cores):
at 90 % agreement 50 / 50 / 51 % fewer human votes for the same median CI width (bound
1 - rho^2: 51.6-51.8 % fewer), coverage 94.3-94.8 %; at 80 % 33.5-33.8 % fewer (bound
34.4-34.8 %); at 55 % the board is 3.8-3.9 % narrower than human-only with all votes, never
wider; the long-preferring judge (83 % agreement) saves 29.4-29.8 % with coverage 94.7-94.9 %.
Coverage is >= 93.2 % for every judge at every fraction of the votes (worst: 20 % of the votes,
15 human-voted comparisons per model); the rank-sets hold every true rank in >= 99.5 % of the
studies (simultaneous, so conservative). Without the HC1 factor in ``judging.ppi`` the worst
cell was 92.9 %.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # shared 2-core machine: single-process, single-thread

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # import without Django

from judging import ppi  # noqa: E402
from judging import ratings as R  # noqa: E402

VOTES, TIE, FLIP = 3, 0.1, 0.15
HUMAN_PER_MODEL, JUDGE_FACTOR = 150, 20
FRACTIONS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0)
JUDGES = (("55 %", 0.55), ("70 %", 0.70), ("80 %", 0.80), ("90 %", 0.90),
          ("biased (long)", None))
HEADLINE = "90 %"


class Study:
    """One simulated study: every comparison with its three votes and each judge's verdict."""

    def __init__(self, seed: int):
        rng = np.random.default_rng([seed, 30])
        self.m = m = int(rng.integers(20, 41))
        self.beta = rng.normal(0, 0.8, m)
        verbosity = rng.normal(0, 1, m)
        self.n_human = HUMAN_PER_MODEL * m // 2
        total = self.n_human * JUDGE_FACTOR
        self.a = rng.integers(0, m, total)
        self.b = (self.a + rng.integers(1, m, total)) % m
        longer_a = verbosity[self.a] - verbosity[self.b] + rng.normal(0, 1, total) > 0
        p = 1 / (1 + np.exp(self.beta[self.b] - self.beta[self.a]))
        p_a = (1 - TIE) * ((1 - FLIP) * p + FLIP * (1 - p))  # a worker's vote for A
        u = rng.random((VOTES, total))
        votes = np.where(u < p_a, 1.0, np.where(u < p_a + TIE, 0.5, 0.0))  # A, tie, B
        self.human = votes.mean(0)
        count_a, count_b = (votes == 1).sum(0), (votes == 0).sum(0)
        majority = np.where(count_a >= 2, 1.0, np.where(count_b >= 2, 0.0, 0.5))
        self.judges = {}
        for name, agreement in JUDGES:
            other = (majority + rng.integers(1, 3, total) / 2) % 1.5  # one of the other two
            if agreement is None:
                agree, other = rng.random(total) < 0.7, longer_a.astype(float)
            else:
                agree = rng.random(total) < agreement
            self.judges[name] = np.where(agree, majority, other)
        self.agreement = {k: float((v == majority).mean()) for k, v in self.judges.items()}
        # Truth: the BT projection of the expected human score under the uniform pair design.
        expected = (1 - TIE) * ((1 - FLIP) * p_grid(self.beta) + FLIP * (1 - p_grid(self.beta)))
        expected += TIE / 2
        np.fill_diagonal(expected, 0)
        self.true_beta = R._fit_bt(expected[None] * 1e4, R.RIDGE)[0]

    def true_ratings(self, board_weights):
        return ppi.ELO * (self.true_beta - self.true_beta @ board_weights) + R.INIT

    def true_ranks(self):
        order = np.argsort(-self.true_beta)
        ranks = np.empty(self.m, dtype=int)
        ranks[order] = np.arange(1, self.m + 1)
        return ranks

    def pairs(self, judge: str, n: int):
        """Humans on the first ``n`` comparisons, the judge alone on all the others."""
        f = self.judges[judge]
        labeled = ppi.Pairs(self.a[:n], self.b[:n], f[:n], self.human[:n])
        return labeled, ppi.Pairs(self.a[n:], self.b[n:], f[n:])


def p_grid(beta):
    return 1 / (1 + np.exp(beta[None, :] - beta[:, None]))


def match_weights(study, n_labeled, with_judge_only):
    used = slice(None) if with_judge_only else slice(0, n_labeled)
    w = (np.bincount(study.a[used], minlength=study.m)
         + np.bincount(study.b[used], minlength=study.m)).astype(float)
    return w / w.sum()


def residual_correlation(study, judge):
    """Correlation of ``human - p`` and ``judge - p`` on the human-voted comparisons (``p`` from
    the human-only fit): with N >> n, PPI needs a fraction ``1 - rho^2`` of the votes."""
    labeled, _ = study.pairs(judge, study.n_human)
    beta = R._fit_bt(ppi._wins(labeled, labeled.human, study.m, 1.0)[None], R.RIDGE)[0]
    p = 1 / (1 + np.exp(beta[labeled.b] - beta[labeled.a]))
    return float(np.corrcoef(labeled.human - p, labeled.judge - p)[0, 1])


def covered(board, truth):
    return (board.ci_low <= truth + 1e-9) & (truth <= board.ci_high + 1e-9)


def rank_covered(board, true_ranks, seed):
    best, worst = ppi.rank_sets(board.ratings, board.cov, draws=1000, seed=seed)
    return bool(((best <= true_ranks) & (true_ranks <= worst)).all())


def one_study(seed: int) -> dict:
    s = Study(seed)
    out = {"m": s.m, "agreement": s.agreement}
    full = ppi.bradley_terry_human(s.pairs(JUDGES[0][0], s.n_human)[0], s.m)
    truth = s.true_ratings(match_weights(s, s.n_human, False))
    out["human"] = (float(np.median(full.width)), covered(full, truth).mean(),
                    rank_covered(full, s.true_ranks(), seed))
    truth = s.true_ratings(match_weights(s, s.n_human, True))
    for name, _ in JUDGES:
        out[name] = {"rho": residual_correlation(s, name)}
        for frac in FRACTIONS:
            labeled, unlabeled = s.pairs(name, int(round(frac * s.n_human)))
            board = ppi.bradley_terry_ppi(labeled, unlabeled, s.m)
            out[name][frac] = (float(np.median(board.width)), covered(board, truth).mean(),
                               rank_covered(board, s.true_ranks(), seed), board.lam)
    return out


def fraction_for_width(widths: dict, target: float) -> float:
    """Fraction of the human votes whose mean median width equals ``target`` (log-log
    interpolation on the grid; beyond 1.0 the width is extrapolated as 1/sqrt(votes))."""
    fr = np.array(FRACTIONS)
    w = np.array([widths[f] for f in FRACTIONS])
    if w[-1] > target:
        return float((w[-1] / target) ** 2)
    if w[0] <= target:
        return float(fr[0])
    k = int(np.flatnonzero(w <= target)[0])
    x0, x1, y0, y1 = np.log(fr[k - 1]), np.log(fr[k]), np.log(w[k - 1]), np.log(w[k])
    return float(np.exp(x0 + (np.log(target) - y0) * (x1 - x0) / (y1 - y0)))


def summarise(results):
    target = statistics.fmean(r["human"][0] for r in results)
    rows = {}
    for name, _ in JUDGES:
        widths = {f: statistics.fmean(r[name][f][0] for r in results) for f in FRACTIONS}
        cover = {f: statistics.fmean(r[name][f][1] for r in results) for f in FRACTIONS}
        ranks = {f: statistics.fmean(r[name][f][2] for r in results) for f in FRACTIONS}
        need = fraction_for_width(widths, target)
        at = min(FRACTIONS, key=lambda f: abs(f - need))
        rho2 = statistics.fmean(r[name]["rho"] ** 2 for r in results)
        rows[name] = dict(
            need=need, bound=1 - rho2, width_all=widths[1.0] / target, coverage=cover[at],
            worst=min(cover.values()), worst_at=min(cover, key=cover.get), ranks=ranks[at],
            lam=statistics.fmean(r[name][at][3] for r in results),
            agreement=statistics.fmean(r["agreement"][name] for r in results))
    human = (target, statistics.fmean(r["human"][1] for r in results),
             statistics.fmean(r["human"][2] for r in results))
    return human, rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=200, help="simulated studies")
    parser.add_argument("--seed", type=int, default=0, help="first study's seed")
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error("--reps must be >= 1")
    started, cpu = time.perf_counter(), time.process_time()
    results = [one_study(args.seed + i) for i in range(args.reps)]
    (target, h_cover, h_ranks), rows = summarise(results)
    sizes = [r["m"] for r in results]
    print(f"{args.reps} studies, {min(sizes)}-{max(sizes)} models, {HUMAN_PER_MODEL // 2} "
          f"human-voted comparisons per model ({VOTES} votes each: tie {TIE}, flip {FLIP}), "
          f"judge verdicts on {JUDGE_FACTOR}x as many comparisons.")
    print(f"human-only, all votes: median CI width {target:.1f} Elo, coverage "
          f"{100 * h_cover:.1f} %, rank-sets cover every true rank in {100 * h_ranks:.1f} %\n")
    header = ("judge agreement", "human votes needed", "bound 1-rho^2", "width@100 %",
              "coverage", "worst (@ votes)", "rank-sets", "lambda")
    print(f"{header[0]:<27}" + "".join(f"{h:>19}" for h in header[1:]))
    for name, row in rows.items():
        label = f"{name} (meas. {100 * row['agreement']:.0f} %)"
        print(f"{label:<27}{100 * row['need']:>18.1f}%{100 * row['bound']:>18.1f}%"
              f"{100 * row['width_all']:>18.1f}%{100 * row['coverage']:>18.1f}%"
              f"{100 * row['worst']:>11.1f}% @{100 * row['worst_at']:>3.0f}%"
              f"{100 * row['ranks']:>18.1f}%{row['lam']:>19.2f}")
    print(f"\n(run time {time.perf_counter() - started:.0f} s wall, "
          f"{time.process_time() - cpu:.0f} s CPU)")
    head = rows[HEADLINE]
    print(f"judge-powered: {100 * (1 - head['need']):.0f} % fewer human votes than human-only "
          f"for the same median CI width at 90 % judge agreement "
          f"(coverage {100 * head['coverage']:.1f} %)")


if __name__ == "__main__":
    main()
