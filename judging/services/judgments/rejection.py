"""A rejection reaches the votes: the votes of a rejected assignment leave every count
(``Judgment.objects`` leaves out ``rejected`` rows) and come back when the rejection is reversed.

Called by the rating HIT types' ``on_review_changed`` hook, inside the transaction that flips
the assignment, so the flag never disagrees with the assignment's status. The leaderboards'
cache hears of it when that transaction commits: the board read next in the same request is
already computed without (or again with) those votes.
"""
from django.db import transaction

from judging import rating_cache
from judging.models import Judgment


def judgments_mark_rejected(assignment, *, rejected: bool) -> int:
    """Mark (or unmark) the assignment's votes as rejected; returns how many changed."""
    votes = Judgment.with_rejected.filter(assignment=assignment).exclude(rejected=rejected)
    sources = set(votes.values_list("source", flat=True))
    changed = votes.update(rejected=rejected)
    for source in sources:
        transaction.on_commit(lambda source=source: rating_cache.source_changed(source))
    return changed
