"""Rating batches built from a selection: a rubric batch from Responses, a feedback batch from
pairs of score Judgments of the same response.

The rubric and feedback HITs take ids (a response; two judgments) that no page shows, so an
admin selects objects (admin action) or describes them (``build_rating_batch``: a model and a
split, or an ids file) and these builders write the rows. Each builder is one transaction
around the one batch writer (``batch_create_from_rows``): a selection that cannot make a batch
is refused with the reason and nothing is written. A feedback pair's sides are drawn at random
(the payload names which judgment is A, and the vote records both), so neither judge's
feedback always sits on the same side.
"""
from __future__ import annotations

import random
import uuid as uuid_lib
from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal
from itertools import combinations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q, QuerySet

from annotation.engine.services.batches import batch_create_from_rows
from annotation.models import Batch, Instance, ScoreRubric
from studies.models import Study, study_pk

from ..hits import FeedbackHit, RubricHit
from ..models import EvalModel, Judgment, Response

SPLITS = ("all", "single", "multi", "conversation", "turn:1", "turn:2", "turn:3",
          "category:<family name>")


class RatingBatchError(ValueError):
    """The selection cannot make a batch; the message says why and nothing was written."""


@transaction.atomic
def rubric_batch_create(*, responses: Iterable[Response], title: str,
                        assignments_per_task: int = 5, reward: Decimal = Decimal("0"),
                        lease_seconds: int = 1800, **options) -> Batch:
    """One rubric-score task per response, scored against its instance's first rubric —
    named in the payload, so every vote records the rubric it was given."""
    responses = list(responses)
    if not responses:
        raise RatingBatchError("Select at least one response.")
    rubric_of: dict[int, str] = {}
    for instance_id, rubric in (ScoreRubric.objects.filter(
            instance_id__in={r.instance_id for r in responses})
            .order_by("pk").values_list("instance_id", "uuid")):
        rubric_of.setdefault(instance_id, str(rubric))
    missing = [r for r in responses if r.instance_id not in rubric_of]
    if missing:
        raise RatingBatchError(
            f"{len(missing)} of the {len(responses)} responses have no rubric on their instance "
            f"(add one, or leave them out): {_listed(missing)}")
    rows = [{"response": str(r.uuid), "rubric": rubric_of[r.instance_id]} for r in responses]
    _study_of({r.instance_id for r in responses}, options)
    return _batch(RubricHit.slug, rows, title=title, assignments_per_task=assignments_per_task,
                  reward=reward, lease_seconds=lease_seconds, **options)


def feedback_pairs(judgments: Iterable[Judgment]) -> list[tuple[Judgment, Judgment]]:
    """Every pair of the selected score judgments that judge the same response, oldest first.

    Refused: a judgment that is not a score of a response, one without feedback (the HIT
    compares feedback texts), and a response with only one selected judgment (no pair)."""
    judgments = list(judgments)
    if not judgments:
        raise RatingBatchError("Select at least two score judgments of the same response.")
    not_scores = [j for j in judgments if j.kind != Judgment.Kind.SCORE or j.response_id is None]
    if not_scores:
        raise RatingBatchError(
            f"{len(not_scores)} selected judgments are not scores of a response (a feedback "
            f"comparison pairs score judgments): {_listed(not_scores)}")
    silent = [j for j in judgments if not j.feedback.strip()]
    if silent:
        raise RatingBatchError(
            f"{len(silent)} selected score judgments have no feedback to compare: "
            f"{_listed(silent)}")
    by_response: dict[int, list[Judgment]] = defaultdict(list)
    for judgment in sorted(judgments, key=lambda j: (j.created_at, j.pk)):
        by_response[judgment.response_id].append(judgment)
    alone = [group[0] for group in by_response.values() if len(group) == 1]
    if alone:
        raise RatingBatchError(
            f"{len(alone)} responses have only one selected score judgment; a feedback "
            f"comparison needs two of the same response: "
            f"{_listed([j.response for j in alone])}")
    return [pair for group in by_response.values() for pair in combinations(group, 2)]


@transaction.atomic
def feedback_batch_create(*, judgments: Iterable[Judgment], title: str,
                          assignments_per_task: int = 5, reward: Decimal = Decimal("0"),
                          lease_seconds: int = 1800, seed: int | None = None,
                          **options) -> Batch:
    """One which-feedback-is-better task per pair (``feedback_pairs``), sides at random."""
    rnd = random.Random(seed)
    rows = []
    pairs = feedback_pairs(judgments)
    _study_of({j.response.instance_id for pair in pairs for j in pair}, options)
    for first, second in pairs:
        a, b = (second, first) if rnd.random() < 0.5 else (first, second)
        rows.append({"judgment_a": str(a.uuid), "judgment_b": str(b.uuid)})
    return _batch(FeedbackHit.slug, rows, title=title, assignments_per_task=assignments_per_task,
                  reward=reward, lease_seconds=lease_seconds, **options)


def responses_selected(*, model: str | None = None, split: str = "all",
                       ids: list[str] | None = None, study=None) -> QuerySet[Response]:
    """The responses of ``study`` (None: the default study) a command names: by model and
    split, or by uuid (every one must exist there)."""
    qs = Response.objects.select_related("model").order_by("pk")
    return _selected(qs, model=model, split=split, ids=ids, response="", what="response",
                     study=study)


def score_judgments_selected(*, model: str | None = None, split: str = "all",
                             ids: list[str] | None = None,
                             sources: list[str] | None = None,
                             study=None) -> QuerySet[Judgment]:
    """``study``'s score judgments with feedback (None: the default study's), by their
    response's model and split or by uuid, and optionally by source (``human`` or judge
    names)."""
    qs = (Judgment.objects.filter(kind=Judgment.Kind.SCORE, response__isnull=False)
          .exclude(feedback="").select_related("response__model").order_by("pk"))
    if sources:
        qs = qs.filter(source__in=sources)
    return _selected(qs, model=model, split=split, ids=ids, response="response__",
                     what="score judgment with feedback", study=study)


def _selected(qs, *, model, split, ids, response: str, what: str, study=None):
    """``response``: the path from the queried model to the Response ("" or "response__")."""
    qs = qs.filter(**{f"{response}instance__study_id": study_pk(study)})
    if ids is not None:
        wanted = set()
        for value in ids:
            try:
                wanted.add(uuid_lib.UUID(value.strip()))
            except ValueError:
                raise RatingBatchError(f"not an id: {value!r}") from None
        missing = wanted - set(qs.filter(uuid__in=wanted).values_list("uuid", flat=True))
        if missing:
            raise RatingBatchError(f"{len(missing)} ids name no {what}: "
                                   + ", ".join(sorted(str(u) for u in missing)[:10]))
        qs = qs.filter(uuid__in=wanted)
    if model:
        if not EvalModel.objects.in_study(study).filter(name=model).exists():
            raise RatingBatchError(f"no model named {model!r}")
        qs = qs.filter(**{f"{response}model__name": model})
    return qs.filter(_split_filter(split, response))


def _split_filter(split: str, response: str) -> Q:
    kinds = {"single": Instance.Kind.SINGLE, "multi": Instance.Kind.MULTI,
             "conversation": Instance.Kind.CONVERSATION}
    if split == "all":
        return Q()
    if split in kinds:
        return Q(**{f"{response}instance__kind": kinds[split]})
    if split in ("turn:1", "turn:2", "turn:3"):
        return Q(**{f"{response}turn": int(split[-1])})
    if split.startswith("category:") and split[9:]:
        return Q(**{f"{response}instance__family__name": split[9:]})
    raise RatingBatchError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")


def _study_of(instance_ids: set[int], options: dict) -> None:
    """A batch belongs to the study of what it rates (``options["study"]`` set to it): a
    selection from two studies, or from another study than the one named, is refused."""
    studies = set(Instance.objects.filter(pk__in=instance_ids)
                  .values_list("study_id", flat=True).distinct())
    named = options.get("study")
    if len(studies) > 1 or (named is not None and studies - {study_pk(named)}):
        raise RatingBatchError("The selection belongs to another study than the batch, or to "
                               "several: a batch rates one study's items.")
    if named is None and studies:
        options["study"] = Study.objects.get(pk=studies.pop())


def _batch(hit_type: str, rows: list[dict], **fields) -> Batch:
    try:
        return batch_create_from_rows(hit_type=hit_type, rows=rows, **fields)
    except ValidationError as exc:
        raise RatingBatchError("; ".join(exc.messages)) from exc


def _listed(objects, limit: int = 5) -> str:
    shown = ", ".join(f"{o} ({o.uuid})" for o in objects[:limit])
    return shown + (f" and {len(objects) - limit} more" if len(objects) > limit else "")
