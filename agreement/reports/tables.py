"""The report's tables as rows (one list of dicts per CSV file), derived from report.json only,
so the CSVs, the HTML tables and the JSON can never disagree."""
from __future__ import annotations

import io

from annotation.core import csv_safety

ANONYMOUS_VOTES = "(anonymous votes, pooled)"  # the worker-model row of votes without identity


def _ci(ci, i):
    return None if not ci else ci[i]


def _prop(prefix: str, p: dict | None) -> dict:
    p = p or {}
    return {f"{prefix}correct": p.get("successes"), f"{prefix}n": p.get("n"),
            f"{prefix}accuracy": p.get("estimate"),
            f"{prefix}wilson_low": _ci(p.get("wilson"), 0),
            f"{prefix}wilson_high": _ci(p.get("wilson"), 1),
            f"{prefix}cp_low": _ci(p.get("clopper_pearson"), 0),
            f"{prefix}cp_high": _ci(p.get("clopper_pearson"), 1)}


def accuracy_rows(data: dict) -> list[dict]:
    rows = []
    for src, acc in data["accuracy"].items():
        if "error" in acc:
            rows.append({"source": src, "level": "all", "error": acc["error"]})
            continue
        rows.append({"source": src, "level": "all", "items": acc["n_items"],
                     **_prop("", acc["overall"]),
                     **_prop("ties_excluded_", acc["overall_ties_excluded"]),
                     "judge_ties": acc["n_judge_ties"], "no_majority": acc["n_no_majority"]})
        for level, lv in acc["by_level"].items():
            rows.append({"source": src, "level": level, "items": lv["n_items"],
                         **_prop("", lv["tie_broken"]),
                         **_prop("ties_excluded_", lv["ties_excluded"])})
    return rows


def aggregation_rows(data: dict) -> list[dict]:
    """Each source's overall accuracy against the plain majority and against each reliability
    model's weighted labels, side by side."""
    rows = []
    against = {"majority": data.get("accuracy_majority", data["accuracy"]),
               **(data.get("accuracy_weighted") or {})}
    for src in data["accuracy"]:
        for aggregation, per_source in against.items():
            acc = per_source.get(src) or per_source
            if "error" in acc:
                rows.append({"source": src, "aggregation": aggregation, "error": acc["error"]})
                continue
            rows.append({"source": src, "aggregation": aggregation, "items": acc["n_items"],
                         **_prop("", acc["overall"]),
                         **_prop("ties_excluded_", acc["overall_ties_excluded"])})
    return rows


def paired_test_rows(data: dict) -> list[dict]:
    return [dict(t) for t in data["paired_tests"]]


def matrix_rows(matrix: dict) -> list[dict]:
    if "error" in matrix:
        return [{"error": matrix["error"]}]
    rows = []
    for i, a in enumerate(matrix["sources"]):
        row = {"source": a}
        for j, b in enumerate(matrix["sources"]):
            row[b] = matrix["matrix"][i][j]
            row[f"n:{b}"] = matrix["counts"][i][j]
        rows.append(row)
    return rows


def reliability_rows(data: dict) -> list[dict]:
    rows = []
    for hit_type, sec in data["reliability"].items():
        alpha = sec.get("krippendorff_alpha") or {}
        fleiss = sec.get("fleiss_kappa") or {}
        rows.append({"hit_type": hit_type, "identities": sec.get("identities"),
                     "annotators": sec.get("n_annotators"), "items": sec.get("n_items"),
                     "votes": sec.get("n_votes"), "anonymous_votes": sec.get("n_anonymous_votes"),
                     "alpha_nominal": alpha.get("alpha"),
                     "alpha_ci_low": _ci(alpha.get("ci"), 0),
                     "alpha_ci_high": _ci(alpha.get("ci"), 1),
                     "fleiss_kappa": fleiss.get("kappa"),
                     "fleiss_ci_low": _ci(fleiss.get("ci"), 0),
                     "fleiss_ci_high": _ci(fleiss.get("ci"), 1),
                     "fleiss_raters_per_item": fleiss.get("raters_per_item"),
                     "fleiss_items": fleiss.get("n_items"),
                     "fleiss_items_excluded": fleiss.get("n_items_excluded"),
                     "error": sec.get("error") or alpha.get("error") or fleiss.get("error"),
                     "note": sec.get("note")})
    rel = data.get("score_reliability") or {}
    for level in ("ordinal", "interval"):
        a = rel.get(f"krippendorff_alpha_{level}")
        if a:
            rows.append({"hit_type": f"scores ({level})", "annotators": rel.get("n_annotators"),
                         "alpha_score": a.get("alpha"),
                         "alpha_ci_low": _ci(a.get("ci"), 0), "alpha_ci_high": _ci(a.get("ci"), 1),
                         "error": a.get("error")})
    return rows


def cohen_rows(data: dict) -> list[dict]:
    rows = []
    for h, sec in data["reliability"].items():
        cohen = sec.get("cohen_kappa") or {}
        if cohen.get("error") and not cohen.get("pairs"):
            rows.append({"hit_type": h, "error": cohen["error"]})
        for p in cohen.get("pairs", []):
            row = {"hit_type": h, **{k: v for k, v in p.items() if k != "ci"}}
            row["ci_low"], row["ci_high"] = _ci(p.get("ci"), 0), _ci(p.get("ci"), 1)
            rows.append(row)
    return rows


def leave_one_out_rows(data: dict) -> list[dict]:
    rows = []
    for h, sec in data["reliability"].items():
        loo = sec.get("leave_one_out") or {}
        if "error" in loo:
            rows.append({"hit_type": h, "error": loo["error"]})
            continue
        for a, r in loo.items():
            if not isinstance(r, dict) or "agreement" not in r:
                continue
            rows.append({"hit_type": h, "annotator": a, **_prop("", r["agreement"]),
                         "excluded_ties": r["n_excluded_ties"],
                         "excluded_alone": r["n_excluded_alone"]})
    return rows


def worker_model_rows(data: dict) -> list[dict]:
    """Per HIT type, annotator and reliability model: the estimated accuracy and interval."""
    rows = []
    for h, sec in data["reliability"].items():
        for model, fit in (sec.get("worker_models") or {}).items():
            if "error" in fit:
                rows.append({"hit_type": h, "reliability_model": model, "error": fit["error"]})
                continue
            named = list(fit["annotators"].items())
            if fit.get("anonymous"):
                named.append((ANONYMOUS_VOTES, fit["anonymous"]))
            for annotator, e in named:
                rows.append({"hit_type": h, "annotator": annotator, "reliability_model": model,
                             "n_votes": e["n_votes"], "estimated_accuracy": e["accuracy"],
                             "estimate_low": _ci(e["ci"], 0), "estimate_high": _ci(e["ci"], 1)})
    return rows


def score_correlation_rows(data: dict) -> list[dict]:
    """Per grading source: the instance level (per response) and the system level (per-model
    means over the same responses) correlation with the mean human score."""
    rows = []
    for s, c in data["score_correlation"].items():
        rows.append({"source": s, "level": "instance", **c})
        sys_ = (data.get("score_correlation_system") or {}).get(s)
        if sys_ is None:
            continue
        if "error" in sys_:
            rows.append({"source": s, "level": "system", "error": sys_["error"]})
            continue
        rows.append({"source": s, "level": "system", **sys_["correlation"],
                     "models": " | ".join(sys_["models"]),
                     "human_means": sys_["human_means"], "judge_means": sys_["judge_means"],
                     "responses_per_model": sys_["n_responses"]})
    return rows


def system_rows(data: dict) -> list[dict]:
    return [{"source": s, **{k: v for k, v in c.items() if k != "models"},
             "models": " | ".join(c.get("models", []))}
            for s, c in data["system_correlation"].items()]


def ratings_rows(data: dict) -> list[dict]:
    return [{"source": s, **r} for s, b in data["ratings"].items() for r in b.get("rows", [])]


def category_rows(data: dict) -> list[dict]:
    return [{"source": s, "category": c, "model": m, **v}
            for s, cats in data["category_win_rates"].items()
            for c, per in cats.items() for m, v in per.items()]


def position_rows(data: dict) -> list[dict]:
    rows = []
    for s, p in data["biases"]["position"].items():
        if "error" in p:
            rows.append({"source": s, "error": p["error"]})
            continue
        cons = p.get("consistency") or {}
        rows.append({"source": s, "verdicts": p["n_verdicts"], "ties": p["n_ties"],
                     **_prop("first_", p["first_rate"]), "first_rate_p": p["first_rate_p"],
                     "pairs_both_orders": p["n_pairs"], "consistency": cons.get("estimate"),
                     "consistency_n": cons.get("n")})
    return rows


def length_rows(data: dict) -> list[dict]:
    rows = []
    for s, lb in data["biases"]["length"].items():
        if "error" in lb:
            rows.append({"source": s, "bin": "all", "error": lb["error"]})
            continue
        rows.append({"source": s, "bin": "all", **_prop("longer_wins_", lb["overall"]),
                     "equal_length": lb["n_equal_length"], "ties": lb["n_ties"]})
        for b in lb["bins"]:
            rows.append({"source": s, "bin": f"[{b['low']:g}, {b['high']:g}]",
                         **_prop("longer_wins_", b["longer_wins"]), "ties": b["n_ties"]})
    return rows


def length_control_rows(data: dict) -> list[dict]:
    """Per source: the length-controlled coefficient with its CI and the length share."""
    return [{"source": s, **r} for s, r in data["biases"].get("length_control", {}).items()]


def self_preference_rows(data: dict) -> list[dict]:
    rows = []
    for s, r in data["biases"]["self_preference"].items():
        if "error" in r:
            rows.append({"judge": s, "family": r.get("family"), "error": r["error"]})
            continue
        rows.append({"judge": s, "family": r["family"], "items": r["n_items"],
                     "judge_win_rate": r["judge_win_rate"]["estimate"],
                     "human_win_rate": r["human_win_rate"]["estimate"],
                     "difference": r["difference"],
                     "mcnemar_p": (r.get("paired_test") or {}).get("p_value")})
    return rows


def win_rate_gap_rows(data: dict) -> list[dict]:
    rows = []
    for s, g in data["biases"]["win_rate_gap"].items():
        for m, r in (g.get("per_model") or {}).items():
            rows.append({"source": s, "model": m, **r})
    return rows


def all_tables(data: dict) -> dict[str, list[dict]]:
    """{csv file stem: rows}; empty tables are left out."""
    tables = {
        "accuracy": accuracy_rows(data),
        "accuracy_by_aggregation": aggregation_rows(data),
        "paired_tests": paired_test_rows(data),
        **{f"agreement_{name.replace(':', '')}": matrix_rows(m)
           for name, m in data["agreement_matrices"].items()},
        "reliability": reliability_rows(data),
        "cohen_kappa": cohen_rows(data),
        "leave_one_out": leave_one_out_rows(data),
        "worker_reliability": worker_model_rows(data),
        "score_correlation": score_correlation_rows(data),
        "ratings": ratings_rows(data),
        "system_correlation": system_rows(data),
        "category_win_rates": category_rows(data),
        "position_bias": position_rows(data),
        "length_bias": length_rows(data),
        "length_control": length_control_rows(data),
        "self_preference": self_preference_rows(data),
        "win_rate_gap": win_rate_gap_rows(data),
    }
    return {k: v for k, v in tables.items() if v}


def to_csv(rows: list[dict]) -> str:
    columns = list(dict.fromkeys(k for r in rows for k in r))
    out = io.StringIO()
    writer = csv_safety.SafeDictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: "" if r.get(k) is None else _cell(r.get(k)) for k in columns})
    return out.getvalue()


def _cell(v):
    if isinstance(v, float):
        return repr(v)  # full precision (shortest round-trip form); the HTML rounds
    if isinstance(v, list | tuple):
        return " ".join(map(str, v))
    if isinstance(v, dict):
        return "; ".join(f"{k}={x}" for k, x in v.items())
    return v  # text is neutralised by csv_safety (worker-supplied, never a formula)
