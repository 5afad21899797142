"""Build the report's data dict (what becomes report.json) from the database.

Selectors turn judgments into per-item verdicts; every number comes from the pure functions
of ``agreement.statistics`` and ``judging.ratings``. Items are (comparison, turn) pairs.
Sources are ``human`` (the majority of the human votes on an item), each automatic judge by
name, and each reference metric as a pairwise judge, ``metric:<name>`` (higher score wins).

Conventions, stated again in the report: human "tie" votes are dropped before majorities
(the HIT is forced-choice); accuracy against the human majority uses model-vs-model items only
(no comparison involves the human-verified reference), as VisIT-Bench §4.3 does; judge ties
are broken at random with the report's seed and also reported with ties excluded.
"""
from __future__ import annotations

import platform
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from itertools import combinations

import numpy as np
from django.utils import timezone

from agreement import metric_provenance
from agreement import metrics as metric_lib
from agreement import statistics as st
from judging import ratings
from judging.selectors import reference_model_name

from .. import selectors
from ..services.metric_scores import DEFAULT_METRICS, check_metrics, metric_scores_ensure

REPORT_SCHEMA = "agreement-report/1"
HTML_TEMPLATE_VERSION = "agreement/report_standalone.html@1"
HUMAN = "human"
COHEN_MAX_ANNOTATORS = 30
COHEN_MIN_SHARED = 3
LENGTH_BINS = 4
FLIP = {"A": "B", "B": "A", "tie": "tie"}
CHOICES = ("A", "B", "tie")
CODES = {"A": 0.0, "B": 1.0, "tie": 2.0}  # nominal: only equality of codes matters


@dataclass
class ReportParams:
    judges: list[str] | None = None  # None: every automatic judge with verdicts
    split: str = "all"
    seed: int = 0
    metrics: list[str] = field(default_factory=lambda: list(DEFAULT_METRICS))
    bootstrap_rounds: int = 1000
    exclude_blocked: bool = False
    judge_families: dict[str, str] = field(default_factory=dict)
    metric_options: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"judges": self.judges, "split": self.split, "seed": self.seed,
                "metrics": list(self.metrics), "bootstrap_rounds": self.bootstrap_rounds,
                "exclude_blocked": self.exclude_blocked,
                "judge_families": dict(self.judge_families),
                "metric_options": dict(self.metric_options)}

    @classmethod
    def from_dict(cls, d: dict) -> ReportParams:
        p = cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})
        if p.bootstrap_rounds < 0 or p.bootstrap_rounds > 10_000:
            raise ValueError("bootstrap_rounds must be within 0..10000")
        selectors.split_turns(p.split)  # raises UnknownSplit
        check_metrics(p.metrics)
        return p


def _version(pkg: str) -> str:
    try:
        return version(pkg)
    except PackageNotFoundError:
        return "?"


def _try(fn, *args, **kwargs):
    """Run one statistic; a statistic undefined on this data becomes {'error': why}."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*args, **kwargs)
        return out.to_dict() if hasattr(out, "to_dict") else out
    except (ValueError, ZeroDivisionError) as exc:
        return {"error": str(exc)}


class _Data:
    """Per-item verdicts of every source, built once from the selectors."""

    def __init__(self, params: ReportParams):
        self.params = params
        self.pd = selectors.pairwise_data(params.split, params.judges, params.exclude_blocked)
        self.main_turns = selectors.split_turns(params.split)
        self.info = self.pd.comparisons
        self.reference = reference_model_name()
        human = self.pd.votes.get(HUMAN, {})
        self.human_votes = {k: [v[1] for v in vs if v[1] != "tie"] for k, vs in human.items()}
        self.human_tie_votes = sum(v[1] == "tie" for vs in human.values() for v in vs)
        self.human_votes = {k: v for k, v in self.human_votes.items() if v}
        keys = list(self.human_votes)
        self.majority = dict(zip(keys, st.majority_labels(
            [self.human_votes[k] for k in keys], labels=("A", "B")), strict=True)) if keys else {}
        self.judges = sorted(s for s in self.pd.votes if s != HUMAN)
        self.verdicts: dict[str, dict] = {
            j: {k: v[0][1] for k, v in self.pd.votes[j].items()} for j in self.judges}
        self.items = sorted({k for per in self.pd.votes.values() for k in per},
                            key=lambda k: (k[0], k[1]))
        self._responses_by_turn = None
        self.metric_summary: dict = {}
        self.metric_scores: dict = {}
        if params.metrics:
            self.metric_summary, self.metric_scores = metric_scores_ensure(
                params.metrics, params.metric_options)
            for name in params.metrics:
                self.verdicts[f"metric:{name}"] = self._metric_verdicts(self.metric_scores[name])
        self.automatic = self.judges + [f"metric:{m}" for m in params.metrics]

    # -- items --------------------------------------------------------------------------
    def pair(self, key) -> tuple[int, int] | None:
        """Response ids (A side, B side) an item's verdict is about (None for 'overall')."""
        comp, turn = key
        c = self.info[comp]
        if turn == "":
            return c.response_a, c.response_b
        if turn not in ("1", "2", "3"):
            return None
        if self._responses_by_turn is None:
            self._responses_by_turn = selectors.responses_for_turns(self.info)
        a = self._responses_by_turn.get((c.instance_id, c.model_a, int(turn)))
        b = self._responses_by_turn.get((c.instance_id, c.model_b, int(turn)))
        return (a, b) if a and b else None

    def _metric_verdicts(self, scores: dict[int, float]) -> dict:
        out = {}
        for key in self.items:
            pair = self.pair(key)
            if pair and pair[0] in scores and pair[1] in scores:
                out[key] = metric_lib.metric_pairwise_verdict(scores[pair[0]], scores[pair[1]])
        return out

    def main_items(self) -> list:
        return [k for k in self.items if k[1] in self.main_turns]

    def involves_reference(self, key) -> bool:
        c = self.info[key[0]]
        return self.reference is not None and self.reference in (c.model_a, c.model_b)


# ----------------------------------------------------------------------- sections


def _accuracy(d: _Data, seed: int) -> tuple[dict, list, list]:
    items = [k for k in d.main_items() if k in d.human_votes and not d.involves_reference(k)]
    acc, covered = {}, {}
    for src in d.automatic:
        keys = [k for k in items if k in d.verdicts[src]]
        covered[src] = set(keys)
        acc[src] = (_try(st.accuracy_vs_majority, [d.human_votes[k] for k in keys],
                         [d.verdicts[src][k] for k in keys], seed=seed)
                    if keys else {"error": "no model-vs-model item with this source's verdict"})
    tests = []
    for a, b in combinations(d.automatic, 2):
        keys = sorted(covered[a] & covered[b])
        if not keys:
            continue
        res = _try(st.compare_judges, [d.human_votes[k] for k in keys],
                   [d.verdicts[a][k] for k in keys], [d.verdicts[b][k] for k in keys], seed=seed)
        tests.append({"judge_a": a, "judge_b": b, **res})
    return acc, tests, items


def _matrices(d: _Data) -> dict:
    groups = {"main": set(d.main_turns)}
    turns_present = {k[1] for k in d.items}
    for t in ("1", "2", "3", "overall"):
        if t in turns_present and {t} != groups["main"]:
            groups[f"turn:{t}" if t != "overall" else "overall"] = {t}
    out = {}
    for name, turns in groups.items():
        labels = {"human (majority)": {k: v for k, v in d.majority.items() if k[1] in turns}}
        for src in d.automatic:
            labels[src] = {k: v for k, v in d.verdicts[src].items() if k[1] in turns}
        labels = {s: v for s, v in labels.items() if v}
        if len(labels) >= 2:
            out[name] = _try(st.agreement_matrix, labels)
    return out


def _split_identities(votes: list[tuple]) -> tuple[dict[str, dict], dict, set[str]]:
    """One HIT type's human votes [(item, annotator, choice, worker id)], in time order ->
    ({annotator: {item: latest choice}} of identified annotators, {item: [anonymous
    choices]}, anonymous annotator strings).

    Identities are missing for an annotator string that holds two or more votes on the same
    item with no worker account behind them (e.g. VisIT-Bench's preference CSV imported as
    "visitbench-crowd"): one person votes once per item, so these can only be distinct
    anonymous votes, and every vote under that string is one. A worker account that voted
    twice on an item is still one identified annotator (its latest vote counts, as before).
    """
    per: dict[tuple, int] = Counter((k, a) for k, a, _, w in votes if w is None)
    anonymous = {a for (_, a), n in per.items() if n >= 2}
    identified: dict[str, dict] = defaultdict(dict)
    pooled: dict = defaultdict(list)
    for key, annotator, choice, _ in votes:
        if annotator in anonymous:
            pooled[key].append(choice)
        else:
            identified[annotator][key] = choice
    return dict(identified), dict(pooled), anonymous


def _reliability(d: _Data, seed: int, rounds: int) -> dict:
    """Per HIT type: Krippendorff's alpha (nominal) and Fleiss' kappa from the vote counts of
    each item (no identities needed), Cohen's kappa per pair and leave-one-out per annotator
    only for identified annotators; every coefficient with a seeded bootstrap CI over items."""
    by_type: dict[str, list[tuple]] = defaultdict(list)
    for key, votes in d.pd.votes.get(HUMAN, {}).items():
        if key[1] not in d.main_turns:
            continue
        for annotator, choice, worker, hit_type, _ in votes:
            by_type[hit_type].append((key, annotator, choice, worker))
    out = {}
    for hit_type, votes in sorted(by_type.items()):
        ann, pooled, anonymous = _split_identities(votes)
        per_item: dict = defaultdict(list)
        for items in ann.values():
            for k, v in items.items():
                per_item[k].append(v)
        for k, vs in pooled.items():
            per_item[k].extend(vs)
        n_anon = sum(len(v) for v in pooled.values())
        sec: dict = {"n_annotators": len(ann), "n_votes": sum(len(v) for v in per_item.values()),
                     "n_items": len(per_item),
                     "identities": ("missing" if not ann else "partial" if anonymous
                                    else "present"),
                     "anonymous_annotators": sorted(anonymous), "n_anonymous_votes": n_anon}
        if anonymous:
            sec["note"] = _identity_note(anonymous, n_anon, len(ann))
        if not anonymous and len(ann) < 2:
            sec["error"] = "fewer than two annotators"
            out[hit_type] = sec
            continue
        if anonymous:  # alpha needs only each item's counts: exact without identities
            table, _ = st.label_counts(list(per_item.values()), CHOICES)
            sec["krippendorff_alpha"] = _try(st.krippendorff_alpha_from_counts, table,
                                             "nominal", n_boot=rounds, seed=seed)
        else:  # unchanged path (same resampling order, same CI as before)
            sec["krippendorff_alpha"] = _try(st.krippendorff_alpha,
                                             _numeric_matrix(ann, CODES.__getitem__), "nominal",
                                             n_boot=rounds, seed=seed)
        fleiss = _try(st.fleiss_kappa, list(per_item.values()), categories=CHOICES,
                      unequal_raters="modal", n_boot=rounds, seed=seed)
        sec["fleiss_kappa"] = ({"raters_per_item": fleiss.get("n_raters"), **fleiss}
                               if "error" not in fleiss else fleiss)
        if len(ann) < 2:
            why = sec.get("note", "fewer than two identified annotators")
            sec["cohen_kappa"] = {"error": f"not available: {why}", "pairs": []}
            sec["leave_one_out"] = {"error": f"not available: {why}"}
            out[hit_type] = sec
            continue
        top = [a for a, _ in Counter({a: len(v) for a, v in ann.items()})
               .most_common(COHEN_MAX_ANNOTATORS)]
        pairs = _try(st.pairwise_cohen_kappa, {a: ann[a] for a in sorted(top)},
                     min_shared=COHEN_MIN_SHARED, n_boot=rounds, seed=seed)
        sec["cohen_kappa"] = {"annotators_considered": len(top), "min_shared": COHEN_MIN_SHARED,
                              "pairs": pairs if isinstance(pairs, list) else [],
                              **({"error": pairs["error"]} if isinstance(pairs, dict) else {})}
        if isinstance(pairs, list):
            sec["cohen_kappa"]["pairs"] = [p.to_dict() for p in pairs]
        loo = _try(st.leave_one_out_agreement, ann)
        sec["leave_one_out"] = ({a: r.to_dict() for a, r in sorted(loo.items())}
                                if isinstance(loo, dict) and "error" not in loo else loo)
        out[hit_type] = sec
    return out


def _identity_note(anonymous: set[str], n_anon: int, n_identified: int) -> str:
    names = ", ".join(repr(a) for a in sorted(anonymous)[:3]) + (" …" if len(anonymous) > 3
                                                                else "")
    text = (f"{n_anon} votes carry no annotator identity (annotator {names} holds several "
            "votes on the same item, so they are anonymous votes); alpha and Fleiss' kappa use "
            "each item's vote counts")
    if n_identified >= 2:
        return text + (f"; Cohen's kappa and leave-one-out cover the {n_identified} identified "
                       "annotators only")
    return text + "; Cohen's kappa and leave-one-out need to know who cast each vote"


def _numeric_matrix(annotations: dict, to_number) -> np.ndarray:
    """{annotator: {item: value}} -> coders x items float matrix, NaN = missing (the fast,
    numeric input of krippendorff_alpha; an object matrix costs seconds at 100k votes)."""
    items = {k: j for j, k in enumerate(dict.fromkeys(k for a in annotations.values()
                                                       for k in a))}
    mat = np.full((len(annotations), len(items)), np.nan)
    for i, per in enumerate(annotations.values()):
        for k, v in per.items():
            mat[i, items[k]] = to_number(v)
    return mat


def _score_key(response: int, turn: str) -> tuple[int, str]:
    """A graded item: the response, plus whether the grade is of the whole conversation. A
    per-turn grade is already tied to that turn's response, so its turn label ('' from the
    rubric HIT, '1'-'3' from a judge grading a conversation) does not separate items."""
    return response, "overall" if turn == "overall" else ""


@dataclass
class _ScoreData:
    reliability: dict
    correlation: dict  # instance level: per response, judge score vs mean human score
    correlation_system: dict  # per model: mean judge score vs mean human score
    by_source: dict  # {source: {graded item: score}} (human: the mean of the human scores)
    n_judgments: int
    n_responses: int
    judgments_by_source: dict


def _scores(d: _Data, seed: int, rounds: int) -> _ScoreData:
    """Score reliability, human-vs-judge score correlation at the instance and the system
    level (for every grading judge and every metric), and scores by source."""
    rows = selectors.score_judgments(d.params.split, d.params.judges)
    human: dict[str, dict] = defaultdict(dict)
    judge: dict[str, dict] = defaultdict(dict)
    model_of: dict[int, str] = {}
    for response, source, annotator, score, turn, model in rows:
        model_of[response] = model
        if source == HUMAN:
            human[annotator][_score_key(response, turn)] = score
        else:
            judge[source][_score_key(response, turn)] = score  # latest wins
    reliability = {}
    if len(human) >= 2:
        mat = _numeric_matrix(human, float)
        for level in ("ordinal", "interval"):
            reliability[f"krippendorff_alpha_{level}"] = _try(
                st.krippendorff_alpha, mat, level, n_boot=rounds, seed=seed)
        reliability["n_annotators"] = len(human)
    units: dict = defaultdict(list)
    for items in human.values():
        for k, v in items.items():
            units[k].append(v)
    mean_human = {k: float(np.mean(v)) for k, v in units.items()}
    graders = {src: scores for src, scores in sorted(judge.items())}
    for name, scores in d.metric_scores.items():
        graders[f"metric:{name}"] = {k: scores[k[0]] for k in mean_human if k[0] in scores}
    corr, system = {}, {}
    for src, scores in graders.items():
        keys = [k for k in mean_human if k in scores]
        if src.startswith("metric:") and len(keys) < 2:
            continue  # a metric with (almost) no human-scored response: nothing to say
        if not keys:
            corr[src] = system[src] = {"error": "no response scored by both humans and this source"}
            continue
        human_s, judge_s = [mean_human[k] for k in keys], [scores[k] for k in keys]
        corr[src] = _try(st.score_correlation, human_s, judge_s)
        system[src] = _try(st.system_score_correlation, [model_of[k[0]] for k in keys],
                           human_s, judge_s)
    by_source = {HUMAN: mean_human, **judge} if mean_human else dict(judge)
    return _ScoreData(reliability, corr, system, by_source, len(rows), len(model_of),
                      dict(sorted(Counter(r[1] for r in rows).items())))


def _rows_for(d: _Data, src: str, keys) -> list[tuple]:
    out = []
    for k in keys:
        c = d.info[k[0]]
        if src == HUMAN:
            out += [(c.model_a, c.model_b, v) for v in d.human_votes.get(k, ())]
        elif k in d.verdicts[src]:
            out.append((c.model_a, c.model_b, d.verdicts[src][k]))
    return out


def _ratings(d: _Data, seed: int, rounds: int) -> tuple[dict, dict, dict]:
    keys = d.main_items()
    boards, system, categories = {}, {}, {}
    for src in [HUMAN, *d.automatic]:
        rows = _rows_for(d, src, keys)
        if not rows:
            continue
        names = {r[0] for r in rows} | {r[1] for r in rows}
        ref = d.reference if d.reference in names else None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                table = ratings.leaderboard(rows, reference=ref, bootstrap_rounds=rounds,
                                            seed=seed)
        except ValueError as exc:
            boards[src] = {"error": str(exc)}
            continue
        boards[src] = {"n_judgments": len(rows), "rows": [
            {"model": r.model, "rating": r.bt_rating, "ci_low": r.ci_low, "ci_high": r.ci_high,
             "rank": r.rank, "elo": r.elo, "matches": r.matches,
             "win_rate_vs_reference": r.win_rate_vs_reference,
             "n_vs_reference": r.n_vs_reference} for r in table]}
        if ref is not None:
            per_cat = defaultdict(list)
            for k in keys:
                per_cat[d.info[k[0]].category].append(k)
            cats = {}
            for cat, ck in sorted(per_cat.items()):
                crows = _rows_for(d, src, ck)
                if any(ref in r[:2] for r in crows):
                    cats[cat or "(none)"] = {m: {"win_rate": w, "n": n} for m, (w, n) in
                                             ratings.win_rates_vs(crows, ref).items()}
            categories[src] = cats
    human = {r["model"]: r["rating"] for r in boards.get(HUMAN, {}).get("rows", [])}
    for src in d.automatic:
        other = {r["model"]: r["rating"] for r in boards.get(src, {}).get("rows", [])}
        if human and other:
            system[src] = _try(st.system_correlation, human, other)
    return boards, system, categories


def _outcome(verdict, model_side: str):
    if verdict is None:
        return None
    return 0.5 if verdict == "tie" else float(verdict == model_side)


def _biases(d: _Data, lengths: dict[int, int], score_rows: dict) -> dict:
    keys = d.main_items()
    out: dict = {"position": {}, "length": {}, "length_boxes": {}, "lengths_by_score": {},
                 "self_preference": {}, "win_rate_gap": {}}
    # position: humans on screen (choices are stored in the comparison's sides)
    screen = [FLIP[v[1]] if d.info[k[0]].swapped else v[1]
              for k in keys for v in d.pd.votes.get(HUMAN, {}).get(k, ())]
    if screen:
        out["position"][HUMAN] = _try(st.position_bias, screen)
    orderings = selectors.judge_orderings(d.judges) if d.judges else {}
    uuids = selectors.comparison_uuids({k[0] for k in keys}) if orderings else {}

    def norm(v):
        return v if v in ("A", "B") else "tie"

    for judge, per in orderings.items():
        ab, ba = [], []
        for k in keys:
            res = per.get(uuids.get(k[0], ""), {})
            turn = "" if k[1] == "" else k[1]
            if "AB" in res and "BA" in res and turn in res["AB"] and turn in res["BA"]:
                ab.append(norm(res["AB"][turn]))
                ba.append(norm(res["BA"][turn]))
        if ab:
            out["position"][judge] = _try(st.position_bias, ab, ba)
    # length: win rate of the longer response, and preferred/other length distributions
    for src in [HUMAN, *d.automatic]:
        verdicts = d.majority if src == HUMAN else d.verdicts[src]
        la, lb, vs = [], [], []
        for k in keys:
            pair, v = d.pair(k), verdicts.get(k)
            if pair and v is not None and pair[0] in lengths and pair[1] in lengths:
                la.append(lengths[pair[0]])
                lb.append(lengths[pair[1]])
                vs.append(v)
        if not vs:
            continue
        out["length"][src] = _try(st.length_bias, la, lb, vs, bins=LENGTH_BINS)
        chosen = [a if v == "A" else b for a, b, v in zip(la, lb, vs, strict=True) if v != "tie"]
        other = [b if v == "A" else a for a, b, v in zip(la, lb, vs, strict=True) if v != "tie"]
        out["length_boxes"][src] = {"preferred": chosen, "other": other}
    for src, scores in score_rows.items():
        ks = [k for k in scores if k[0] in lengths]
        if ks:
            res = _try(st.lengths_by_score, [scores[k] for k in ks], [lengths[k[0]] for k in ks])
            out["lengths_by_score"][src] = res
    # self-preference: a judge's family vs the human majority on the same items
    families = selectors.model_families()
    for judge in d.judges:
        fam = d.params.judge_families.get(judge) or _infer_family(judge, families)
        if not fam:
            out["self_preference"][judge] = {"error": "judge family unknown (pass judge_families)"}
            continue
        members = {m for m, f in families.items() if f == fam}
        ks = [k for k in keys if k in d.verdicts[judge] and k in d.majority]
        res = _try(st.self_preference, [d.info[k[0]].model_a for k in ks],
                   [d.info[k[0]].model_b for k in ks], [d.verdicts[judge][k] for k in ks],
                   [d.majority[k] for k in ks], members) if ks else {"error": "no shared item"}
        out["self_preference"][judge] = {"family": fam, **res}
    # gap between human and automatic win rate against the reference
    ref_keys = [k for k in keys if d.involves_reference(k) and k in d.human_votes]
    for src in d.automatic:
        models, h, j = [], [], []
        for k in ref_keys:
            c = d.info[k[0]]
            side = "A" if c.model_b == d.reference else "B"
            models.append(c.model_a if side == "A" else c.model_b)
            h.append(_outcome(d.majority[k] or "tie", side))
            j.append(_outcome(d.verdicts[src].get(k), side))
        if models and any(x is not None for x in j):
            out["win_rate_gap"][src] = _try(st.win_rate_gap, models, h, j)
    return out


def _infer_family(judge: str, families: dict[str, str]) -> str:
    """A judge's family: the family of the evaluated model its API model name matches."""
    try:
        from judging.judges.models import Judge
    except ImportError:  # pragma: no cover
        return ""
    model_name = (Judge.objects.filter(name=judge).order_by("-created_at")
                  .values_list("model_name", flat=True).first() or "").lower()
    if not model_name:
        return ""
    for name, fam in families.items():
        if fam and (name.lower() == model_name or fam.lower() in model_name):
            return fam
    return ""


def _box_summary(values: list) -> dict:
    if not values:
        return {"n": 0}
    q = np.quantile(values, [0, 0.25, 0.5, 0.75, 1])
    return {"n": len(values), "min": float(q[0]), "q1": float(q[1]), "median": float(q[2]),
            "q3": float(q[3]), "max": float(q[4]), "mean": float(np.mean(values))}


def build_report_data(params: ReportParams) -> tuple[dict, dict]:
    """(report dict, plot inputs not stored in JSON, e.g. raw length lists)."""
    d = _Data(params)
    seed, rounds = params.seed, params.bootstrap_rounds
    accuracy, tests, acc_items = _accuracy(d, seed)
    matrices = _matrices(d)
    reliability = _reliability(d, seed, rounds)
    scores = _scores(d, seed, rounds)
    score_rows = scores.by_source
    boards, system, categories = _ratings(d, seed, rounds)
    ids = {r for k in d.items if (p := d.pair(k)) for r in p}
    ids |= {k[0] for rows in score_rows.values() for k in rows}
    lengths = {pk: len(text.split()) for pk, text in selectors.response_texts(ids).items()}
    biases = _biases(d, lengths, score_rows)
    boxes = biases.pop("length_boxes")
    biases["length_distributions"] = {
        src: {"preferred": _box_summary(v["preferred"]), "other": _box_summary(v["other"])}
        for src, v in boxes.items()}
    for res in biases["lengths_by_score"].values():
        if isinstance(res, dict):
            res.pop("lengths", None)
    main = d.main_items()
    main_set = set(main)
    feedback = selectors.feedback_judgments(params.split, params.judges)
    counts = {
        # every kind of judgment the report read: pairwise, score (graded responses), feedback
        "judgments_used": d.pd.n_judgments + scores.n_judgments + len(feedback),
        "judgments_by_kind": {"pairwise": d.pd.n_judgments, "score": scores.n_judgments,
                              "feedback": len(feedback)},
        "judgments_by_kind_and_source": {
            f"{kind}/{src}": n for kind, per in (
                ("pairwise", d.pd.judgments_by_source), ("score", scores.judgments_by_source),
                ("feedback", Counter(src for _, src in feedback)))
            for src, n in sorted(per.items())},
        "pairwise_judgments": d.pd.n_judgments,
        "items": len(main),
        "items_all_turns": len(d.items),
        "comparisons": len({k[0] for k in main}),
        "human_votes": sum(len(v) for k, v in d.human_votes.items() if k in main_set),
        "human_tie_votes_dropped": d.human_tie_votes,
        "items_with_human_votes": sum(k in d.human_votes for k in main),
        "model_vs_model_items": len(acc_items),
        "model_vs_model_items_with_majority": sum(d.majority[k] is not None for k in acc_items),
        "verdicts_by_source": {s: sum(k in d.verdicts[s] for k in main) for s in d.automatic},
        "score_judgments": scores.n_judgments,
        "graded_responses": scores.n_responses,
        "feedback_judgments": len(feedback),
        "feedback_responses": len({r for r, _ in feedback}),
    }
    snapshot = {
        "schema": REPORT_SCHEMA,
        "generated_at": timezone.now().isoformat(),
        "filters": {"split": params.split, "judges_requested": params.judges,
                    "judges_found": d.judges,
                    "score_judges_found": sorted(s for s in scores.by_source if s != HUMAN),
                    "metrics": list(params.metrics),
                    "exclude_blocked": params.exclude_blocked,
                    "main_turns": list(d.main_turns)},
        "seed": seed,
        "bootstrap_rounds": rounds,
        "reference_model": d.reference,
        "counts": counts,
        "database": selectors.database_counts(),
        "data_fingerprint": d.pd.fingerprint,
        "template_versions": {
            "report_schema": REPORT_SCHEMA, "html_template": HTML_TEMPLATE_VERSION,
            "hit_types": d.pd.hit_versions, "judges": d.pd.judge_versions,
            "metrics": {m: s["config_hash"] for m, s in d.metric_summary.items()}},
        "software": {"python": platform.python_version(),
                     **{p: _version(p) for p in ("django", "numpy", "scipy", "krippendorff",
                                                 "matplotlib")}},
        "conventions": [
            "Items are (comparison, turn); the main analysis uses turns "
            f"{list(d.main_turns)} of split {params.split!r}.",
            "Human 'tie' votes are dropped before majorities; an item with equal A and B "
            "votes has no majority and is left out of accuracies.",
            "Accuracy vs the human majority uses model-vs-model comparisons only.",
            f"Judge ties are broken uniformly at random with seed {seed}; 'ties excluded' "
            "drops them instead. CIs are 95 % Wilson and Clopper-Pearson.",
            "Metric judges: the response with the higher metric score wins; equal scores tie.",
            f"Cohen's kappa: the {COHEN_MAX_ANNOTATORS} most active annotators, pairs sharing "
            f">= {COHEN_MIN_SHARED} items. Fleiss' kappa: items with the most common number "
            "of votes (it needs the same number per item); Krippendorff's alpha (nominal): "
            "every item with >= 2 votes. Every alpha and kappa has a 95 % percentile "
            f"bootstrap CI over items ({rounds} resamples, seed {seed}).",
            "Annotator identity: an annotator string holding two or more votes on one item "
            "without a worker account (e.g. an aggregated preference file imported under one "
            "name) stands for anonymous votes. Alpha and Fleiss' kappa need only each item's "
            "vote counts and use them; Cohen's kappa and leave-one-out need identities and "
            "cover identified annotators only (not available when there are none).",
            "Score correlation: each response's mean human score vs a judge's (or metric's) "
            "score, per response (instance level) and as per-model means over the same "
            "responses (system level); Pearson, Kendall tau-b, Spearman with two-sided "
            "p-values.",
            "Feedback judgments are counted in the snapshot; this report does not analyse them.",
            "Length = number of whitespace-separated tokens.",
        ],
    }
    data = {
        "snapshot": snapshot,
        "sources": [HUMAN, *d.automatic],
        "metrics": d.metric_summary,
        "metric_provenance": metric_provenance.provenance(d.metric_summary),
        "accuracy": accuracy,
        "paired_tests": tests,
        "agreement_matrices": matrices,
        "reliability": reliability,
        "score_reliability": scores.reliability,
        "score_correlation": scores.correlation,
        "score_correlation_system": scores.correlation_system,
        "ratings": boards,
        "system_correlation": system,
        "category_win_rates": categories,
        "biases": biases,
    }
    return _plain(data), {"length_boxes": boxes}


def _plain(obj):
    """JSON-ready copy: numpy scalars to Python numbers, NaN/inf to None, tuples to lists."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | np.ndarray):
        return [_plain(v) for v in obj]
    if isinstance(obj, bool | np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return float(obj) if np.isfinite(obj) else None
    return obj
