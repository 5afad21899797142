"""Kill rate per module of the last `make mutation` run, from mutmut's results in mutants/.

A mutant is caught when a test failed or timed out on it; "no tests" means no fast test calls
the mutated function (a gap too). Surviving mutants go to mutants/survivors.txt, one name a
line: `.venv/bin/mutmut show NAME` prints the change. Known equivalent mutants are listed in
docs/mutation.md with the reason no test can tell them apart.
"""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from mutmut.stats import status_by_exit_code

CAUGHT = {"killed", "timeout", "caught by type check", "segfault"}


def main(root: Path = Path("mutants")) -> int:
    metas = sorted(root.rglob("*.py.meta"))
    if not metas:
        print("no mutmut results in mutants/: run `make mutation` first")
        return 1
    survivors = []
    print(f"{'module':38} {'mutants':>7} {'caught':>6} {'survived':>8} {'no tests':>8} {'rate':>6}")
    for meta in metas:
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        if not codes:
            continue
        status = Counter(status_by_exit_code[c] for c in codes.values())
        checked = sum(status.values()) - status["not checked"] - status["skipped"]
        caught = sum(status[s] for s in CAUGHT)
        module = str(meta.relative_to(root))[: -len(".py.meta")].replace("/", ".")
        rate = f"{100 * caught / checked:5.1f}%" if checked else "   -  "
        print(f"{module:38} {checked:7} {caught:6} {status['survived']:8} "
              f"{status['no tests']:8} {rate}")
        survivors += sorted(k for k, c in codes.items()
                            if status_by_exit_code[c] in ("survived", "no tests", "suspicious"))
    (root / "survivors.txt").write_text("".join(f"{name}\n" for name in survivors))
    print(f"{len(survivors)} not caught: mutants/survivors.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
