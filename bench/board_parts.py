"""What one refresh of a live board costs, part by part, at 1M human votes: built from nothing
(the cache emptied: a GROUP BY over every vote, what every refresh of these parts did before
their counts were folded forward; the pairwise board's online Elo then also reads every row,
where before it continued from its state) and folded forward over the votes of one refresh
period (what a refresh does now).

Usage: eval "$(scripts/services.sh start)"; .venv/bin/python bench/board_parts.py [--runs 5]
    [--new 200]

The database is bench/leaderboard_cache.py's (kept: run that, or bench/leaderboard_live.py,
once without ``--reuse``). Each "folded" run first casts ``--new`` human votes just now (10 s
of votes at 20/s) and waits until they are settled (``folded_counts.SETTLE_SECONDS``); each
"from nothing" run empties the cache first. Prints, per part, seconds as median (best-worst)
over ``--runs``, and checks that both ways give the same value.
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _timed(fn, runs: int, before) -> tuple[list[float], object]:
    walls, out = [], None
    for _ in range(runs):
        before()
        t = time.perf_counter()
        out = fn()
        walls.append(time.perf_counter() - t)
    return walls, out


def _spread(walls: list[float]) -> str:
    return f"{statistics.median(walls):6.3f} s ({min(walls):.3f}-{max(walls):.3f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--new", type=int, default=200, help="votes cast before each folded run")
    args = ap.parse_args()
    import leaderboard_cache
    from _postgres import cast_votes_now

    leaderboard_cache._setup(reuse=True)
    from django.core.cache import cache

    from judging import folded_counts, leaderboards, selectors
    from judging.selectors import HUMAN

    parts = {
        "pairwise board (BT + 1,000 rounds, Elo)": lambda: leaderboards.leaderboard_build(
            HUMAN).as_dict(),
        "sampling table": selectors.comparison_sampling_counts,
        "categories": lambda: selectors.category_names(HUMAN),
        "category win rates": lambda: leaderboards.category_win_rates(HUMAN),
        "sources": selectors.leaderboard_sources,
    }

    def new_votes():
        cast_votes_now(args.new, "SELECT * FROM judging_judgment WHERE source = 'human' AND "
                       "kind = 'pairwise' ORDER BY id DESC")
        time.sleep(folded_counts.SETTLE_SECONDS)

    print(f"One refresh's parts at {selectors.pairwise_judgments_qs().count():,} human votes; "
          f"load avg {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs; median (best-worst) of "
          f"{args.runs}")
    print(f"  {'part':<42} {'from nothing (GROUP BY)':>28} {'folded, ' + str(args.new) + ' new':>28}")
    for name, fn in parts.items():
        cold, _ = _timed(fn, args.runs, cache.clear)
        warm, warm_value = _timed(fn, args.runs, new_votes)
        cache.clear()
        assert fn() == warm_value, f"{name}: folded differs from built from nothing"
        print(f"  {name:<42} {_spread(cold):>28} {_spread(warm):>28}", flush=True)
    print(f"  load avg after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
