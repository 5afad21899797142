"""What a board's cached results depend on besides the judgment rows they read: a per-source
token rotated by writes that add no row, and the blocked workers and trial batches that
change which votes count without touching a vote.

Shared by ``judging.rating_cache`` (its entries' keys) and ``judging.elo_state`` (the counts
and Elo it folds forward are kept per version: a rejection, an edit in the admin or a withdrawn
model rotates the token, so the next build starts again from every row instead of folding new
votes into counts that no longer hold).
"""
import hashlib
import uuid

from django.core.cache import cache

from annotation.models import Batch, Worker

PREFIX = "ratings:v5"  # the rating cache's prefix: the token keys are its own
ALL_SOURCES = None  # the scope of parts read over every source (the list of sources)


def token_key(source: str | None) -> str:
    scope = "*" if source is ALL_SOURCES else hashlib.sha256(source.encode()).hexdigest()
    return f"{PREFIX}:token:{scope}"


def source_token(source: str | None) -> str:
    return cache.get(token_key(source)) or ""


def source_changed(source: str) -> None:
    """Rotate the token of ``source`` (and of the list of sources): for writes the rows'
    stamps cannot see, such as a judgment edited in place or a rejection."""
    for scope in (source, ALL_SOURCES):
        cache.set(token_key(scope), uuid.uuid4().hex, None)


def blocked_workers() -> tuple[int, ...]:
    return tuple(Worker.objects.filter(blocked=True).order_by("pk").values_list("pk", flat=True))


def trial_batches() -> tuple[int, ...]:
    return tuple(Batch.objects.filter(trial=True).order_by("pk").values_list("pk", flat=True))


def versions(source: str | None, *, exclude_blocked: bool, include_trial: bool) -> tuple:
    """(token, blocked workers when they are left out, trial batches when theirs are)."""
    return (source_token(source), blocked_workers() if exclude_blocked else (),
            () if include_trial else trial_batches())
