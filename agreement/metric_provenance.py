"""How each reference metric was computed here, against how the papers computed it.

A metric's accuracy vs the human majority is only comparable to VisIT-Bench's Figure 7 when the
metric was computed the same way (BERTScore with the offline MiniLM model is another metric
than BERTScore with roberta-large). The papers' settings are declared once, by each metric's
module (``Metric.paper_default``); a run's recorded configuration (``metrics.settings`` plus our
version) is compared with them, setting by setting, and each metric that differs gets one sentence.
Pure Python: the report builder and the ``compute_metrics`` command both use it.
"""
from __future__ import annotations

from agreement.metrics.registry import label, paper_default

PAPER = "VisIT-Bench (Bitton et al., 2023), §4.3 Automatic Evaluation and Leaderboard"

# Where the modules' paper defaults come from: VisIT-Bench §4.3, "Automatic evaluation metric candidates": "BLEU-4 [27], ROUGE-L [28],
# METEOR [29], CIDEr [30], and BERTScore [31], we use the RoBERTa-Large english version [46],
# treating the human-verified GPT-4 reference as the evaluation reference", plus "random" and
# "length, which assigns a score equal to the number of nonwhitespace tokens in the candidate".
# Nothing else is stated there or in the appendix, so BERTScore's other settings are
# bert_score's defaults for roberta-large (layer 17, no idf, no baseline rescaling); settings
# the paper leaves open (tokenizers, BLEU smoothing, ROUGE stemming, METEOR's WordNet, the CIDEr
# variant) are recorded but not compared. ConvBench and Prometheus-Vision fix no further setting.

_WORDS = {  # how a setting's value reads in a sentence
    "model_name": str,
    "num_layers": lambda v: f"layer {v}",
    "idf": lambda v: "idf weighting" if v else "no idf",
    "rescale_with_baseline": lambda v: "baseline rescaling" if v else "no baseline rescaling",
    "max_ngram_order": lambda v: f"n-grams up to {v}",
}
UNRECORDED = "(not recorded)"


def _words(setting: str, value) -> str:
    if value == UNRECORDED:
        return f"{setting} {UNRECORDED}"
    fmt = _WORDS.get(setting)
    return fmt(value) if fmt else f"{setting} {value}"


def differences(metric: str, config: dict) -> dict[str, dict]:
    """{setting: {"used", "paper"}} for each setting the paper fixes that ``config`` does not
    match (a setting missing from an older configuration counts as differing)."""
    return {key: {"used": config.get(key, UNRECORDED), "paper": paper}
            for key, paper in paper_default(metric).items()
            if config.get(key, UNRECORDED) != paper}


def note(metric: str, diffs: dict[str, dict]) -> str:
    """One sentence for a metric that differs from the paper ("" when it does not)."""
    if not diffs:
        return ""
    used = " ".join(_words(k, d["used"]) for k, d in diffs.items())
    paper = " ".join(_words(k, d["paper"]) for k, d in diffs.items())
    return (f"{label(metric)}: {used} instead of {paper} (the paper's default) — "
            "scores are not comparable to the paper's")


def provenance(summary: dict[str, dict]) -> dict:
    """The report's ``metric_provenance`` section from ``{metric: {config, config_hash, ...}}``
    (what ``metric_scores_ensure`` returns): per metric the configuration used, the paper's
    settings, what differs, and the sentence saying so."""
    metrics = {}
    for name, entry in summary.items():
        diffs = differences(name, entry["config"])
        metrics[name] = {"label": label(name), "config": entry["config"],
                         "config_hash": entry.get("config_hash"),
                         "paper_default": paper_default(name), "differs": diffs,
                         "comparable_to_paper": not diffs, "note": note(name, diffs)}
    return {"paper": PAPER, "metrics": metrics}


def notes(section: dict) -> list[str]:
    """The sentences of a provenance section, one per metric that differs from the paper."""
    return [m["note"] for m in section.get("metrics", {}).values() if m.get("note")]


def _summary(config: dict) -> str:
    """A configuration on one line: the settings, then the package versions."""
    skip = {"metric", "packages"}
    parts = [f"{k}={v}" for k, v in config.items() if k not in skip]
    parts += [f"{p} {v}" for p, v in (config.get("packages") or {}).items()]
    return ", ".join(parts)


def report_section(data: dict) -> dict | None:
    """The provenance section in the shape ``reports.html.sections`` renders (one row per
    metric: what was used, the paper's settings, the sentence when they differ); None for a
    report without metrics or from before provenance was recorded."""
    section = data.get("metric_provenance") or {}
    if not section.get("metrics"):
        return None
    columns = ["metric", "differs from the paper", "configuration used", "paper's setting"]
    rows = [[m["label"], m["note"] or "no: same settings as the paper (where it states them)",
             _summary(m["config"]),
             ", ".join(f"{k}={v}" for k, v in m["paper_default"].items()) or "not stated"]
            for m in section["metrics"].values()]
    return {"id": "metric_provenance", "heading": f"Metric provenance (vs {section['paper']})",
            "tables": [{"name": "metric_provenance", "columns": columns, "rows": rows}],
            "images": []}
