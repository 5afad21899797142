"""Reads of the judging app: judgments turned into the plain rows ``judging.ratings`` and
``judging.scores`` take.

A split picks which verdicts count: ``all`` (one verdict per item: single-turn choices and the
overall verdict of conversations), ``single`` / ``multi`` (single- / multi-image instances),
``overall`` (conversations, whole), ``turn:1`` … ``turn:3``, and ``category:<family name>``.
Grades split the same way (a single-turn grade has turn '', a conversation's per-turn grades
turn 1–3 and its overall grade 'overall'). Gold (attention-check) items never count.
``exclude_blocked`` drops votes of blocked workers (e.g. auto-blocked for failing gold checks).
``both_bad="exclude"`` drops "both bad" votes (rated as ties otherwise); a board's
``aggregation`` turns its votes into one verdict per item (``judging.vote_aggregation``).
Votes cast in a *trial* batch (``Batch.trial``: the sample an admin tries the product with)
count nowhere unless ``include_trial`` (``without_trial_votes``).

An automatic judge counts once per item and turn: its verdicts written under an earlier judge
or template version stay in the table for audit, but only the latest are read
(``current_verdicts``). Every human vote counts.

Every read is of one study (``study``: a ``Study``, its id, or None for the default study,
which is what every caller from before studies reads): a verdict belongs to the study of the
instance it judged.
"""
import collections

import numpy as np
from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q

from annotation.core import analytic
from annotation.models import Assignment, Instance
from studies.models import study_pk as study_id

from . import board_versions, folded_counts, ratings, vote_aggregation
from .models import EvalModel, Judgment, Response
from .ratings import majority_vote

HUMAN = Judgment.HUMAN
BASE_SPLITS = ["all", "single", "multi", "overall", "turn:1", "turn:2", "turn:3"]


class UnknownSplit(ValueError):
    pass


def _split_filter(split: str, instance: str = "comparison__instance__") -> Q:
    """The split as a filter; ``instance`` is the path to the judged item's instance."""
    one_verdict = Q(turn__in=["", "overall"])
    if split == "all":
        return one_verdict
    if split == "single":
        return Q(turn="", **{f"{instance}kind": Instance.Kind.SINGLE})
    if split == "multi":
        return Q(turn="", **{f"{instance}kind": Instance.Kind.MULTI})
    if split == "overall":
        return Q(turn="overall")
    if split in ("turn:1", "turn:2", "turn:3"):
        return Q(turn=split[-1])
    if split.startswith("category:") and split[9:]:
        return one_verdict & Q(**{f"{instance}family__name": split[9:]})
    raise UnknownSplit(f"unknown split {split!r}; use one of {BASE_SPLITS} or category:<name>")


def current_verdicts(qs, item: str, *, per_annotator: bool = False):
    """Leave out automatic judges' verdicts superseded by a later generation on the same item.

    A generation is (annotator, template version): a judge ident ``name@version`` under one
    prompt template version. Re-running a judge under a new template or judge version keeps
    its earlier verdicts; this keeps them from being counted twice. A verdict counts unless
    a later verdict of the same source, kind, item (``item``: 'comparison' or 'response') and
    turn belongs to another generation. Rows of one generation all count (a re-run of the
    same generation replaces its rows when written), and so does every human vote.
    ``per_annotator`` compares only with the same annotator (one judge version's own table).
    """
    same = {"annotator": OuterRef("annotator")} if per_annotator else {}
    later = (Judgment.objects
             .filter(source=OuterRef("source"), kind=OuterRef("kind"), turn=OuterRef("turn"),
                     **{item: OuterRef(item)}, **same)
             .filter(Q(created_at__gt=OuterRef("created_at"))
                     | Q(created_at=OuterRef("created_at"), pk__gt=OuterRef("pk")))
             .exclude(annotator=OuterRef("annotator"),
                      template_version=OuterRef("template_version")))
    return qs.filter(Q(source=HUMAN) | ~Exists(later))


def withdrawn_models():
    """Models whose public submission was withdrawn: their judgments stay stored but leave the
    leaderboards. A subquery (``NOT IN (SELECT …)``), not a round trip of its own."""
    return EvalModel.objects.filter(submission__status="withdrawn").values("pk")


def without_trial_votes(qs, include_trial: bool = False):
    """``qs`` (judgments) without the votes cast in trial batches, unless ``include_trial``.

    A trial batch's votes are kept and shown in its own results and review, but no board or
    report counts them until an analyst includes trial batches. A subquery over the (few)
    trial batches' assignments, so boards without any pay one empty anti-join."""
    if include_trial:
        return qs
    return qs.exclude(assignment_id__in=Assignment.objects.filter(batch__trial=True)
                      .values("pk"))


def submitted_model_names(study=None) -> set[str]:
    """Models on the study's boards through a public submission (marked so on the pages)."""
    return set(EvalModel.objects.in_study(study).filter(submission__isnull=False)
               .exclude(submission__status="withdrawn").values_list("name", flat=True))


def pairwise_judgments_qs(*, judge: str = HUMAN, split: str = "all",
                          exclude_blocked: bool = False, include_trial: bool = False,
                          both_bad: str = "tie", study=None):
    qs = (Judgment.objects.filter(kind=Judgment.Kind.PAIRWISE, source=judge,
                                  comparison__isnull=False, choice__in=ratings.VOTES,
                                  study_id=study_id(study))
          .filter(comparison__gold_choice="").filter(_split_filter(split)))
    if vote_aggregation.check_both_bad(both_bad) == "exclude":
        qs = qs.exclude(choice="bad")
    qs = qs.exclude(comparison__response_a__model_id__in=withdrawn_models()).exclude(
        comparison__response_b__model_id__in=withdrawn_models())
    if exclude_blocked:
        qs = qs.exclude(worker__blocked=True)
    qs = without_trial_votes(qs, include_trial)
    if judge != HUMAN:
        qs = current_verdicts(qs, "comparison")
    return qs


# What ``judging.ratings`` takes per verdict: (model_a, model_b, outcome, timestamp).
RATING_ROW = ("comparison__response_a__model__name", "comparison__response_b__model__name",
              "choice", "created_at")


def pairwise_judgments(*, judge: str = HUMAN, split: str = "all",
                       exclude_blocked: bool = False, include_trial: bool = False, study=None) -> list[tuple]:
    """``(model_a, model_b, outcome, timestamp)`` rows in timestamp order: the winning model is
    the comparison's on-screen side the judge chose, so randomized sides never blur it."""
    return list(
        pairwise_judgments_qs(judge=judge, split=split, exclude_blocked=exclude_blocked,
                              include_trial=include_trial, study=study)
        .order_by("created_at", "pk").values_list(*RATING_ROW))


def pairwise_judgments_encoded(*, judge: str = HUMAN, split: str = "all",
                               exclude_blocked: bool = False, include_trial: bool = False,
                               aggregation: str = vote_aggregation.MAJORITY,
                               both_bad: str = "tie", study=None):
    """``pairwise_judgments`` as ``ratings.Judgments`` (what the ratings compute on), or None
    when there is none. Same rows, same order; read as model ids and the choice straight from
    the cursor, so a million rows cost no model instances, names or datetimes (the ORM's
    per-row conversions were most of a first leaderboard view). Under a reliability model
    (``aggregation``), one row per item instead (``aggregated_rows``)."""
    qs = (pairwise_judgments_qs(judge=judge, split=split, exclude_blocked=exclude_blocked,
                                include_trial=include_trial, both_bad=both_bad, study=study)
          .order_by("created_at", "pk"))
    if vote_aggregation.check_aggregation(aggregation) == vote_aggregation.MAJORITY:
        return encoded_rows(analytic.rows(qs.values_list(*RATING_IDS)))
    return encoded_rows(aggregated_rows(qs, aggregation))


def aggregated_rows(qs, aggregation: str, *extra: str) -> list[tuple]:
    """``(model_a id, model_b id, label, *extra)`` per item (comparison and turn) of the votes
    in ``qs``, the label being the item's under the reliability model ``aggregation``; items
    in order of their first vote in ``qs``. A vote's worker is its ``annotator`` (imported
    votes have no worker account); votes without one are pooled by the model."""
    rows = analytic.rows(qs.values_list("comparison_id", "turn", "annotator", *RATING_IDS,
                                        *extra))
    if not rows:
        return []
    labels = vote_aggregation.item_labels(
        aggregation, [((c, t), worker or None, choice) for c, t, worker, _, _, choice, *_ in rows])
    first: dict[tuple, tuple] = {}
    for c, t, _, a, b, _, *rest in rows:
        first.setdefault((c, t), (a, b, *rest))
    return [(a, b, labels[item], *rest) for item, (a, b, *rest) in first.items()]


def pairwise_counts(*, judge: str = HUMAN, split: str = "all", exclude_blocked: bool = False,
                    include_trial: bool = False, both_bad: str = "tie", study=None):
    """``ratings.pair_counts`` of ``pairwise_judgments`` — ``(models, wins, ties)`` — counted by
    the database (one row per model pair and outcome, not one per verdict), or None when there
    is none. All Bradley-Terry and its bootstrap need; online Elo needs the rows in order."""
    return counted_pairs(analytic.rows(
        pairwise_judgments_qs(judge=judge, split=split, exclude_blocked=exclude_blocked,
                              include_trial=include_trial, both_bad=both_bad, study=study)
        .order_by().values_list(*RATING_IDS).annotate(n=Count("pk"))))


def counted_pairs(rows: list[tuple]):
    """``(models, wins, ties)`` of ``(model_a id, model_b id, choice, times)`` rows, models by
    name (None without rows): the integer matrices of the verdicts the rows count."""
    cells = encoded_rows(rows)
    if cells is None:
        return None
    return ratings.pair_counts(cells, times=np.fromiter((r[3] for r in rows), np.int64,
                                                        len(rows)))


# The ids of the two models and the outcome: a rating row, before names.
RATING_IDS = ("comparison__response_a__model_id", "comparison__response_b__model_id", "choice")


def model_names(ids) -> dict[int, str]:
    return dict(EvalModel.objects.filter(pk__in=ids).values_list("pk", "name"))


def encoded_rows(rows: list[tuple]):
    """``(model_a id, model_b id, choice, …)`` rows as ``ratings.Judgments``: models by name,
    sorted as ``ratings.encode`` sorts them, so results are identical to encoding names."""
    if not rows:
        return None
    names = model_names({r[0] for r in rows} | {r[1] for r in rows})
    models = tuple(sorted(names.values(), key=str))
    position = {pk: models.index(name) for pk, name in names.items()}
    n = len(rows)
    return ratings.Judgments(
        models, np.fromiter((position[r[0]] for r in rows), np.intp, n),
        np.fromiter((position[r[1]] for r in rows), np.intp, n),
        np.fromiter((ratings.OUTCOME_CODE[r[2]] for r in rows), np.int8, n))


def comparison_majorities(*, judge: str = HUMAN, split: str = "all",
                          exclude_blocked: bool = False,
                          include_trial: bool = False, study=None) -> list[dict]:
    """Per comparison (and turn): the majority of its votes and the agreement level (5/5 …)."""
    votes: dict[tuple, list] = {}
    names: dict[tuple, tuple] = {}
    for uuid, turn, a, b, choice in (
        pairwise_judgments_qs(judge=judge, split=split, exclude_blocked=exclude_blocked,
                              include_trial=include_trial, study=study)
        .order_by("comparison_id", "turn", "created_at")
        .values_list("comparison__uuid", "turn", "comparison__response_a__model__name",
                     "comparison__response_b__model__name", "choice")):
        votes.setdefault((uuid, turn), []).append(choice)
        names[(uuid, turn)] = (a, b)
    out = []
    for key, choices in votes.items():
        winner, agree, n = majority_vote(choices)
        a, b = names[key]
        out.append({"comparison": str(key[0]), "turn": key[1], "model_a": a, "model_b": b,
                    "winner": winner, "winner_model": {"A": a, "B": b}.get(winner),
                    "agreement": agree, "n": n, "level": f"{agree}/{n}"})
    return out


def counted_grades(study=None):
    """Every grade that counts, of any source: grades of models' own answers (ablation
    conditions, where turns were replaced by the reference, are not the model's work), gold
    tasks left out, each judge's latest generation only. Boards and reports read these."""
    return current_verdicts(
        Judgment.objects.filter(kind=Judgment.Kind.SCORE, response__isnull=False,
                                score__isnull=False, study_id=study_id(study),
                                response__condition=Response.Condition.GENERATED)
        .exclude(assignment__task__is_gold=True), "response")


def score_judgments_qs(*, judge: str = HUMAN, split: str = "all", exclude_blocked: bool = False,
                       include_trial: bool = False, study=None):
    """One source's counted grades on the split."""
    qs = counted_grades(study).filter(source=judge).filter(_split_filter(split, "response__instance__"))
    qs = qs.exclude(response__model_id__in=withdrawn_models())
    if exclude_blocked:
        qs = qs.exclude(worker__blocked=True)
    return without_trial_votes(qs, include_trial)


def score_judgments(*, judge: str = HUMAN, split: str = "all",
                    exclude_blocked: bool = False, include_trial: bool = False, study=None) -> list[tuple]:
    """``(model, (response id, turn), score)`` rows, what ``judging.scores`` takes."""
    return [(model, (response, turn), score) for model, response, turn, score in
            score_judgments_qs(judge=judge, split=split, exclude_blocked=exclude_blocked,
                              include_trial=include_trial, study=study)
            .order_by("created_at", "pk")
            .values_list("response__model__name", "response_id", "turn", "score")]


def _human_first(names) -> list[str]:
    return sorted(set(names), key=lambda n: (n != HUMAN, n))


def judge_names(study=None) -> list[str]:
    """Every judge with pairwise verdicts: 'human' first, then automatic judges by name."""
    return _sources_with(Judgment.objects.filter(kind=Judgment.Kind.PAIRWISE,
                                                 comparison__isnull=False,
                                                 study_id=study_id(study)))


def score_judge_names(study=None) -> list[str]:
    """Every source with grades: 'human' first, then grading judges by name."""
    return _sources_with(Judgment.objects.filter(kind=Judgment.Kind.SCORE, response__isnull=False,
                                                 score__isnull=False,
                                                 study_id=study_id(study)))


def _sources_with(qs) -> list[str]:
    """The sources of the judgments of ``qs``, 'human' first: one EXISTS per source there is
    (a handful), each stopping at its first row, instead of a DISTINCT reading every row
    (0.4 s at a million votes, at every refresh of a live board)."""
    return _human_first(s for s in judgment_sources() if qs.filter(source=s).exists())


def judgment_sources() -> list[str]:
    """Every source with a judgment stored: on PostgreSQL one descent of the
    ``(source, id)`` index per source (a loose index scan)."""
    if connection.vendor != "postgresql":
        return list(Judgment.with_rejected.order_by("source").values_list("source", flat=True)
                    .distinct())
    with connection.cursor() as cursor:
        cursor.execute(
            "WITH RECURSIVE s(source) AS (SELECT min(source) FROM judging_judgment UNION ALL "
            "SELECT (SELECT min(j.source) FROM judging_judgment j WHERE j.source > s.source) "
            "FROM s WHERE s.source IS NOT NULL) SELECT source FROM s WHERE source IS NOT NULL")
        return [row[0] for row in cursor.fetchall()]


def leaderboard_sources(study=None) -> list[str]:
    """Sources with a pairwise or a score board."""
    return _human_first([*judge_names(study), *score_judge_names(study)])


def category_names(judge: str = HUMAN, study=None) -> list[str]:
    """Instruction categories the source judged, pairwise (votes per category, folded forward
    while votes arrive) or graded."""
    pairwise = folded_counts.counts(
        pairwise_judgments_qs(judge=judge, study=study)
        .exclude(comparison__instance__family__isnull=True),
        ("comparison__instance__family__name",), **folding(judge, study))
    graded = (score_judgments_qs(judge=judge, study=study).exclude(response__instance__family__isnull=True)
              .values_list("response__instance__family__name", flat=True).distinct().order_by())
    return sorted({name for (name,) in pairwise} | set(graded))


def folding(judge: str, study=None, *, exclude_blocked: bool = False,
            include_trial: bool = False) -> dict:
    """How counts of ``judge``'s votes in ``study`` are kept (``folded_counts``, ``elo_state``):
    folded forward for human votes (a new vote never changes which older ones count), per what
    else decides what counts (``board_versions``)."""
    return {"source": judge, "study": study_id(study), "foldable": judge == HUMAN,
            "versions": board_versions.versions(judge, exclude_blocked=exclude_blocked,
                                                include_trial=include_trial)}


def reference_model_name(study=None) -> str | None:
    """The study's reference model (each study has at most one)."""
    return (EvalModel.objects.filter(is_reference=True, study_id=study_id(study))
            .values_list("name", flat=True).first())


def judge_ordering_results(judges: list[str]) -> list[tuple[str, str, str, dict]]:
    """(judge name, item uuid, ordering, result) of the judges' finished 'AB' / 'BA' units
    (verdicts as shown), oldest first, so a later re-run's result comes last."""
    from .models import JudgeUnit

    return [(name, str(item), ordering, result or {}) for name, item, ordering, result in (
        JudgeUnit.objects.filter(run__judge__name__in=judges, ordering__in=["AB", "BA"],
                                 status=JudgeUnit.Status.DONE)
        .order_by("finished_at", "pk")
        .values_list("run__judge__name", "item", "ordering", "result"))]


def comparison_sampling_counts(*, judge: str = HUMAN, split: str = "all",
                               exclude_blocked: bool = False, include_trial: bool = False, study=None
                               ) -> list[tuple[str, int]]:
    """``[(sampling mode, comparisons)]`` behind a leaderboard's judgments, most first: which
    sampling produced the data (comparisons stored before modes were recorded: "unrecorded")."""
    voted = folded_counts.counts(
        pairwise_judgments_qs(judge=judge, split=split, exclude_blocked=exclude_blocked,
                              include_trial=include_trial, study=study),
        ("comparison__sampling", "comparison_id"),
        **folding(judge, study, exclude_blocked=exclude_blocked, include_trial=include_trial))
    counts = collections.Counter(mode for mode, _comparison in voted)
    return sorted(((mode or "unrecorded", n) for mode, n in counts.items()),
                  key=lambda x: (-x[1], x[0]))
