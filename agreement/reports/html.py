"""Self-contained report.html: Django's template engine (autoescaping every string, so worker
and judge text can never inject markup), CSS inline, plots inline as base64 PNG."""
from __future__ import annotations

import base64
import json

from django.template.loader import render_to_string

from ..metric_provenance import report_section
from .tables import all_tables

TEMPLATE = "agreement/report_standalone.html"

SECTIONS = [  # (csv stem prefix, heading, plot stem or None)
    ("accuracy", "Accuracy vs the human majority (VisIT-Bench fig. 7)", "accuracy_by_level"),
    ("paired_tests", "Paired tests between judges (exact McNemar)", None),
    ("agreement_", "Agreement matrices (ConvBench tables 3–7)", "agreement_"),
    ("reliability", "Inter-annotator reliability", None),
    ("cohen_kappa", "Cohen's κ per annotator pair", None),
    ("leave_one_out", "Each annotator vs the leave-one-out majority", None),
    ("score_correlation", "Score correlation with humans (per response and per model)",
     "lengths_by_score"),
    ("ratings", "Ratings by source", "ratings"),
    ("system_correlation", "System-level rank correlation with humans", None),
    ("category_win_rates", "Win rate vs the reference per category", "category_win_rates"),
    ("position_bias", "Position bias", None),
    ("length_bias", "Length bias", "length_bias"),
    ("self_preference", "Self-preference", None),
    ("win_rate_gap", "Human vs automatic win rate against the reference", None),
]


def fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list | tuple):
        return ", ".join(fmt(x) for x in v)
    return str(v)


def sections(data: dict, image_src) -> list[dict]:
    """Headings, tables (columns + formatted rows) and plots, in reading order.

    ``image_src(stem)`` gives an image's src (a data URI in the standalone HTML, a URL on the
    analyst page) or None when the report has no such plot."""
    tables = all_tables(data)
    out = []
    for prefix, heading, plot in SECTIONS:
        names = [n for n in tables if n == prefix or (prefix.endswith("_") and
                                                      n.startswith(prefix))]
        blocks = []
        for name in names:
            rows = tables[name]
            cols = list(dict.fromkeys(k for r in rows for k in r))
            blocks.append({"name": name, "columns": cols,
                           "rows": [[fmt(r.get(c)) for c in cols] for r in rows]})
        images = []
        if plot:
            stems = names if plot.endswith("_") else [plot]
            for stem in stems:
                src = image_src(stem)
                if src:
                    images.append({"stem": stem, "src": src})
        if blocks or images:
            out.append({"id": prefix.rstrip("_"), "heading": heading, "tables": blocks,
                        "images": images})
    if (provenance := report_section(data)) is not None:
        out.insert(0, provenance)  # read before any metric's numbers
    return out


def render_html(data: dict, plots: dict[str, bytes], title: str = "Agreement report") -> str:
    snap = data["snapshot"]
    return render_to_string(TEMPLATE, {
        "title": title, "snapshot": snap,
        "counts": [(k, fmt(v) if not isinstance(v, dict) else
                    ", ".join(f"{a}={b}" for a, b in v.items())) for k, v in snap["counts"].items()],
        "snapshot_json": json.dumps(snap, indent=1, ensure_ascii=False),
        "sections": sections(data, lambda stem: _data_uri(plots.get(f"{stem}.png"))),
    })


def _data_uri(png: bytes | None) -> str | None:
    return None if png is None else "data:image/png;base64," + base64.b64encode(png).decode()
