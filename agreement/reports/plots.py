"""Report figures (matplotlib through ``annotation.core.pyplot``), each as PNG and SVG bytes.

Inputs are the report dict (plus raw length lists for box plots); nothing here reads the
database. Every figure function returns a matplotlib Figure; ``render_all`` saves them.

Colours: each source keeps one colour in every plot (``source_colors``, in the report's source
order, never reusing a colour within a report). Groups with n ≤ 1 are not drawn (a bar of one
verdict, or an empty bar that reads as 0 %), and models whose rating is unbounded (every match
lost or won) are left out of the ratings plot; ``plot_notes`` says what each plot left out, and
the figure carries the same note.
"""
from __future__ import annotations

import io
import textwrap
import threading

from annotation.core.pyplot import pyplot
from judging.models import Judgment

from .forked import Forked, may_fork
from .labels import source_label

_lock = threading.Lock()  # pyplot's figure manager is global state
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896",
          "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"]  # tab10, tab20
MIN_GROUP_N = 2  # groups with fewer observations are not drawn


def palette(names: list[str]) -> dict[str, str]:
    """{name: colour}, distinct for every name (beyond ``COLORS``, evenly spaced hues)."""
    out = {}
    for i, name in enumerate(dict.fromkeys(names)):
        if i < len(COLORS):
            out[name] = COLORS[i]
        else:
            import colorsys

            hue = ((i - len(COLORS)) * 0.618033988749895) % 1.0
            r, g, b = colorsys.hsv_to_rgb(hue, 0.65, 0.75)
            out[name] = f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"
    return out


def source_colors(data: dict) -> dict[str, str]:
    """One colour per source, the same in every plot of the report (the report's source
    order: the human majority first, then judges, then metrics)."""
    return palette(list(data.get("sources") or []) + list(data.get("ratings") or {}))


def _models(data: dict) -> list[str]:
    names = [r["model"] for b in (data.get("ratings") or {}).values() for r in b.get("rows", [])]
    names += [m for cats in (data.get("category_win_rates") or {}).values()
              for per in cats.values() for m in per]
    return sorted(set(names))


def _accuracy_omitted(data: dict) -> list[str]:
    out = []
    for src, a in data["accuracy"].items():
        if "error" in a:
            continue
        for level, lv in a["by_level"].items():
            p = lv.get("tie_broken") or {}
            if (p.get("n") or 0) < MIN_GROUP_N:
                out.append(f"{src} at {level} (n = {p.get('n') or 0})")
    return out


def _category_omitted(data: dict, source: str) -> list[str]:
    return [f"{m} in {c} (n = {v.get('n') or 0})"
            for c, per in data["category_win_rates"].get(source, {}).items()
            for m, v in per.items() if (v.get("n") or 0) < MIN_GROUP_N]


def _unbounded(data: dict) -> list[str]:
    return [f"{r['model']} under {source_label(src)} ({r['unbounded']})"
            for src, b in data["ratings"].items() for r in b.get("rows", [])
            if r.get("unbounded")]


def _note(kind: str, omitted: list[str], limit: int = 6) -> str:
    if not omitted:
        return ""
    shown = "; ".join(omitted[:limit]) + (f"; … {len(omitted) - limit} more"
                                          if len(omitted) > limit else "")
    return f"Not drawn, {kind}: {shown}."


def plot_notes(data: dict) -> dict[str, str]:
    """{plot stem: what the plot leaves out and why} (only plots that leave something out)."""
    notes = {
        "accuracy_by_level": _note(f"n ≤ {MIN_GROUP_N - 1}", _accuracy_omitted(data)),
        "category_win_rates": _note(f"n ≤ {MIN_GROUP_N - 1}",
                                    _category_omitted(data, Judgment.HUMAN)),
        "ratings": _note("every match lost or won, so no finite rating", _unbounded(data)),
    }
    return {k: v for k, v in notes.items() if v}


def _footnote(fig, text: str) -> None:
    """A note under the plot (``render_all`` keeps room for it)."""
    if text:
        width = int(fig.get_figwidth() * 17)  # characters per line at fontsize 7
        fig.text(0.01, 0.005, textwrap.fill(text, width), fontsize=7, color="#555",
                 ha="left", va="bottom")


def _pyplot():
    plt = pyplot()
    plt.rcParams["svg.hashsalt"] = "agreement-report"  # stable SVG element ids
    return plt


def _legend_beside(ax, *args, **kwargs):
    """The legend to the right of the axes: it never covers a bar or a point, and its place
    is fixed (matplotlib's "best" place is searched again on every draw, a fifth of the
    plots' time)."""
    ax.legend(*args, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, **kwargs)


def _empty(ax, text):
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#555")
    ax.set_xticks([])
    ax.set_yticks([])


def _level_color(i: int, n: int) -> str:
    """Agreement levels are ordered: 'all' in grey, then darker to lighter blue as the
    humans agree less (the categorical colours stay reserved for sources)."""
    if i == 0:
        return "#4a5568"
    shades = ["#1a365d", "#2b6cb0", "#4299e1", "#90cdf4", "#bee3f8"]
    return shades[min(len(shades) - 1, (i - 1) * len(shades) // max(1, n - 1))]


def level_order(levels) -> list[str]:
    """Agreement levels ("4/5", "3/3", …) from most to least agreement; equal shares (3/3 and
    5/5) by more votes first. The tie-break matters: without it the order, and so the plot's
    bytes, followed the set's hash order and changed from run to run."""
    def key(level: str):
        agree, votes = (int(x) for x in level.split("/"))
        return (-agree / votes, -votes)
    return sorted(levels, key=key)


def accuracy_by_level(data: dict):
    """VisIT-Bench fig. 7: accuracy at reproducing the human majority, by agreement level,
    with 95 % Wilson intervals; a dashed line at chance (0.5)."""
    plt = _pyplot()
    acc = {s: a for s, a in data["accuracy"].items() if "error" not in a}
    levels = ["all"] + level_order({lv for a in acc.values() for lv in a["by_level"]})
    fig, ax = plt.subplots(figsize=(max(6.5, 1.1 * len(acc) + 3), 4.4))
    if not acc:
        _empty(ax, "no judge verdicts on model-vs-model items with a human majority")
        return fig
    width = 0.8 / len(levels)
    for li, level in enumerate(levels):
        xs, ys, lo, hi = [], [], [], []
        for i, a in enumerate(acc.values()):
            p = a["overall"] if level == "all" else a["by_level"].get(level, {}).get("tie_broken")
            if not p or p.get("estimate") is None or (p.get("n") or 0) < MIN_GROUP_N:
                continue
            xs.append(i + li * width)
            ys.append(p["estimate"])
            lo.append(p["estimate"] - p["wilson"][0])
            hi.append(p["wilson"][1] - p["estimate"])
        label = "all items" if level == "all" else f"{level} agree"
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=label,
               color=_level_color(li, len(levels)), error_kw={"elinewidth": 0.9})
    ax.axhline(0.5, color="#999", ls="--", lw=0.8)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(acc))],
                  [source_label(s) for s in acc], rotation=25, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy vs human majority")
    ax.set_title("Accuracy at reconstructing the human majority (95 % Wilson CI)")
    _legend_beside(ax, fontsize=8)
    _footnote(fig, plot_notes(data).get("accuracy_by_level", ""))
    return fig


HEATMAP_LABEL_FONT, HEATMAP_CELL_FONT = 11, 10  # points; 7-8 pt read as ~10 px on the page


def agreement_heatmap(name: str, matrix: dict):
    plt = _pyplot()
    sources = matrix.get("sources", [])
    # Cells and labels sized to be read at the page's natural size (100 dpi: 11 pt ≈ 15 px).
    fig, ax = plt.subplots(figsize=(1.5 * len(sources) + 3.2, 1.2 * len(sources) + 2.4))
    if "error" in matrix or not sources:
        _empty(ax, matrix.get("error", "no data"))
        return fig
    import numpy as np

    values = np.array([[np.nan if v is None else v for v in row] for row in matrix["matrix"]])
    im = ax.imshow(values, vmin=0, vmax=1, cmap="Blues")
    for i in range(len(sources)):
        for j in range(len(sources)):
            v = values[i, j]
            text = "–" if np.isnan(v) else f"{100 * v:.0f}%\nn={matrix['counts'][i][j]}"
            ax.text(j, i, text, ha="center", va="center", fontsize=HEATMAP_CELL_FONT,
                    color="white" if not np.isnan(v) and v > 0.6 else "black")
    names = [source_label(s) for s in sources]
    ax.set_xticks(range(len(sources)), names, rotation=30, ha="right",
                  fontsize=HEATMAP_LABEL_FONT)
    ax.set_yticks(range(len(sources)), names, fontsize=HEATMAP_LABEL_FONT)
    fig.colorbar(im, ax=ax, fraction=0.04).ax.tick_params(labelsize=HEATMAP_CELL_FONT)
    ax.set_title(f"Agreement between sources ({name})", fontsize=HEATMAP_LABEL_FONT + 1)
    return fig


def ratings_ci(data: dict):
    """Bradley-Terry ratings per model and source, with bootstrap 95 % CIs cut at the
    board's span (``judging.thin_data``)."""
    plt = _pyplot()
    colors = source_colors(data)
    boards = {s: {**b, "rows": [r for r in b["rows"] if not r.get("unbounded")]}
              for s, b in data["ratings"].items() if b.get("rows")}
    boards = {s: b for s, b in boards.items() if b["rows"]}
    models = []
    for b in boards.values():
        for r in b["rows"]:
            if r["model"] not in models:
                models.append(r["model"])
    fig, ax = plt.subplots(figsize=(7.5, 0.5 * max(len(models), 2) * max(1, len(boards) / 3)
                                    + 1.5))
    if not boards:
        _empty(ax, "no ratings")
        return fig
    step = 0.8 / len(boards)
    for k, (src, b) in enumerate(boards.items()):
        rows = {r["model"]: r for r in b["rows"]}
        ys = [i + k * step for i, m in enumerate(models) if m in rows]
        xs = [rows[m]["rating"] for m in models if m in rows]
        lo, hi = b.get("ci_span") or (float("-inf"), float("inf"))  # as the table shows it
        err = [[max(0.0, rows[m]["rating"] - max(rows[m]["ci_low"], lo))
                for m in models if m in rows],
               [max(0.0, min(rows[m]["ci_high"], hi) - rows[m]["rating"])
                for m in models if m in rows]]
        ax.errorbar(xs, ys, xerr=err, fmt="o", ms=4, capsize=3, label=source_label(src),
                    color=colors[src])
    ax.set_yticks([i + 0.4 - step / 2 for i in range(len(models))], models, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(1000, color="#bbb", lw=0.8, ls="--")
    ax.set_xlabel("Bradley-Terry rating (Elo scale), 95 % bootstrap CI")
    ax.set_title("Ratings by source")
    _legend_beside(ax, fontsize=7)
    _footnote(fig, plot_notes(data).get("ratings", ""))
    return fig


def category_win_rates(data: dict, source: str = Judgment.HUMAN):
    plt = _pyplot()
    rates = {c: {m: v for m, v in per.items() if (v.get("n") or 0) >= MIN_GROUP_N}
             for c, per in data["category_win_rates"].get(source, {}).items()}
    rates = {c: per for c, per in rates.items() if per}
    cats = list(rates)
    models = sorted({m for per in rates.values() for m in per})
    colors = palette(_models(data))
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(cats) + 2), 4.2))
    if not cats or not models:
        _empty(ax, "no comparisons with the reference")
        return fig
    width = 0.8 / len(models)
    for k, m in enumerate(models):
        drawn = [(i, rates[c][m]["win_rate"]) for i, c in enumerate(cats)
                 if m in rates[c] and rates[c][m].get("win_rate") is not None]
        ax.bar([i + k * width for i, _ in drawn], [y for _, y in drawn], width, label=m,
               color=colors[m])
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(cats))], cats, rotation=25, ha="right")
    ax.set_ylim(0, 1)
    ax.axhline(0.5, color="#999", ls="--", lw=0.8)
    ax.set_ylabel("win rate vs reference")
    ax.set_title(f"{source}: win rate against the reference per category")
    _legend_beside(ax, fontsize=7)
    if source == Judgment.HUMAN:
        _footnote(fig, plot_notes(data).get("category_win_rates", ""))
    return fig


def length_boxes(boxes: dict):
    """Lengths (tokens) of the preferred and the other response, per source."""
    plt = _pyplot()
    srcs = [s for s, v in boxes.items() if v["preferred"]]
    fig, ax = plt.subplots(figsize=(max(6.5, 1.2 * len(srcs) + 2), 4.4))
    if not srcs:
        _empty(ax, "no decisive verdicts with known lengths")
        return fig
    pos_p = [2 * i for i in range(len(srcs))]
    pos_o = [2 * i + 0.8 for i in range(len(srcs))]
    bp1 = ax.boxplot([boxes[s]["preferred"] for s in srcs], positions=pos_p, widths=0.7,
                     patch_artist=True, showfliers=False)
    bp2 = ax.boxplot([boxes[s]["other"] for s in srcs], positions=pos_o, widths=0.7,
                     patch_artist=True, showfliers=False)
    for patch in bp1["boxes"]:
        patch.set_facecolor("#90cdf4")
    for patch in bp2["boxes"]:
        patch.set_facecolor("#fbd38d")
    ax.set_xticks([p + 0.4 for p in pos_p], [source_label(s) for s in srcs], rotation=25,
                  ha="right")
    _legend_beside(ax, [bp1["boxes"][0], bp2["boxes"][0]], ["preferred", "other"], fontsize=8)
    ax.set_ylabel("response length (tokens)")
    ax.set_title("Length bias: preferred vs other response")
    return fig


def lengths_by_score(data: dict):
    """Box plot per score (Prometheus-Vision fig. 11), one panel per scoring source."""
    plt = _pyplot()
    srcs = {s: r for s, r in data["biases"]["lengths_by_score"].items() if "summary" in r}
    fig, axes = plt.subplots(1, max(1, len(srcs)), figsize=(4.2 * max(1, len(srcs)), 3.8),
                             squeeze=False)
    if not srcs:
        _empty(axes[0][0], "no scored responses")
        return fig
    for ax, (src, r) in zip(axes[0], srcs.items(), strict=False):
        stats = [{"label": k, "whislo": v["min"], "q1": v["q1"], "med": v["median"],
                  "q3": v["q3"], "whishi": v["max"], "mean": v["mean"]}
                 for k, v in r["summary"].items() if v.get("n", MIN_GROUP_N) >= MIN_GROUP_N]
        if not stats:
            _empty(ax, f"{src}: every score group has n ≤ {MIN_GROUP_N - 1}")
            continue
        ax.bxp(stats, showfliers=False, showmeans=True)
        ax.set_xlabel("score")
        ax.set_ylabel("length (tokens)")
        rho = r.get("spearman")
        ax.set_title(f"{src}" + (f" (ρ={rho:.2f})" if rho is not None else ""), fontsize=9)
    return fig


def figures(data: dict, extra: dict) -> dict:
    """{stem: figure function and args} for every plot the report has."""
    out = {"accuracy_by_level": (accuracy_by_level, data),
           "ratings": (ratings_ci, data),
           "category_win_rates": (category_win_rates, data),
           "length_bias": (length_boxes, extra.get("length_boxes", {}))}
    for name, m in data["agreement_matrices"].items():
        out[f"agreement_{name.replace(':', '')}"] = (agreement_heatmap, name, m)
    if data["biases"]["lengths_by_score"]:
        out["lengths_by_score"] = (lengths_by_score, data)
    return out


def render_all(data: dict, extra: dict, formats=("png", "svg")) -> dict[str, bytes]:
    """{"<stem>.<fmt>": bytes} for every figure, in ``figures`` order. With a second CPU, a
    forked child draws about half of them meanwhile (``forked``); the files are the same
    bytes either way."""
    jobs = list(figures(data, extra).items())
    with _lock:
        _pyplot()
        import matplotlib.backends.backend_agg  # noqa: F401  loaded before a fork, so the
        import matplotlib.backends.backend_svg  # noqa: F401  child never imports

        ours, theirs = _halves(jobs) if may_fork() else (jobs, [])
        if not theirs:
            out = _render(ours, formats)
        else:
            with Forked(_render, theirs, formats) as child:
                out = _render(ours, formats)
                out.update(child.result())
    order = {stem: i for i, (stem, _) in enumerate(jobs)}
    return dict(sorted(out.items(), key=lambda kv: (order[kv[0].rsplit(".", 1)[0]], kv[0])))


# Relative drawing time of a figure (measured on a 100K-judgment report): a heatmap writes
# two lines of text per cell, a box plot draws many artists.
_COST = {"agreement_": 2.0, "length_bias": 1.5, "lengths_by_score": 1.5}


def _halves(jobs: list) -> tuple[list, list]:
    """Two lists of about equal drawing time (greedy, the costliest figure first)."""
    def cost(job):
        return next((c for prefix, c in _COST.items() if job[0].startswith(prefix)), 1.0)

    halves, load = ([], []), [0.0, 0.0]
    for job in sorted(jobs, key=cost, reverse=True):
        i = 0 if load[0] <= load[1] else 1
        halves[i].append(job)
        load[i] += cost(job)
    return halves


def _render(jobs: list, formats) -> dict[str, bytes]:
    plt = _pyplot()
    out = {}
    for stem, (fn, *args) in jobs:
        fig = fn(*args)
        lines = sum(t.get_text().count("\n") + 1 for t in fig.texts)
        bottom = min(0.4, (0.1 + 0.13 * lines) / fig.get_figheight()) if lines else 0
        fig.tight_layout(rect=(0, bottom, 1, 1))  # room for the footnote
        for fmt in formats:
            buf = io.BytesIO()
            fig.savefig(buf, format=fmt, dpi=100, metadata=_METADATA[fmt])
            out[f"{stem}.{fmt}"] = buf.getvalue()
        plt.close(fig)
    return out


# No creation dates in the files, so the same report renders byte-identical plots.
_METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}
