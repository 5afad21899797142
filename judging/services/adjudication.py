"""What an analyst does with a disputed item (``judging.review``): rule on it, or send it out
for more votes.

A ruling is a judgment of its own kind and source (``Judgment.ADJUDICATION``), stored through
the one writer with the analyst's username and note; no vote is changed or deleted. It is not a
vote: every reader of votes (leaderboards, majorities, judge lists, reports) asks for pairwise,
score or feedback rows and never sees it. One ruling per item counts: ruling again stores a new
row, and the latest is the current one; the earlier rows stay as the record of what was
decided before (shown as superseded; nothing is updated, so two analysts ruling at once lose
nothing either).
"""
from collections import Counter

from django.core.exceptions import ValidationError

from annotation.core.db_text import storage_problem
from annotation.engine.services.more_votes import task_add_assignments
from annotation.models import Task

from ..models import Comparison, Judgment
from ..review import OUTCOMES, TURNS, human_majority, vote_task
from ..selectors import HUMAN
from .judgments.record import judgment_record

NOTE_LIMIT = 2000


def item_adjudicate(*, comparison: Comparison, turn: str, choice: str, analyst: str,
                    note: str = "") -> Judgment:
    """Store ``analyst``'s ruling (A, B, tie or both bad) on the item (``comparison``,
    ``turn``), with the human votes it saw in ``meta``. ValidationError, nothing written, on
    bad input."""
    if turn not in TURNS:
        raise ValidationError(f"turn is one of {', '.join(repr(t) for t in TURNS)}")
    if choice not in OUTCOMES:
        raise ValidationError("The ruling is A, B, tie or bad (both are bad).")
    if not analyst:
        raise ValidationError("A ruling names the analyst who made it.")
    note = note.strip()
    if len(note) > NOTE_LIMIT:
        raise ValidationError(f"The note is {len(note)} characters; at most {NOTE_LIMIT}.")
    if (problem := storage_problem(note)) is not None:
        raise ValidationError(f"The note cannot be stored: {problem}.")
    if comparison.gold_choice:
        raise ValidationError("A gold comparison is an attention check, not an item to rule on.")
    votes = list(Judgment.objects.filter(kind=Judgment.Kind.PAIRWISE, comparison=comparison,
                                         turn=turn, choice__in=OUTCOMES)
                 .values_list("source", "choice"))
    if not votes:
        raise ValidationError("No vote on this item: nothing to rule on.")
    human = Counter(c for source, c in votes if source == HUMAN)
    counts = {o: human.get(o, 0) for o in OUTCOMES}
    return judgment_record(
        source=Judgment.ADJUDICATION, kind=Judgment.Kind.ADJUDICATION, annotator=analyst,
        comparison=comparison, turn=turn, choice=choice, feedback=note,
        meta={"human_votes": counts,
              "human_majority": human_majority(counts) if human else ""})


def item_request_votes(*, comparison: Comparison, extra: int) -> Task:
    """Collect ``extra`` more human votes on the comparison from workers who have not voted on
    it: the task that brought its votes takes that many more assignments
    (``annotation.engine.services.more_votes``). Every turn of a conversation is voted again."""
    task = vote_task(comparison)
    if task is None:
        raise ValidationError("No task of ours brought this item's votes (they were imported): "
                              "put the comparison in a new batch instead.")
    return task_add_assignments(task, extra)
