"""Benchmark judging.ratings on synthetic judgments drawn from a known Bradley-Terry model.

    .venv/bin/python bench/ratings.py           # 1,000,000 judgments, 40 models, 1,000 rounds
    .venv/bin/python bench/ratings.py --quick   # 50,000 judgments, 200 rounds

    TEST_DATABASE_URL=postgres://... .venv/bin/python bench/ratings.py --from-db 10000000
        [--reuse] [--repeats 5]   # from PostgreSQL: 10M verdicts loaded with SQL (kept)

Targets (2-core machine): online Elo on 1M judgments <= 1 s; BT + 1,000 bootstrap rounds
<= 3 s; at 10M (``--n 10000000``) both <= 3 s from raw rows (the tuples a cursor returns:
names and outcomes, not yet encoded). From the database (``--from-db``, read included), with a
board's state (``judging.elo_state``: counts and online Elo folded forward, checked by the
source's count and id sum) and 1,000 verdicts cast just before each run: BT + 1,000 rounds
from the state's counts <= 3 s; online Elo from its state <= 5 s. The state built from nothing
(a GROUP BY and every row in order) and BT from one GROUP BY are timed once beside them, and
every value is checked equal to the every-row path. ``--reuse`` times the database a previous run of that size
loaded (each run appends 1,000 verdicts per timed Elo and board run). Every timing is the
median of --repeats runs (wall clock), with the best and the worst. Baselines: the
FastChat-style pure-Python Elo loop over the raw rows, and a naive bootstrap that
resamples rows and refits each round with scipy L-BFGS (a few rounds, extrapolated).
"""

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import minimize
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # import without Django

from judging import ratings as R  # noqa: E402


def synthetic(n, m, rng, spread=150.0, tie_strength=0.4):
    """Judgments whose expected score (ties = 1/2) is exactly the BT win probability p:
    P(tie) = 2*t*p*(1-p), P(A) = p - P(tie)/2, P(B) = 1 - p - P(tie)/2."""
    true = rng.normal(0, spread, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    p = 1 / (1 + 10 ** ((true[b] - true[a]) / 400))
    tie = 2 * tie_strength * p * (1 - p)
    u = rng.random(n)
    outcome = np.where(u < p - tie / 2, "A", np.where(u < p + tie / 2, "tie", "B"))
    names = np.array([f"vlm-{i:02d}" for i in range(m)])
    rows = list(zip(names[a].tolist(), names[b].tolist(), outcome.tolist(), strict=True))
    return rows, dict(zip(names.tolist(), true.tolist(), strict=True))


class Seconds(float):
    """A median that remembers the best and the worst run it came from."""

    def __new__(cls, runs):
        out = super().__new__(cls, statistics.median(runs))
        out.best, out.worst, out.n = min(runs), max(runs), len(runs)
        return out


def timed(fn, repeats):
    """(median wall seconds, median CPU seconds, last result). CPU time is shown because on
    a busy machine it is the better guess of the unloaded wall time (single-threaded code)."""
    wall, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return Seconds(wall), statistics.median(cpu), out


def report(label, wall, cpu, note=""):
    spread = (f" ({wall.best:.3f}-{wall.worst:.3f}, n={wall.n})"
              if isinstance(wall, Seconds) and wall.n > 1 else "")
    print(f"  {label:<44} {wall:8.3f} s wall{spread} {cpu:8.3f} s CPU  {note}")


def verdict(wall, target, n):
    if n < 1_000_000:
        return "(target applies to the full-size run)"
    return "within target" if wall <= target else f"OVER the {target:g} s target"


def raw_target(n):
    """From raw rows: online Elo <= 1 s at 1M; online Elo and BT + 1,000 rounds <= 3 s at 10M."""
    return 3.0 if n >= 10_000_000 else 1.0


def naive_elo(rows, k=4, scale=400, base=10, init=1000):
    """FastChat's compute_elo loop, as commonly copied."""
    rating = {}
    for model_a, model_b, winner in rows:
        ra, rb = rating.get(model_a, init), rating.get(model_b, init)
        ea = 1 / (1 + base ** ((rb - ra) / scale))
        eb = 1 / (1 + base ** ((ra - rb) / scale))
        sa = 1.0 if winner == "A" else 0.0 if winner == "B" else 0.5
        rating[model_a] = ra + k * (sa - ea)
        rating[model_b] = rb + k * (1 - sa - eb)
    return rating


def naive_bootstrap_round(j, rng):
    """Row-resampling bootstrap round: resample 1M rows, recount, refit with L-BFGS."""
    idx = rng.integers(0, len(j), len(j))
    _, wins, ties = R.pair_counts(R.Judgments(j.models, j.a[idx], j.b[idx], j.outcome[idx]))
    w = wins + 0.5 * ties

    def nll(beta):
        p = 1 / (1 + np.exp(beta[None, :] - beta[:, None]))
        grad = ((w + w.T) * p - w).sum(1) + R.RIDGE * beta
        return -(w * np.log(p)).sum() + 0.5 * R.RIDGE * beta @ beta, grad

    return minimize(nll, np.zeros(len(j.models)), jac=True, method="L-BFGS-B").x


def recovery(est, true, weights):
    """Spearman rho and max |error| after putting the truth on the same anchor."""
    shift = np.average(est, weights=weights) - np.average(true, weights=weights)
    return spearmanr(est, true)[0], np.abs(est - true - shift).max()


# ---------------------------------------------------------------- from database rows


def _django_postgres(n: int, m: int, reuse: bool, seed: int) -> None:
    """Django on a PostgreSQL database holding ``n`` human verdicts on ``m`` models, loaded
    here with INSERT ... SELECT generate_series (kept, so ``--reuse`` times it again)."""
    server, _, test_db = os.environ.get("TEST_DATABASE_URL", "").rpartition("/")
    name = f"ratings_{n}"
    if reuse:
        os.environ["DATABASE_URL"] = f"{server}/{test_db}_{name}"
    else:
        from _postgres import fresh_database

        os.environ["DATABASE_URL"] = fresh_database(name)
    os.environ.update(SECRET_KEY="bench-only", DJANGO_SETTINGS_MODULE="config.settings",
                      DEBUG="0")
    os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)  # a kept database gets this code's indexes too
    if reuse:
        return
    t0 = time.perf_counter()
    _load(n, m, seed)
    print(f"loaded {n:,} verdicts in {time.perf_counter() - t0:.0f} s", flush=True)


def _load(n: int, m: int, seed: int, instances: int = 2_000, comparisons: int = 200_000) -> None:
    """Models with strengths spread like ``synthetic``'s, one response each per instance,
    random comparisons, and verdicts drawn from the BT model (ties as there), one per second."""
    from django.db import connection

    from annotation.models import Instance, InstructionFamily
    from judging.models import EvalModel
    from studies.models import default_study_id

    rng = np.random.default_rng(seed)
    study = default_study_id()
    EvalModel.objects.bulk_create([EvalModel(name=f"vlm-{i:02d}") for i in range(m)])
    family = InstructionFamily.objects.create(name="Category")
    Instance.objects.bulk_create([Instance(family=family, instruction=f"Instruction {i}?",
                                           stage="done") for i in range(instances)])
    ids = np.array(EvalModel.objects.order_by("name").values_list("pk", flat=True))
    strength = rng.normal(0, 150.0, m)
    a = rng.integers(0, m, comparisons)
    b = (a + rng.integers(1, m, comparisons)) % m
    p = 1 / (1 + 10 ** ((strength[b] - strength[a]) / 400))
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO judging_response (uuid, instance_id, model_id, turn, condition, text, "
            "created_at) SELECT gen_random_uuid(), i.id, m.id, 0, 'generated', 'text', now() "
            "FROM annotation_instance i CROSS JOIN judging_evalmodel m")
        cursor.execute("CREATE TEMP TABLE plan (k int, model_a int, model_b int, p float8)")
        with cursor.copy("COPY plan FROM STDIN") as copy:
            for row in zip(range(comparisons), ids[a].tolist(), ids[b].tolist(), p.tolist(),
                           strict=True):
                copy.write_row(row)
        first_instance = Instance.objects.order_by("pk").values_list("pk", flat=True)[0]
        cursor.execute(
            "INSERT INTO judging_comparison (uuid, instance_id, response_a_id, response_b_id, "
            "swapped, sampling, gold_choice, created_at) SELECT gen_random_uuid(), ra.instance_id, "
            "ra.id, rb.id, false, '', '', now() FROM plan JOIN judging_response ra ON "
            "ra.model_id = plan.model_a AND ra.instance_id = %s + plan.k %% %s "
            "JOIN judging_response rb ON rb.model_id = plan.model_b "
            "AND rb.instance_id = ra.instance_id ORDER BY plan.k", [first_instance, instances])
        cursor.execute("CREATE TEMP TABLE cmp AS SELECT k, c.id, p FROM (SELECT id, row_number() "
                       "OVER (ORDER BY id) - 1 AS k FROM judging_comparison) c JOIN plan USING (k)")
        cursor.execute("CREATE INDEX ON cmp (k)")
        cursor.execute("SELECT setseed(%s)", [seed / 1000])
        step = 1_000_000
        for start in range(0, n, step):
            cursor.execute(
                "INSERT INTO judging_judgment (uuid, comparison_id, source, annotator, kind, "
                "choice, feedback, turn, meta, template_version, prompt_hash, import_file, rejected, "
                "created_at, study_id) SELECT gen_random_uuid(), cmp.id, 'human', 'w' || g %% 300, "
                "'pairwise', CASE WHEN u < p - p * (1 - p) * 0.4 THEN 'A' "
                "WHEN u < p + p * (1 - p) * 0.4 THEN 'tie' ELSE 'B' END, '', '', '{}', '', '', "
                "'', false, timestamptz '2026-01-01' + g * interval '1 second', %s "
                "FROM (SELECT g, random() AS u FROM generate_series(%s, %s) g) s "
                "JOIN cmp ON cmp.k = s.g %% %s",
                [study, start, min(n, start + step) - 1, comparisons])
            print(f"  {min(n, start + step):,} verdicts", flush=True)
        cursor.execute("VACUUM ANALYZE judging_judgment")
        cursor.execute("VACUUM ANALYZE judging_comparison")
        cursor.execute("VACUUM ANALYZE judging_response")


def _runs(fn, repeats, before=None):
    """(Seconds over ``repeats`` wall-clock runs of ``fn``, its last result); ``before`` runs
    untimed before each."""
    walls, out = [], None
    for _ in range(repeats):
        if before:
            before()
        t = time.perf_counter()
        out = fn()
        walls.append(time.perf_counter() - t)
    return Seconds(walls), out


def _line(label, wall, target=None):
    note = "" if target is None else (
        "within target" if wall <= target else f"OVER the {target:g} s target")
    print(f"  {label:<54} {wall:7.2f} s ({wall.best:.2f}-{wall.worst:.2f}, n={wall.n})  {note}",
          flush=True)


def bench_from_database(n: int, m: int, rounds: int, repeats: int, reuse: bool,
                        seed: int, appended: int = 1000) -> None:
    """What a board computes, timed from the database to the result: Bradley-Terry + bootstrap
    from counts grouped by PostgreSQL, online Elo from its state (``judging.elo_state``: the
    same GROUP BY checks the state, then only the verdicts appended since are read) and from
    every row (a cold state), and the whole board. Values are checked equal to the every-row
    path: BT to the bit, Elo to the bit."""
    _django_postgres(n, m, reuse, seed)
    from _postgres import cast_votes_now
    from django.core.cache import cache

    from annotation.core import analytic
    from judging import folded_counts
    from judging.leaderboards import leaderboard_build, pairwise_board_inputs
    from judging.selectors import (
        RATING_IDS,
        counted_pairs,
        encoded_rows,
        pairwise_counts,
        pairwise_judgments_qs,
    )

    def read_rows():
        return encoded_rows(analytic.rows(pairwise_judgments_qs()
                                          .order_by("created_at", "pk").values_list(*RATING_IDS)))

    def bt_from_counts():
        return R.bootstrap_bradley_terry_from_counts(*pairwise_counts(), rounds=rounds,
                                                     seed=seed)

    def bt_from_state():
        return R.bootstrap_bradley_terry_from_counts(
            *counted_pairs(pairwise_board_inputs().counts), rounds=rounds, seed=seed)

    def append():
        cast_votes_now(appended)
        time.sleep(folded_counts.SETTLE_SECONDS)  # the previous run's new verdicts are settled

    print(f"From the database (PostgreSQL, {n:,} human verdicts, {m} models); load avg "
          f"{os.getloadavg()[0]:.1f} (1 min), {os.cpu_count()} CPUs; seconds wall clock, read "
          f"included: median (best-worst, n runs)")
    wall, cold = _runs(pairwise_board_inputs, 1, before=cache.clear)
    assert not cold.continued
    _line("counts + online Elo, no state: GROUP BY + every row", wall)
    wall, bt = _runs(bt_from_state, repeats, before=append)
    _line(f"BT + {rounds} rounds from the counts state, {appended:,} new", wall, 3.0)
    wall, warm = _runs(pairwise_board_inputs, repeats, before=append)
    assert warm.continued
    _line(f"online Elo from its state: check + {appended:,} new rows", wall, 5.0)
    wall, board = _runs(lambda: leaderboard_build(bootstrap_rounds=rounds, seed=seed), repeats,
                        before=append)
    _line(f"whole board (leaderboard_build), {appended:,} new rows each", wall)
    wall, _ = _runs(bt_from_counts, 1)
    _line(f"BT + {rounds} rounds from one GROUP BY of every verdict", wall)
    print(f"  load avg after: {os.getloadavg()[0]:.1f}")

    every_row = read_rows()
    elo = R.online_elo(analytic.rows(pairwise_judgments_qs().order_by("created_at", "pk")
                                     .values_list(*RATING_IDS)))
    assert pairwise_board_inputs().elo == elo, "Elo from state differs from every row's"
    print("  values: Elo from the state equals online Elo over every row in order, bit for bit")
    wall, from_rows = _runs(lambda: R.bootstrap_bradley_terry(read_rows(), rounds=rounds,
                                                              seed=seed), 1)
    _line(f"BT + {rounds} rounds, every row read (baseline)", wall)
    bt = bt_from_state()
    for other in (from_rows, bt_from_counts()):
        assert bt[0] == other[0] and all(np.array_equal(x, y) for x, y in zip(
            bt[1:], other[1:], strict=True)), "BT differs between the reads"
    rows = {r.model: r for r in R.leaderboard(every_row, bootstrap_rounds=rounds, seed=seed)}
    board = leaderboard_build(bootstrap_rounds=rounds, seed=seed)
    assert all(rows[r["model"]].bt_rating == r["rating"] and rows[r["model"]].elo == r["elo"]
               and rows[r["model"]].ci_low == r["ci_low"] for r in board.rows), "board differs"
    print("  values: BT from the counts state equals BT from a GROUP BY and from every row, "
          "and the board equals "
          "ratings.leaderboard over every row, bit for bit")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="50k judgments, 200 rounds")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--models", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--from-db", type=int, metavar="N", default=None,
                    help="Time from PostgreSQL rows instead (N verdicts, e.g. 10000000; needs "
                         "TEST_DATABASE_URL)")
    ap.add_argument("--reuse", action="store_true",
                    help="With --from-db: time the database a previous run of that size loaded")
    args = ap.parse_args()
    if args.from_db:
        bench_from_database(args.from_db, args.models, args.rounds or 1000, args.repeats,
                            args.reuse, args.seed)
        return
    n = args.n or (50_000 if args.quick else 1_000_000)
    rounds = args.rounds or (200 if args.quick else 1000)
    rng = np.random.default_rng(args.seed)
    print(f"{n:,} judgments, {args.models} models, {rounds} bootstrap rounds, "
          f"{os.cpu_count()} CPUs, load avg {os.getloadavg()[0]:.1f}, "
          f"timings are medians of {args.repeats}")

    rows, true = synthetic(n, args.models, rng)
    t_enc, c_enc, j = timed(lambda: R.encode(rows), args.repeats)
    t_elo, c_elo, elo = timed(lambda: R.online_elo(j), args.repeats)
    t_raw, c_raw, _ = timed(lambda: R.online_elo(rows), args.repeats)
    t_naive, c_naive, naive = timed(lambda: naive_elo(rows), 1)
    assert all(math.isclose(elo[m], naive[m], abs_tol=1e-6) for m in elo), "Elo mismatch"
    print("online Elo (targets: 1M judgments <= 1 s; 10M from raw rows <= 3 s)")
    report("encode rows -> int arrays", t_enc, c_enc)
    report("online_elo, pre-encoded", t_elo, c_elo)
    report("online_elo, raw rows (no encoding)", t_raw, c_raw, verdict(t_raw, raw_target(n), n))
    report("baseline: FastChat pure-Python loop", t_naive, c_naive,
           f"x{c_naive / c_elo:.1f} vs pre-encoded, x{c_naive / c_raw:.1f} vs raw rows (CPU)")

    t_bt, c_bt, (models, point, samples) = timed(
        lambda: R.bootstrap_bradley_terry(j, rounds=rounds, seed=args.seed), args.repeats)
    k = 3
    t_row, c_row, _ = timed(lambda: [naive_bootstrap_round(j, rng) for _ in range(k)], 1)
    scale = 1000 / k
    print(f"Bradley-Terry + {rounds} bootstrap rounds (targets, 1,000 rounds: 1M judgments <= "
          "3 s; 10M from raw rows <= 3 s)")
    report(f"fit + {rounds} multinomial-count rounds", t_bt, c_bt,
           verdict(t_bt, 3.0, n if rounds >= 1000 and n < 10_000_000 else 0))
    t_btr, c_btr, raw_bt = timed(
        lambda: R.bootstrap_bradley_terry(rows, rounds=rounds, seed=args.seed), args.repeats)
    assert raw_bt[0] == models and np.array_equal(raw_bt[1], point) and np.array_equal(
        raw_bt[2], samples), "BT from raw rows differs from BT from encoded rows"
    report("the same from raw rows (distinct triples counted)", t_btr, c_btr,
           verdict(t_btr, 3.0, n if rounds >= 1000 and n >= 10_000_000 else 0)
           + "; equal to the encoded rows' bit for bit")
    report("baseline: row resampling + L-BFGS, x1000", t_row * scale, c_row * scale,
           f"extrapolated from {k} rounds; x{c_row * scale / c_bt * rounds / 1000:.0f} slower "
           "per round (CPU)")
    t_lb, c_lb, _ = timed(lambda: R.leaderboard(j, reference=models[0],
                                                bootstrap_rounds=rounds, seed=args.seed), 1)
    report("leaderboard() end to end, pre-encoded", t_lb, c_lb)

    truth = np.array([true[m] for m in models])
    weights = np.array([R.matches_per_model(j)[m] for m in models])
    lo, hi = np.percentile(samples, [2.5, 97.5], axis=0)
    rho, err = recovery(point, truth, weights)
    print("Recovery of the true strengths")
    print(f"  BT:  Spearman rho {rho:.4f}, max abs error {err:.2f} Elo points, "
          f"mean CI width {np.mean(hi - lo):.1f}")
    shift = np.average(point, weights=weights) - np.average(truth, weights=weights)
    cover = np.mean((lo <= truth + shift) & (truth + shift <= hi))
    print(f"       95% CI covers the truth for {cover:.0%} of models")
    rho_e, err_e = recovery(np.array([elo[m] for m in models]), truth, weights)
    print(f"  Elo: Spearman rho {rho_e:.4f}, max abs error {err_e:.2f} Elo points "
          f"(online Elo with K=4 lags and depends on order)")


if __name__ == "__main__":
    main()
