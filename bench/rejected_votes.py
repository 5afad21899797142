"""What leaving rejected votes out costs the readers of votes (``Judgment.objects`` filters
``rejected = false``): the leaderboard's input, the report's input and a whole board, timed
with the filter and without it (the manager's filter switched off: the reads as they were),
interleaved on one database.

Usage: eval "$(scripts/services.sh start)"; .venv/bin/python bench/rejected_votes.py [--quick]
A fresh PostgreSQL database is loaded as ``bench/leaderboard_cache.py`` loads it (default
10,000 instances: 40,000 comparisons, 200,000 human votes and 10,500 judge verdicts), then 1 %
of the human votes are marked rejected. Prints the median, min–max over ``--runs`` runs.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import leaderboard_cache  # noqa: E402  (its loader and database set-up)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 instances, 3 runs")
    parser.add_argument("--instances", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    instances, runs = (2_000, 3) if args.quick else (args.instances, args.runs)
    leaderboard_cache._setup(reuse=False)

    from agreement.selectors import pairwise_data
    from judging import selectors
    from judging.leaderboards import leaderboard_build
    from judging.models import Judgment
    from judging.models.core import CountedJudgments

    print(leaderboard_cache.build(instances))
    human = Judgment.objects.filter(source=Judgment.HUMAN)
    rejected = human.filter(pk__in=human.order_by("?").values("pk")[:human.count() // 100])
    print(f"rejected: {rejected.update(rejected=True)}")
    filtered = CountedJudgments.get_queryset

    def unfiltered(self):
        return super(CountedJudgments, self).get_queryset()

    readers = {
        "pairwise_judgments (board input)": lambda: selectors.pairwise_judgments(judge="human"),
        "pairwise_data (report input)": lambda: pairwise_data(),
        "leaderboard_build, no bootstrap": lambda: leaderboard_build("human",
                                                                     bootstrap_rounds=0),
    }
    for label, read in readers.items():
        times = {"with the filter": [], "without": []}
        for _ in range(runs):
            for name, get_queryset in (("with the filter", filtered), ("without", unfiltered)):
                CountedJudgments.get_queryset = get_queryset
                t0 = time.perf_counter()
                read()
                times[name].append((time.perf_counter() - t0) * 1000)
        CountedJudgments.get_queryset = filtered
        print(label)
        for name, ms in times.items():
            print(f"  {name:18s} {statistics.median(ms):9.1f} ms   "
                  f"({min(ms):.1f}–{max(ms):.1f}, n={len(ms)})")


if __name__ == "__main__":
    main()
