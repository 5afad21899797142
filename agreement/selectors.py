"""Reads for the agreement app: judgments, responses and cached scores as plain rows and dicts.

Everything is fetched with ``values_list`` in a handful of queries (no per-row ORM objects), so a
report over 100,000 judgments spends its time in numpy, not in the ORM. The split names are
judging's (``all``, ``single``, ``multi``, ``overall``, ``turn:N``, ``category:<name>``); the
agreement matrices additionally look at every turn of the same instances.
"""
from __future__ import annotations

import hashlib
from array import array
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from django.db.models import Count, Max, Q

from annotation.core import analytic
from annotation.core.id_lists import IdsIn
from annotation.models import Instance
from judging import ratings
from judging.models import Comparison, EvalModel, Judge, Judgment, Response
from judging.selectors import (
    UnknownSplit,
    counted_grades,
    current_verdicts,
    judge_ordering_results,
    study_id,
    without_trial_votes,
)
from studies.models import study_pk

from .models import MetricScore

ONE_VERDICT_TURNS = ("", "overall")


def _instance_filter(split: str, prefix: str) -> Q:
    """The instance part of a split (kind / category); turns are handled by ``split_turns``."""
    if split in ("all", "overall", "turn:1", "turn:2", "turn:3"):
        return Q()
    if split == "single":
        return Q(**{f"{prefix}kind": Instance.Kind.SINGLE})
    if split == "multi":
        return Q(**{f"{prefix}kind": Instance.Kind.MULTI})
    if split.startswith("category:") and split[9:]:
        return Q(**{f"{prefix}family__name": split[9:]})
    raise UnknownSplit(
        f"unknown split {split!r}; use all, single, multi, overall, turn:1..3 or category:<name>"
    )


def split_check(split: str) -> None:
    """Refuse a split that names nothing: a malformed one, or a category no instance has (a
    report over it would finish "done" and empty)."""
    _instance_filter(split, "")
    if split.startswith("category:") and not Instance.objects.filter(
            family__name=split[9:]).exists():
        raise UnknownSplit(f"unknown split {split!r}: no instance is in category "
                           f"{split[9:]!r}")


def split_turns(split: str) -> tuple[str, ...]:
    """The Judgment.turn values a split's main analysis uses (one verdict per item)."""
    _instance_filter(split, "")
    if split == "overall":
        return ("overall",)
    if split in ("turn:1", "turn:2", "turn:3"):
        return (split[-1],)
    if split in ("single", "multi"):
        return ("",)
    return ONE_VERDICT_TURNS


@dataclass(slots=True)
class ComparisonInfo:
    instance_id: int
    category: str
    kind: str
    swapped: bool
    response_a: int
    response_b: int
    model_a: str
    model_b: str
    family_a: str
    family_b: str


@dataclass
class PairwiseData:
    """Pairwise verdicts of every source on the split's instances, keyed by (comparison, turn)."""

    comparisons: dict[int, ComparisonInfo]
    # source -> item -> list of (annotator, choice, worker_id, hit_type, hit_version)
    votes: dict[str, dict[tuple[int, str], list[tuple]]] = field(default_factory=dict)
    judge_versions: dict[str, list[str]] = field(default_factory=dict)
    hit_versions: dict[str, list[str]] = field(default_factory=dict)
    n_judgments: int = 0
    judgments_by_source: dict[str, int] = field(default_factory=dict)
    fingerprint: str = ""


def pairwise_data(split: str = "all", judges: list[str] | None = None,
                  exclude_blocked: bool = False, include_trial: bool = False, *,
                  study=None) -> PairwiseData:
    """All pairwise judgments (humans + ``judges``, or every judge when None) on the split's
    instances, every turn, gold comparisons excluded (and trial batches' votes unless
    ``include_trial``). Later verdicts of a judge replace earlier ones on the same item (a
    re-run), humans keep every vote."""
    qs = (Judgment.objects.filter(kind=Judgment.Kind.PAIRWISE, comparison__isnull=False,
                                  choice__in=ratings.VOTES, comparison__gold_choice="",
                                  study_id=study_id(study))
          .filter(_instance_filter(split, "comparison__instance__")))
    if judges is not None:
        qs = qs.filter(source__in=[Judgment.HUMAN, *judges])
    if exclude_blocked:
        qs = qs.exclude(worker__blocked=True)
    qs = without_trial_votes(qs, include_trial)
    qs = current_verdicts(qs, "comparison")  # superseded generations are neither used nor counted
    rows = analytic.each_row(qs.order_by("created_at", "pk").values_list(
        "pk", "comparison_id", "turn", "source", "annotator", "choice", "worker_id",
        "assignment__task__batch__hit_type", "assignment__hit_type_version"), jit=False)
    votes: dict[str, dict] = defaultdict(lambda: defaultdict(list))
    judge_versions: dict[str, set] = defaultdict(set)
    hit_versions: dict[str, set] = defaultdict(set)
    by_source: Counter = Counter()
    # Rows are folded as they come. Keys and votes repeat (an item has several voters, a
    # voter few distinct vote tuples), so each distinct one is kept once: a million verdicts'
    # own tuples were most of a report's memory.
    shared: dict = {}
    share = shared.setdefault
    digest = hashlib.sha256()
    for pk, comp, turn, source, annotator, choice, worker, hit_type, hit_version in rows:
        digest.update(f"{pk}:{choice};".encode())
        by_source[source] += 1
        key = (comp, turn)
        item = votes[source][share(key, key)]
        if source == Judgment.HUMAN:
            vote = (annotator, choice, worker, hit_type or "imported", hit_version or "")
            item.append(share(vote, vote))
            hit_versions[vote[3]].add(vote[4])
        else:
            vote = (annotator, choice, None, "", "")
            item[:] = [share(vote, vote)]
            judge_versions[source].add(annotator)
    del shared
    ids = {c for per in votes.values() for c, _ in per}
    return PairwiseData(
        comparisons=comparison_info(ids),
        votes={s: dict(v) for s, v in votes.items()},
        judge_versions={s: sorted(v) for s, v in judge_versions.items()},
        hit_versions={s: sorted(v - {""}) for s, v in hit_versions.items()},
        n_judgments=sum(by_source.values()),
        judgments_by_source=dict(sorted(by_source.items())),
        fingerprint=digest.hexdigest()[:16],
    )


def comparison_info(ids) -> dict[int, ComparisonInfo]:
    out = {}
    names: dict = {}  # model, family and category names repeat on every comparison
    name = names.setdefault
    for chunk in _id_chunks(ids):
        for row in Comparison.objects.filter(IdsIn("pk", chunk)).values_list(
                "pk", "instance_id", "instance__family__name", "instance__kind", "swapped",
                "response_a_id", "response_b_id", "response_a__model__name",
                "response_b__model__name", "response_a__model__family",
                "response_b__model__family"):
            texts = [name(t, t) for t in (row[2] or "", row[3], *row[7:])]
            out[row[0]] = ComparisonInfo(row[1], texts[0], texts[1], row[4], row[5], row[6],
                                         *texts[2:])
    return out


def responses_for_turns(comparisons: dict[int, ComparisonInfo]) -> dict[tuple[int, str, int], int]:
    """{(instance id, model name, turn): response id} for the comparisons' instances, so a
    per-turn verdict can be matched with the responses of that turn."""
    inst_ids = {c.instance_id for c in comparisons.values()}
    out: dict[tuple[int, str, int], int] = {}
    for chunk in _id_chunks(inst_ids):
        for pk, inst, model, turn in Response.objects.filter(
                IdsIn("instance_id", chunk),
                condition=Response.Condition.GENERATED).values_list(
                "pk", "instance_id", "model__name", "turn"):
            out[(inst, model, turn)] = pk
    return out


def response_texts(ids) -> dict[int, str]:
    out = {}
    for chunk in _id_chunks(ids):
        out.update(Response.objects.filter(IdsIn("pk", chunk)).values_list("pk", "text"))
    return out


def response_word_counts(ids) -> dict[int, int]:
    """{response id: words} (whitespace-split, as the length biases count them), read a chunk
    of texts at a time: a report needs the counts of every judged response, not the texts."""
    out = {}
    for chunk in _id_chunks(ids):
        out.update((pk, len(text.split())) for pk, text in Response.objects.filter(
            IdsIn("pk", chunk)).values_list("pk", "text"))
    return out


def _id_ranges(ids: list[int], size: int = 20_000) -> list[tuple[int, int]]:
    """(lowest, highest) of each run of ``size`` consecutive ``ids`` (sorted): index ranges
    that hold them and little else when a study's rows were made together, as imports and
    submissions make them (rows of others inside a range are read and dropped)."""
    return [(chunk[0], chunk[-1]) for chunk in _id_chunks(ids, size)]


def _id_chunks(ids, size: int = 20_000):
    """``ids`` in lists of ``size`` (stays under SQLite's variable limit)."""
    ids = list(ids)
    for start in range(0, len(ids), size):
        yield ids[start:start + size]


def model_families(study=None) -> dict[str, str]:
    return dict(EvalModel.objects.filter(study_id=study_id(study)).values_list("name", "family"))


@dataclass(slots=True)
class MetricTarget:
    """A response to score and the reference text(s) it is scored against (its text is read
    when it is scored: a report whose scores are all cached never needs it). The list is
    shared by every response to the same instance and turn, so it is never changed."""

    response_id: int
    references: list[str]


def metric_targets(response_ids=None, *, study=None) -> list[MetricTarget]:
    """Responses of ``study`` (None: the default study; or exactly ``response_ids``) that have
    a reference: the instance's verified ``reference_output`` for single-turn responses, else
    the response of the instance's study's reference model to the same instance and turn.
    Ordered by response id, so batches and seeded metrics are reproducible. Each reference is
    read once, not once per response that shares it."""
    qs = Response.objects.filter(condition=Response.Condition.GENERATED)
    if response_ids is None:
        qs = qs.filter(instance__study_id=study_pk(study))
    else:
        response_ids = list(response_ids)
        if not response_ids:
            return []
        qs = qs.filter(IdsIn("pk", response_ids))
    rows = analytic.rows(qs.order_by("pk").values_list("pk", "instance_id", "turn"))
    instances = {r[1] for r in rows}
    outputs, study_of = {}, {}
    for pk, output, sid in analytic.rows(Instance.objects.filter(IdsIn("pk", instances))
                                         .values_list("pk", "reference_output", "study_id")):
        study_of[pk] = sid
        if output:
            outputs[pk] = output
    reference_of = dict(EvalModel.objects.filter(  # each study's own reference model
        is_reference=True, study_id__in=set(study_of.values())).values_list("study_id", "pk"))
    ref_texts: dict[tuple[int, int], str] = {}
    if reference_of:
        ref_texts = {(i, t): txt for i, t, m, txt in Response.objects.filter(
            IdsIn("instance_id", instances), model_id__in=reference_of.values(),
            condition=Response.Condition.GENERATED).values_list(
                "instance_id", "turn", "model_id", "text")
            if reference_of.get(study_of[i]) == m}
    shared: dict[tuple[int, int], list[str]] = {}
    out = []
    for pk, inst, turn in rows:
        references = shared.get((inst, turn))
        if references is None:
            output = outputs.get(inst, "") if turn == 0 else ""
            ref = output if output.strip() else ref_texts.get((inst, turn), "")
            references = shared[(inst, turn)] = [ref] if ref.strip() else []
        if references:
            out.append(MetricTarget(pk, references))
    return out


def current_scores(metric: str, config_hash: str, reference_hashes: dict[int, str]
                   ) -> Mapping[int, float]:
    """{response id: score} from the cache for one metric configuration, for the responses in
    ``reference_hashes`` whose cached row was scored against their current reference (its
    hash), in response id order. Read from the cursor a chunk at a time, only current rows
    kept, into a ``ScoreTable`` (a dict when the ids are too sparse for one): a report holds
    every metric's scores of every response while it computes.

    A configuration's rows are every study's (a metric's settings do not name the study), so
    they are read by ranges of the wanted ids (``_id_ranges``), not all: a study's metrics
    cost what its own responses hold, however many other studies there are."""
    import numpy as np  # not at import: web workers read no scores

    from .score_table import ScoreTable

    ids, scores = array("q"), array("d")
    rows = MetricScore.objects.filter(metric=metric, config_hash=config_hash)
    for low, high in _id_ranges(sorted(reference_hashes)):
        for r, h, s in analytic.each_row(
                rows.filter(response_id__gte=low, response_id__lte=high)
                .order_by("response_id").values_list("response_id", "reference_hash", "score")):
            if reference_hashes.get(r) == h:
                ids.append(r)
                scores.append(s)
    ids, scores = np.frombuffer(ids, np.int64), np.frombuffer(scores, np.float64)
    if ScoreTable.fits(ids):
        return ScoreTable(ids, scores)
    return dict(zip(ids.tolist(), scores.tolist(), strict=True))


def score_judgments(split: str = "all", judges: list[str] | None = None,
                    include_trial: bool = False, *, study=None) -> list[tuple]:
    """(response id, source, annotator, score, turn, model name) of the grades that count
    (``judging.selectors.counted_grades``: the same ones the score boards read)."""
    qs = without_trial_votes(counted_grades(study), include_trial).filter(
        _instance_filter(split, "response__instance__"))
    if judges is not None:
        qs = qs.filter(source__in=[Judgment.HUMAN, *judges])
    return list(qs.order_by("created_at", "pk").values_list(
        "response_id", "source", "annotator", "score", "turn", "response__model__name"))


def feedback_judgments(split: str = "all", judges: list[str] | None = None,
                       include_trial: bool = False, *, study=None) -> list[tuple]:
    """(response id, source) of "which feedback is better" judgments on the split's
    instances (counted in the report's snapshot; not analysed)."""
    qs = without_trial_votes(
        Judgment.objects.filter(kind=Judgment.Kind.FEEDBACK, response__isnull=False,
                                study_id=study_id(study)),
        include_trial).filter(_instance_filter(split, "response__instance__"))
    if judges is not None:
        qs = qs.filter(source__in=[Judgment.HUMAN, *judges])
    return list(qs.values_list("response_id", "source"))


def judge_orderings(judges: list[str]) -> dict[str, dict[str, dict[str, dict]]]:
    """Per judge: {comparison uuid: {'AB': result, 'BA': result}} from finished judge units
    (verdicts as shown), for position bias; a later unit replaces an earlier one."""
    out: dict[str, dict] = defaultdict(lambda: defaultdict(dict))
    for name, item, ordering, result in judge_ordering_results(judges):
        out[name][item][ordering] = result
    return {k: dict(v) for k, v in out.items()}


def judge_model_name(judge: str) -> str:
    """The API model name of the judge's latest version ('' for a judge not configured here,
    e.g. one whose verdicts were imported)."""
    return (Judge.objects.filter(name=judge).order_by("-created_at")
            .values_list("model_name", flat=True).first() or "")


def response_uuids(ids) -> dict[int, str]:
    return {pk: str(u) for pk, u in Response.objects.filter(IdsIn("pk", ids))
            .values_list("pk", "uuid")}


def comparison_uuids(ids) -> dict[int, str]:
    out = {}
    for chunk in _id_chunks(ids):
        out.update({pk: str(u) for pk, u in Comparison.objects.filter(
            IdsIn("pk", chunk)).values_list("pk", "uuid")})
    return out


def database_counts(study=None) -> dict:
    """The study's counts for the snapshot (what existed when the report ran). A judgment is
    the study's through the instance it judged (a comparison's or a response's)."""
    sid = study_id(study)
    judgments = Judgment.objects.filter(study_id=sid)
    by_source = dict(judgments.values_list("source").annotate(n=Count("pk"))
                     .values_list("source", "n"))
    last = judgments.aggregate(last=Max("created_at"))["last"]
    return {"comparisons": Comparison.objects.filter(instance__study_id=sid).count(),
            "responses": Response.objects.filter(instance__study_id=sid).count(),
            "judgments_by_source": dict(sorted(by_source.items())),
            "metric_scores": MetricScore.objects.filter(response__instance__study_id=sid).count(),
            "last_judgment_at": last.isoformat() if last else None}
