"""What a submitter may read of the boards: their own models' rows and ranks.

Today's board is the analysts' (the deployment is one private study); a submitter is shown
the rows of the models they own or submitted, with their rank among the ranked models, and
not the other models' rows, which a public board (per study) releases.
"""
from __future__ import annotations

from django.db.models import Q

from ..models import EvalModel, Judgment
from .models import Submission


def my_model_names(user) -> set[str]:
    """The models of lines the user owns, and versions they submitted, in the default study
    (the board a submitter reads; a name means another model in another study)."""
    return set(EvalModel.objects.in_study(None)
               .filter(Q(owner=user) | Q(submission__submitter=user))
               .values_list("name", flat=True))


def my_board_sources(user) -> list[str]:
    """The boards the user's models are on: their submissions' judges (newest first), then
    the crowd's board once an approved human evaluation exists."""
    sources: list[str] = []
    for sub in (Submission.objects.filter(Q(submitter=user) | Q(model__owner=user))
                .select_related("run__judge").order_by("-created_at")):
        if sub.run and sub.run.judge.name not in sources:
            sources.append(sub.run.judge.name)
        if sub.human_batch_id and Judgment.HUMAN not in sources:
            sources.append(Judgment.HUMAN)
    return sources


def my_rows(rows: list[dict], names: set[str]) -> list[dict]:
    return [row for row in rows if row["model"] in names]
