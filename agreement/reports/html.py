"""The report as pages: the sections (headings, readable tables, plots) and the summary on top,
shared by the analyst page and the self-contained report.html.

report.html is rendered by Django's template engine (autoescaping every string, so worker and
judge text can never inject markup), CSS inline, plots inline as base64 PNG. Tables show human
headers with each statistic's definition as a tooltip (``labels``), numbers rounded for reading
(``numbers``; the full value in the cell's tooltip, and in report.json and the CSVs), rows with a
small sample marked, and long tables collapsed after their first rows.
"""
from __future__ import annotations

import base64
import json

from django.template.loader import render_to_string

from annotation.templatetags.formats import hit_type as hit_type_label

from ..metric_provenance import report_section
from . import labels, numbers
from .labels import source_label
from .plots import plot_notes
from .tables import all_tables

TEMPLATE = "agreement/report_standalone.html"
VISIBLE_ROWS = 12  # a longer table shows this many rows, the rest behind "show all"

SECTIONS = [  # (csv stem prefix, heading, plot stem or None)
    ("accuracy", "Accuracy vs the human majority (VisIT-Bench fig. 7)", "accuracy_by_level"),
    ("accuracy_by_aggregation", "Accuracy vs majority and vs reliability-weighted labels",
     None),
    ("paired_tests", "Paired tests between judges (exact McNemar)", None),
    ("agreement_", "Agreement matrices (ConvBench tables 3–7)", "agreement_"),
    ("reliability", "Inter-annotator reliability", None),
    ("cohen_kappa", "Cohen's κ per annotator pair", None),
    ("leave_one_out", "Each annotator vs the leave-one-out majority", None),
    ("worker_reliability", "Each annotator's estimated accuracy (Dawid–Skene, MACE)", None),
    ("score_correlation", "Score correlation with humans (per response and per model)",
     "lengths_by_score"),
    ("ratings", "Ratings by source", "ratings"),
    ("system_correlation", "System-level rank correlation with humans", None),
    ("category_win_rates", "Win rate vs the reference per category", "category_win_rates"),
    ("position_bias", "Position bias", None),
    ("length_bias", "Length bias", "length_bias"),
    ("length_control", "Length-controlled preference (Bradley–Terry with a length covariate)",
     None),
    ("self_preference", "Self-preference", None),
    ("win_rate_gap", "Human vs automatic win rate against the reference", None),
]
SOURCE_COLUMNS = {"source", "judge", "judge_a", "judge_b"}
UNBOUNDED_HIDDEN = {"rating", "ci_low", "ci_high", "ci_text"}
# Columns only the CSVs and report.json carry: a board's full interval (the page shows
# ``ci_text``, clipped to what the data supports: ``judging.thin_data``).
CSV_ONLY = {"ratings": {"ci_low", "ci_high"}}


# A table wider than this (estimated from its longest cell per column; the estimate errs wide) is
# shown as one card per row instead: the analyst page's wide container leaves 1,248 px. Cards
# are taller than rows, so only tables that would not fit become cards (report.html, 1,100 px
# wide, lets a table between the two scroll inside its own box).
CARD_WIDTH_PX = 1180
CHAR_PX, CELL_PAD_PX = 7.2, 18  # at the tables' 0.82rem font


def fmt(v) -> str:
    """Plain text of a snapshot value (counts and the like)."""
    return numbers.readable("", v)


def _cell(column: str, value, *, share: bool, unbounded: str | None) -> dict:
    if column in SOURCE_COLUMNS and isinstance(value, str):
        return {"text": source_label(value), "title": value if value.startswith("metric:")
                else "", "cls": "txt"}
    if column == "hit_type" and isinstance(value, str):
        label = hit_type_label(value)
        return {"text": label, "title": value if label != value else "", "cls": "txt"}
    if unbounded and column in UNBOUNDED_HIDDEN:
        return {"text": "—", "cls": "unbounded",
                "title": f"{unbounded}: no finite rating (fitted value {numbers.full(value)})"}
    text = numbers.readable(column, value, share=share)
    title = numbers.full(value) if isinstance(value, float) and text != repr(value) else ""
    return {"text": text, "title": title, "cls": "num" if isinstance(value, int | float)
            and not isinstance(value, bool) else "txt"}


def row_n(row: dict) -> int | None:
    """A row's sample size (the first of ``labels.N_COLUMNS`` it has)."""
    for column in labels.N_COLUMNS:
        if isinstance(row.get(column), int):
            return row[column]
    return None


def table_block(name: str, rows: list[dict]) -> dict:
    """One table: labelled columns, readable cells, small-n rows marked, long tables split
    into the visible rows and the rest."""
    hidden = CSV_ONLY.get(name, set())
    columns = [c for c in dict.fromkeys(k for r in rows for k in r) if c not in hidden]
    matrix = name.startswith("agreement_")
    out_rows = []
    for r in rows:
        n = row_n(r)
        small = n is not None and n < labels.SMALL_N and "error" not in r
        cells = [_cell(c, r.get(c), share=matrix and c != "source" and not c.startswith("n:"),
                       unbounded=r.get("unbounded")) for c in columns]
        out_rows.append({"cells": cells, "small": small, "n": n})
    heads = []
    for c in columns:
        header, definition = labels.column_label(c)
        if c.startswith("n:"):
            header = f"n ({source_label(c[2:])})"
        elif matrix and c != "source":
            header = source_label(c)
        heads.append({"label": header, "title": definition, "name": c})
    cards = estimated_width(heads, out_rows) > CARD_WIDTH_PX
    if cards:  # each card: the first cell as its title, then (header, cell) pairs
        for r in out_rows:
            r["pairs"] = list(zip(heads[1:], r["cells"][1:], strict=True))
    return {"name": name, "columns": heads, "rows": out_rows[:VISIBLE_ROWS],
            "more_rows": out_rows[VISIBLE_ROWS:], "small_rows": sum(r["small"] for r in out_rows),
            "cards": cards}


def estimated_width(heads: list[dict], rows: list[dict]) -> float:
    """Roughly how many pixels the table needs on one line per cell (cells do not wrap)."""
    width = 0.0
    for i, head in enumerate(heads):
        longest = max([len(head["label"])] + [len(r["cells"][i]["text"]) for r in rows])
        width += longest * CHAR_PX + CELL_PAD_PX
    return width


def _plain_table(table: dict) -> dict:
    """A table already in words (the metric provenance) in the same shape."""
    return {"name": table["name"], "more_rows": [], "small_rows": 0, "prose": True,
            "columns": [{"label": c[:1].upper() + c[1:], "title": "", "name": c}
                        for c in table["columns"]],
            "rows": [{"cells": [{"text": v, "title": "", "cls": "txt"} for v in row],
                      "small": False} for row in table["rows"]]}


def sections(data: dict, image_src) -> list[dict]:
    """Headings, tables and plots, in reading order.

    ``image_src(stem)`` gives an image's src (a data URI in the standalone HTML, a URL on the
    analyst page) or None when the report has no such plot."""
    tables = all_tables(data)
    notes = plot_notes(data)
    out = []
    against = headline_against(data)
    for prefix, heading, plot in SECTIONS:
        if prefix == "accuracy" and against != HUMAN_MAJORITY:
            heading = f"Accuracy vs the {against} (the plain majority: next section)"
        names = [n for n in tables if n == prefix or (prefix.endswith("_") and
                                                      n.startswith(prefix))]
        blocks = [table_block(name, tables[name]) for name in names]
        images = []
        if plot:
            stems = names if plot.endswith("_") else [plot]
            for stem in stems:
                src = image_src(stem)
                if src:
                    images.append({"stem": stem, "src": src, "note": notes.get(stem, "")})
        if blocks or images:
            section_id = prefix.rstrip("_")
            out.append({"id": section_id, "heading": heading, "tables": blocks,
                        "intro": labels.SECTION_INTROS.get(section_id, ""), "images": images})
    if (provenance := report_section(data)) is not None:
        provenance["tables"] = [_plain_table(t) for t in provenance["tables"]]
        provenance["intro"] = "How each reference metric was computed, against the paper."
        out.insert(0, provenance)  # read before any metric's numbers
    return out


def _share(p: dict | None) -> dict | None:
    if not p or p.get("estimate") is None:
        return None
    low, high = (p.get("wilson") or [None, None])[:2]
    return {"estimate": p["estimate"], "low": low, "high": high, "n": p.get("n"),
            "text": numbers.readable("accuracy", p["estimate"]),
            "ci_text": "" if low is None else
            f"{numbers.readable('accuracy', low)} – {numbers.readable('accuracy', high)}"}


HUMAN_MAJORITY = "human majority"


def headline_against(data: dict) -> str:
    """What the headline accuracy is against, in words (``params.aggregation``)."""
    headline = (data.get("aggregation") or {}).get("headline", "majority")
    if headline == "majority":
        return HUMAN_MAJORITY
    return {"dawid-skene": "Dawid–Skene", "mace": "MACE"}.get(headline, headline) + (
        "-weighted human labels")


CHANCE = 0.5  # a forced choice between two responses: agreeing half the time is chance


def summary(data: dict) -> dict:
    """The report in a few lines: every automatic source ranked by its accuracy against the
    human majority (95% Wilson CI), the best judge and the best metric, whether the leader's
    interval overlaps the runner-up's, and the humans' own reliability.

    A source *beats chance* when its interval's lower bound is above 50%. Only such a source
    can be called best; when no judge (metric, source at all) does, the summary says so
    instead of naming a leader that may be no better than a coin."""
    ranking = []
    for src, acc in (data.get("accuracy") or {}).items():
        share = _share(acc.get("overall")) if "error" not in acc else None
        if share:
            ranking.append({"source": src, "label": source_label(src),
                            "kind": "metric" if src.startswith("metric:") else "judge",
                            "small": (share["n"] or 0) < labels.SMALL_N,
                            "beats_chance": share["low"] is not None and share["low"] > CHANCE,
                            **share})
    ranking.sort(key=lambda r: (-r["estimate"], -(r["n"] or 0), r["source"]))
    best, below_chance = {}, {}
    for kind in ("judge", "metric"):
        of_kind = [r for r in ranking if r["kind"] == kind]
        above = [r for r in of_kind if r["beats_chance"]]
        below_chance[kind] = bool(of_kind) and not above
        if above:
            leader = dict(above[0])
            others = [r for r in of_kind if r["source"] != leader["source"]]
            runner = others[0] if others else None
            leader["runner_up"] = runner["label"] if runner else ""
            leader["tied"] = bool(runner and runner["estimate"] == leader["estimate"])
            leader["clear"] = bool(runner and runner["high"] is not None
                                   and leader["low"] is not None and leader["low"] > runner["high"])
            best[kind] = leader
    reliability = []
    for hit_type, sec in (data.get("reliability") or {}).items():
        alpha = sec.get("krippendorff_alpha") or {}
        if alpha.get("alpha") is not None:
            ci = alpha.get("ci") or [None, None]
            reliability.append({
                "hit_type": hit_type_label(hit_type), "alpha": alpha["alpha"],
                "items": sec.get("n_items"),
                "text": numbers.readable("alpha_nominal", alpha["alpha"]),
                "ci_text": "" if ci[0] is None else
                f"{numbers.readable('alpha_nominal', ci[0])} – "
                f"{numbers.readable('alpha_nominal', ci[1])}"})
    return {"ranking": ranking, "against": headline_against(data),
            "best_judge": best.get("judge"),
            "best_metric": best.get("metric"), "reliability": reliability,
            "no_source_beats_chance": bool(ranking) and not any(r["beats_chance"]
                                                                for r in ranking),
            "no_judge_beats_chance": below_chance["judge"],
            "no_metric_beats_chance": below_chance["metric"]}


def toc(sections_: list[dict], *, summary_: bool, extra: list[tuple[str, str]] = ()
        ) -> list[dict]:
    """The table of contents: {anchor, title} for the summary, each section and ``extra``."""
    items = [{"anchor": "summary", "title": "Summary"}] if summary_ else []
    items += [{"anchor": f"section-{s['id']}", "title": s["heading"]} for s in sections_]
    items += [{"anchor": a, "title": t} for a, t in extra]
    return items


def render_html(data: dict, plots: dict[str, bytes], title: str = "Agreement report") -> str:
    snap = data["snapshot"]
    body = sections(data, lambda stem: _data_uri(plots.get(f"{stem}.png")))
    return render_to_string(TEMPLATE, {
        "title": title, "snapshot": snap,
        "counts": [(k, fmt(v) if not isinstance(v, dict) else
                    ", ".join(f"{a}={b}" for a, b in v.items())) for k, v in snap["counts"].items()],
        "snapshot_json": json.dumps(snap, indent=1, ensure_ascii=False),
        "sections": body, "summary": summary(data), "small_n": labels.SMALL_N,
        "toc": toc(body, summary_=True, extra=[("snapshot", "Data snapshot")]),
    })


def _data_uri(png: bytes | None) -> str | None:
    return None if png is None else "data:image/png;base64," + base64.b64encode(png).decode()
