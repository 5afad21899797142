"""VisIT-Bench Table 2 from verification outcomes (pure, no Django).

Per column (overall / single-image / multi-image), over instances whose reference was decided:
% whose LLM reference was correct, % rejected because the caption was underspecified, % rejected
because the response was wrong. A rejection without a reason counts in the denominator only, as
in the published multi-image file (one such row: 63 + 6 + 30 of 100).
"""
from __future__ import annotations

import io
from collections.abc import Mapping

from annotation.core import csv_safety

COLUMNS = ("overall", "single", "multi")
ROWS = (("correct", "LLM reference correct (%)"), ("problem_in_caption", "Problem in caption (%)"),
        ("problem_in_response", "Problem in response (%)"))


def _rates(c: Mapping[str, int]) -> dict:
    n = c.get("verified", 0) + c.get("rejected", 0)
    if n == 0:
        return {"n": 0, "correct": None, "problem_in_caption": None, "problem_in_response": None}

    def pct(k: str) -> float:
        return round(100.0 * c.get(k, 0) / n, 1)

    return {"n": n, "correct": pct("verified"), "problem_in_caption": pct("caption"),
            "problem_in_response": pct("response")}


def table2(counts: Mapping[str, Mapping[str, int]]) -> dict:
    """``counts[kind]`` has verified / rejected / caption / response tallies for kinds single
    and multi; returns ``{column: {n, correct, problem_in_caption, problem_in_response}}``."""
    single, multi = counts.get("single", {}), counts.get("multi", {})
    overall = {k: single.get(k, 0) + multi.get(k, 0)
               for k in ("verified", "rejected", "caption", "response")}
    return {"overall": _rates(overall), "single": _rates(single), "multi": _rates(multi)}


def table2_csv(table: Mapping[str, Mapping]) -> str:
    out = io.StringIO()
    writer = csv_safety.SafeWriter(out, lineterminator="\n")
    writer.writerow(["metric", *COLUMNS])
    for key, label in ROWS:
        writer.writerow([label, *("" if table[c][key] is None else f"{table[c][key]:.1f}"
                                  for c in COLUMNS)])
    writer.writerow(["Instances rated", *(table[c]["n"] for c in COLUMNS)])
    return out.getvalue()
