"""What a pairwise board (every vote a match) reads: its verdicts counted per (model pair,
outcome), and online Elo over them in (created_at, pk) order, kept as state and folded forward
as votes arrive instead of re-read from the first verdict.

Bradley-Terry, its bootstrap, matches and win rates need only the counts; online Elo needs
every verdict in order, and reading 10M rows out of PostgreSQL took 22–27 s (a GROUP BY over
them, joined to their comparisons, still 3–4 s). So a board keeps a **state** in Django's cache,
per board query and ``board_versions`` (the source's token, the blocked workers, the trial
batches): the verdicts up to a time ``upto`` folded into, per (pair, outcome) cell, the count,
the sum of the pks and the sum of the timestamps; online Elo after them; and the count and pk sum
of *every* judgment of the source in the study up to ``upto`` (``scope``: one read of the
``(study, source, created_at, id)`` index, no join; other studies' votes are not in it).

A build, in one REPEATABLE READ snapshot (the mechanics, and the constants ``SETTLE_SECONDS``
and ``VERIFY_SECONDS``, are ``judging.folded_counts``'s, which keeps plain counts the same way):

- checks the state: the source's count and pk sum up to ``upto`` unchanged means no judgment up
  to it was added (a late commit, an import back-dated), deleted or re-dated; a rejection, an
  edit in the admin, a withdrawn model rotates the token (another state); blocking a worker or
  marking a trial batch changes the versions (another state);
- reads the verdicts after ``upto`` (a few seconds' worth: an index range), adds them to the
  counts and continues Elo over them (``ratings.continue_online_elo``: the same floats as a full
  recomputation);
- moves ``upto`` on to ``SETTLE_SECONDS`` ago, folding the verdicts before it into the state. A
  vote still being written when the state moved past its time would otherwise be missed for
  good; one that takes longer changes the count and is caught by the check.

When the check fails, the state is older than ``VERIFY_SECONDS`` (a change nothing above sees,
such as a gold answer set on a compared pair, shows within that time, as in the rating cache)
or the source's votes can be superseded (an automatic judge's later generation replaces its
earlier verdict, ``selectors.current_verdicts``), the state is **rebuilt**: one GROUP BY over
every verdict up to ``upto`` computes the cells; when they equal the old state's cells up to its
``upto`` Elo continues from it, else Elo is recomputed from every row.

On SQLite there is no state: counts, then every row (dev and tests).
"""
import hashlib
import time
from dataclasses import dataclass
from datetime import datetime

from django.core.cache import cache
from django.db import connections
from django.db.models import BigIntegerField, Count, Q, Sum
from django.db.models.expressions import RawSQL

from annotation.core import analytic

from . import folded_counts, ratings
from .folded_counts import plus as _plus
from .selectors import RATING_IDS

ORDER = ("created_at", "pk")
# The timestamp as an integer (microseconds), so its sums are exact and the same whatever order
# the database adds them in (float8 ``date_part`` then a cast: about a third cheaper per verdict than
# the numeric ``extract``).
_MICROS = RawSQL("""(date_part('epoch', "judging_judgment"."created_at") * 1000000)::bigint""",
                 (), output_field=BigIntegerField())
_NO_CELL = (0, 0, 0)


@dataclass(frozen=True)
class EloState:
    upto: datetime  # the verdicts with created_at <= upto are folded in
    cells: dict  # (model_a id, model_b id, choice) -> (count, sum of pks, sum of timestamps)
    elo: dict  # model id -> online Elo after them
    scope: tuple  # (count, sum of pks) of every judgment of the source (study) up to ``upto``
    rebuilt_at: float  # time.time() of the last rebuild from every verdict


@dataclass(frozen=True)
class BoardInputs:
    counts: list[tuple]  # (model_a id, model_b id, choice, verdicts)
    elo: dict  # model id -> online Elo over the same verdicts, in order
    continued: bool  # Elo continued from a state (else recomputed from every row)


def board_inputs(qs, *, source: str, study: int, versions: tuple = (),
                 foldable: bool = False) -> BoardInputs | None:
    """Counts and online Elo of the verdicts of ``qs`` (``pairwise_judgments_qs`` of
    ``source`` in ``study``, an id), or None when there is none. ``versions``
    (``board_versions.versions``) name what else the verdicts counted depend on; ``foldable``:
    new verdicts never change which older ones count (human votes), so the state may be folded
    forward instead of rebuilt."""
    qs = qs.order_by()
    if connections[qs.db].vendor != "postgresql":
        return _without_state(qs)
    key = _key(qs, versions)
    scope = folded_counts.source_scope(source, study)
    with folded_counts.snapshot(qs.db):
        old, settled = cache.get(key), folded_counts.settled_time()
        state, continued = old, True
        if not (foldable and folded_counts.holds(old, scope)):
            state, continued = _rebuilt(qs, scope, old, settled)
        tail = _tail(qs, state.upto)
        done = sum(1 for row in tail if row[0] <= settled)
        if done:
            state = _folded(state, tail[:done], scope, settled)
        rest = [row[3:] for row in tail[done:]]
    cache.set(key, state, folded_counts.STATE_SECONDS)
    counts = {cell: n for cell, (n, _, _) in state.cells.items()}
    for cell in rest:
        counts[cell] = counts.get(cell, 0) + 1
    if not counts:
        return None
    return BoardInputs([(*cell, n) for cell, n in counts.items()],
                       ratings.continue_online_elo(state.elo, rest), continued)


def _without_state(qs) -> BoardInputs | None:
    newest = qs.order_by("-created_at", "-pk").values_list(*ORDER).first()
    if newest is None:
        return None
    upto = Q(created_at__lt=newest[0]) | Q(created_at=newest[0], pk__lte=newest[1])
    counts = analytic.rows(qs.filter(upto).values_list(*RATING_IDS).annotate(n=Count("pk")))
    return BoardInputs(counts, _elo_from_rows(qs.filter(upto)), False)


def _rebuilt(qs, scope, old: EloState | None, upto: datetime) -> tuple[EloState, bool]:
    """The state at ``upto`` from every verdict (one GROUP BY), Elo continued from ``old``
    when its cells still hold; (state, Elo continued)."""
    since = old.upto if old is not None and old.upto <= upto else None
    cells = _cells(qs, upto, since)
    if since is not None and {cell: before for cell, before, _ in cells if before[0]} == old.cells:
        elo = ratings.continue_online_elo(
            old.elo, _ordered(qs.filter(created_at__gt=since, created_at__lte=upto)))
        continued = True
    else:
        elo, continued = _elo_from_rows(qs.filter(created_at__lte=upto)), False
    total = {cell: _plus(before, after) for cell, before, after in cells}
    within = folded_counts.scope_sums(scope.filter(created_at__lte=upto))
    cells = {cell: sums for cell, sums in total.items() if sums[0]}
    return EloState(upto, cells, elo, within, time.time()), continued


def _folded(state: EloState, rows: list[tuple], scope, upto: datetime) -> EloState:
    """``state`` moved on to ``upto`` over ``rows`` (its verdicts after ``state.upto`` up to
    ``upto``, in order)."""
    cells = dict(state.cells)
    for _created_at, pk, micros, *cell in rows:
        cells[tuple(cell)] = _plus(cells.get(tuple(cell), _NO_CELL), (1, pk, micros))
    added = folded_counts.scope_sums(scope.filter(created_at__gt=state.upto,
                                                  created_at__lte=upto))
    return EloState(upto, cells, ratings.continue_online_elo(state.elo, [r[3:] for r in rows]),
                    _plus(state.scope, added), state.rebuilt_at)


def _cells(qs, upto: datetime, since: datetime | None) -> list[tuple]:
    """Per (pair, outcome) cell of the verdicts up to ``upto``: (cell, (count, pk sum,
    timestamp sum) of those up to ``since``, the same of those after it). One GROUP BY."""
    sums = _sums("after", Q(created_at__gt=since) if since else None)
    if since:
        sums |= _sums("before", Q(created_at__lte=since))
    rows = analytic.rows(qs.filter(created_at__lte=upto).values_list(*RATING_IDS)
                         .annotate(**sums))
    return [(tuple(r[:3]), tuple(int(x or 0) for x in r[6:9]) if since else _NO_CELL,
             tuple(int(x or 0) for x in r[3:6])) for r in rows]


def _sums(prefix: str, within: Q | None) -> dict:
    return {f"{prefix}_count": Count("pk", filter=within),
            f"{prefix}_pks": Sum("pk", filter=within),
            f"{prefix}_micros": Sum(_MICROS, filter=within)}


def _tail(qs, after: datetime) -> list[tuple]:
    """The verdicts after ``after`` in order: (created_at, pk, timestamp, *cell)."""
    return analytic.rows(qs.filter(created_at__gt=after).annotate(micros=_MICROS)
                         .order_by(*ORDER).values_list(*ORDER, "micros", *RATING_IDS))


def _ordered(qs) -> list[tuple]:
    return analytic.rows(qs.order_by(*ORDER).values_list(*RATING_IDS))


def _elo_from_rows(qs) -> dict:
    return ratings.continue_online_elo({}, _ordered(qs))


def _key(qs, versions: tuple) -> str:
    """One state per board query (source, split, study, filters) and versions."""
    sql, params = qs.values_list(*RATING_IDS).query.sql_with_params()
    return "elo-state:v2:" + hashlib.sha256(repr((sql, params, versions)).encode()).hexdigest()
