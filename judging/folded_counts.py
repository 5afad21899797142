"""A source's votes counted per group (a category, a sampling mode and comparison, a model pair
and outcome), folded forward as votes arrive instead of grouped again from the first vote.

While a study is live, a board is refreshed every few seconds; each GROUP BY over a million
votes joined to their comparisons and instances took about a second of a 2-core machine's
time. Human votes are only ever added (a rejection, a deletion, a withdrawn model or a blocked
worker is another kind of change), so the counts up to a moment stay right: a **state** in
Django's cache, per query, group columns and ``board_versions``, holds the counts of the votes
up to ``upto`` and the count and id sum of *every* judgment of the source in the study up to it
(one read of the ``(study, source, created_at, id)`` index, no join: other studies' votes cost
it nothing). A build in one REPEATABLE READ snapshot:

- checks the state (``holds``): the source's count and id sum up to ``upto`` unchanged, and
  rebuilt within ``VERIFY_SECONDS``; otherwise one GROUP BY rebuilds it;
- reads the votes after ``upto`` (seconds' worth, an index range) and adds them;
- moves ``upto`` on to ``SETTLE_SECONDS`` ago: a vote still being written when the state moved
  past its time would be missed for good; one that takes longer changes the count, and the
  check rebuilds the state.

``judging.elo_state`` keeps online Elo the same way. Not foldable (an automatic judge's later
generation supersedes its earlier verdicts) and on SQLite, it is a plain GROUP BY.
"""
import contextlib
import hashlib
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from django.core.cache import cache
from django.db import connections, transaction
from django.db.models import Count, Sum

from annotation.core import analytic

from .models import Judgment

STATE_SECONDS = 7 * 24 * 3600  # an unused state expires; rebuilt from the rows then
VERIFY_SECONDS = 3600  # a state is rebuilt from every vote at least this often
SETTLE_SECONDS = 5.0  # votes newer than this are read on every build, not folded yet


@dataclass(frozen=True)
class CountsState:
    upto: datetime  # the votes with created_at <= upto are counted
    counts: dict  # group -> votes
    scope: tuple  # (count, sum of ids) of every judgment of the source (study) up to ``upto``
    rebuilt_at: float  # time.time() of the last rebuild from every vote


def counts(qs, columns: tuple[str, ...], *, source: str, study: int, versions: tuple = (),
           foldable: bool = False) -> dict[tuple, int]:
    """{(values of ``columns``): votes of ``qs``} (``qs``: votes of ``source`` in ``study``,
    an id); ``versions`` (``board_versions.versions``) name what else counts, ``foldable``: new
    votes never change which older ones count."""
    qs = qs.order_by()
    if not foldable or connections[qs.db].vendor != "postgresql":
        return _grouped(qs, columns)
    key = "folded-counts:v1:" + _query_hash(qs.values_list(*columns), versions)
    scope = source_scope(source, study)
    with snapshot(qs.db):
        state, settled = cache.get(key), settled_time()
        if not holds(state, scope):
            state = CountsState(settled, _grouped(qs.filter(created_at__lte=settled), columns),
                                scope_sums(scope.filter(created_at__lte=settled)), time.time())
        tail = analytic.rows(qs.filter(created_at__gt=state.upto)
                             .values_list("created_at", *columns))
        done = [row[1:] for row in tail if row[0] <= settled]
        if done:
            state = CountsState(settled, _added(state.counts, done), plus(state.scope, scope_sums(
                scope.filter(created_at__gt=state.upto, created_at__lte=settled))),
                state.rebuilt_at)
    cache.set(key, state, STATE_SECONDS)
    return _added(state.counts, [row[1:] for row in tail if row[0] > settled])


def _grouped(qs, columns: tuple[str, ...]) -> dict[tuple, int]:
    return {tuple(row[:-1]): row[-1]
            for row in analytic.rows(qs.values_list(*columns).annotate(n=Count("pk")))}


def _added(counts: dict, rows: list[tuple]) -> dict:
    if not rows:
        return counts
    counts = dict(counts)
    for row in rows:
        counts[row] = counts.get(row, 0) + 1
    return counts


# ---------------------------------------------------------------- shared with elo_state


def source_scope(source: str, study: int):
    """Every judgment of ``source`` in ``study`` (an id), rejected ones too (a rejection
    rotates the token): a range of the ``(study, source, created_at, id)`` index, which no
    other study's votes lengthen."""
    return Judgment.with_rejected.filter(study_id=study, source=source)


def settled_time() -> datetime:
    return datetime.fromtimestamp(time.time() - SETTLE_SECONDS, UTC)


def holds(state, scope) -> bool:
    """``state`` (with ``upto``, ``scope``, ``rebuilt_at``) may be folded forward: rebuilt
    recently, and no judgment of the source up to its time added, deleted or moved since."""
    return (state is not None and time.time() - state.rebuilt_at < VERIFY_SECONDS
            and scope_sums(scope.filter(created_at__lte=state.upto)) == state.scope)


def scope_sums(qs) -> tuple[int, int]:
    sums = qs.order_by().aggregate(n=Count("pk"), ids=Sum("pk"))
    return sums["n"], int(sums["ids"] or 0)


def plus(x: tuple, y: tuple) -> tuple:
    return tuple(a + b for a, b in zip(x, y, strict=True))


@contextlib.contextmanager
def snapshot(alias: str):
    """Every read of a build sees the same committed rows (a vote committed between the check
    and the reads would otherwise be counted in one and not the other). Inside a caller's
    transaction (tests, a command's atomic block), that transaction's snapshot rules."""
    connection = connections[alias]
    if connection.in_atomic_block:
        yield
        return
    with transaction.atomic(using=alias), connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


def _query_hash(qs, versions: tuple) -> str:
    sql, params = qs.query.sql_with_params()
    return hashlib.sha256(repr((sql, params, versions)).encode()).hexdigest()
