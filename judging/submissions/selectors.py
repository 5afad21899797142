"""What a submitter may read of the boards: their own models' rows and ranks.

The submitter board shows, per study, the rows of the models a submitter owns or submitted,
with their rank among the ranked models, and not the other models' rows (the study's board,
``/s/<slug>/board/``, shows those to its members, and to anyone when the study is public).
"""
from __future__ import annotations

from django.db.models import Q

from studies.models import study_pk

from ..models import EvalModel, Judgment
from .models import Submission


def my_model_names(user, study=None) -> set[str]:
    """The models of lines the user owns, and versions they submitted, in ``study`` (None: the
    default study; a name means another model in another study)."""
    if not user.is_authenticated:
        return set()
    return set(EvalModel.objects.in_study(study)
               .filter(Q(owner=user) | Q(submission__submitter=user))
               .values_list("name", flat=True))


def my_board_sources(user, study=None) -> list[str]:
    """The study's boards the user's models are on: their submissions' judges (newest first),
    then the crowd's board once an approved human evaluation exists."""
    sources: list[str] = []
    for sub in (Submission.objects.filter(Q(submitter=user) | Q(model__owner=user),
                                          study_id=study_pk(study))
                .select_related("run__judge").order_by("-created_at")):
        if sub.run and sub.run.judge.name not in sources:
            sources.append(sub.run.judge.name)
        if sub.human_batch_id and Judgment.HUMAN not in sources:
            sources.append(Judgment.HUMAN)
    return sources


def my_rows(rows: list[dict], names: set[str]) -> list[dict]:
    return [row for row in rows if row["model"] in names]
