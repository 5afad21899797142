"""PNG plots of a leaderboard: ratings with CI bars, per-category win rates vs the reference.

matplotlib is imported lazily (``annotation.core.pyplot``: Agg backend, its own configuration
folder), so a web worker never needs a display or a writable home directory.
"""
import io

from annotation.core.pyplot import pyplot as _pyplot


def _png(fig) -> bytes:
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=110, bbox_inches="tight")
    _pyplot().close(fig)
    return out.getvalue()


def ratings_png(board) -> bytes:
    """Horizontal bars: Bradley-Terry rating with its bootstrap 95 % CI, best on top; bars are
    cut at the board's ``ci_span`` (as the table shows them) and provisional models drawn
    hollow, below the ranked ones."""
    plt = _pyplot()
    rows = list(reversed(board.rows))
    fig, ax = plt.subplots(figsize=(7, 0.45 * max(len(rows), 2) + 1.2))
    if rows:
        y = range(len(rows))
        lo, hi = board.ci_span or (float("-inf"), float("inf"))
        values = [r["rating"] for r in rows]
        err = [[max(0.0, r["rating"] - max(r["ci_low"], lo)) for r in rows],
               [max(0.0, min(r["ci_high"], hi) - r["rating"]) for r in rows]]
        colors = ["#b7791f" if r["is_reference"] else "#2b6cb0" for r in rows]
        faces = ["none" if r.get("provisional") else c for r, c in zip(rows, colors, strict=True)]
        ax.errorbar(values, list(y), xerr=err, fmt="none", ecolor="#444", capsize=4)
        ax.scatter(values, list(y), edgecolors=colors, facecolors=faces, zorder=3)
        ax.set_yticks(list(y), [r["model"] + (" (provisional)" if r.get("provisional") else "")
                                for r in rows])
        ax.axvline(1000, color="#bbb", lw=0.8, ls="--")
    else:
        ax.text(0.5, 0.5, "no judgments yet", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("Bradley-Terry rating (Elo scale), 95 % bootstrap CI (cut at the ranked span)")
    ax.set_title(f"{board.judge} · {board.split} · {board.judgments} judgments")
    return _png(fig)


def category_png(rates: dict, judge: str) -> bytes:
    """Grouped bars: win rate vs the reference per instruction category and model."""
    plt = _pyplot()
    categories = sorted(rates)
    models = sorted({m for per in rates.values() for m in per})
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(categories) + 2), 4.2))
    if categories and models:
        width = 0.8 / len(models)
        for k, model in enumerate(models):
            xs = [i + k * width for i in range(len(categories))]
            ys = [(rates[c].get(model) or (None, 0))[0] or 0.0 for c in categories]
            ax.bar(xs, ys, width, label=model)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(categories))], categories,
                      rotation=30, ha="right")
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no comparisons with the reference yet", ha="center", va="center",
                transform=ax.transAxes)
    ax.set_ylim(0, 1)
    ax.set_ylabel("win rate vs reference")
    ax.set_title(f"{judge}: win rate vs reference per category")
    return _png(fig)
