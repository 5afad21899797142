"""What a pairwise board (every vote a match) reads: the verdicts counted by the database, and
online Elo carried forward from the last build instead of re-read from the first verdict.

Bradley-Terry, its bootstrap, matches and win rates need only counts per (model pair, outcome):
a GROUP BY, a few thousand rows (``ratings.pair_counts``). Online Elo needs every verdict in
(created_at, pk) order, and reading 10M rows out of PostgreSQL took 22–27 s. So Elo is kept as
state (in Django's cache, per board query): the ratings by model id after the last verdict
folded, that verdict's (created_at, pk), and per (pair, outcome) cell the count, the sum of the
pks and the sum of the timestamps of the verdicts up to it. The next build's GROUP BY computes
the same sums for the verdicts up to that point: equal, only an append happened and the state
continues over the newer verdicts (``ratings.continue_online_elo``, the same floats as a full
recomputation); anything else (a rejection, deletion, edit, a blocked worker, a withdrawn
model, a vote back-dated before the state) changes a cell and Elo is recomputed from every row.

A build reads up to the newest verdict it first sees, so counts and Elo hold the same verdicts
even while votes arrive. On SQLite there is no state: counts, then every row (dev and tests).
"""
import hashlib
from dataclasses import dataclass

from django.core.cache import cache
from django.db import connections
from django.db.models import BigIntegerField, Count, Q, Sum
from django.db.models.expressions import RawSQL

from annotation.core import analytic

from . import ratings
from .selectors import RATING_IDS

STATE_SECONDS = 7 * 24 * 3600  # an unused board's state expires; rebuilt from the rows then
ORDER = ("created_at", "pk")
# The timestamp as an integer (microseconds), so its sums are exact and the same whatever order
# the database adds them in (float8 ``date_part`` then a cast: about a third cheaper per verdict than
# the numeric ``extract``).
_MICROS = RawSQL("""(date_part('epoch', "judging_judgment"."created_at") * 1000000)::bigint""",
                 (), output_field=BigIntegerField())


@dataclass(frozen=True)
class EloState:
    last: tuple  # (created_at, pk) of the last verdict folded
    cells: dict  # (model_a id, model_b id, choice) -> (count, sum of pks, sum of timestamps)
    elo: dict  # model id -> online Elo after ``last``


@dataclass(frozen=True)
class BoardInputs:
    counts: list[tuple]  # (model_a id, model_b id, choice, verdicts)
    elo: dict  # model id -> online Elo over the same verdicts, in order
    continued: bool  # Elo continued from the state (else recomputed from every row)


def board_inputs(qs) -> BoardInputs | None:
    """Counts and online Elo of the verdicts of ``qs`` (``pairwise_judgments_qs``), or None
    when there is none."""
    qs = qs.order_by()
    newest = qs.order_by("-created_at", "-pk").values_list(*ORDER).first()
    if newest is None:
        return None
    if connections[qs.db].vendor != "postgresql":
        counts = analytic.rows(qs.filter(_upto(newest)).values_list(*RATING_IDS)
                               .annotate(n=Count("pk")))
        return BoardInputs(counts, _elo_from_rows(qs.filter(_upto(newest))), False)
    key = _key(qs)
    state = cache.get(key)
    cells = _cells(qs, newest, state.last if state else None)
    counts = [(*cell, n) for cell, n, _old, _new in cells]
    if state is not None and {cell: old for cell, _, old, _ in cells if old[0]} == state.cells:
        newer = qs.filter(_upto(newest) & ~_upto(state.last))
        elo = ratings.continue_online_elo(state.elo, _ordered(newer))
        continued = True
    else:
        elo, continued = _elo_from_rows(qs.filter(_upto(newest))), False
    now = {cell: tuple(x + y for x, y in zip(old, new, strict=True))
           for cell, _, old, new in cells if old[0] + new[0]}
    cache.set(key, EloState(newest, now, elo), STATE_SECONDS)
    return BoardInputs([c for c in counts if c[3]], elo, continued)


def _cells(qs, newest: tuple, last: tuple | None) -> list[tuple]:
    """Per (pair, outcome) cell: ((model_a id, model_b id, choice), verdicts up to ``newest``,
    (count, pk sum, timestamp sum) of those up to ``last``, the same of those after it). One
    GROUP BY, in which each verdict's timestamp is summed once (with the old or the new)."""
    new = _upto(newest) & ~_upto(last) if last else _upto(newest)
    sums = {"n": Count("pk", filter=_upto(newest)), **_sums("new", new)}
    if last:
        sums |= _sums("old", _upto(last))
    rows = analytic.rows(qs.values_list(*RATING_IDS).annotate(**sums))
    return [(tuple(r[:3]), r[3], tuple(int(x or 0) for x in r[7:10]) if last else (0, 0, 0),
             tuple(int(x or 0) for x in r[4:7])) for r in rows]


def _sums(prefix: str, within: Q) -> dict:
    return {f"{prefix}_count": Count("pk", filter=within),
            f"{prefix}_pks": Sum("pk", filter=within),
            f"{prefix}_micros": Sum(_MICROS, filter=within)}


def _upto(last: tuple) -> Q:
    """Verdicts at or before ``last`` in (created_at, pk) order."""
    created_at, pk = last
    return Q(created_at__lt=created_at) | Q(created_at=created_at, pk__lte=pk)


def _ordered(qs) -> list[tuple]:
    return analytic.rows(qs.order_by(*ORDER).values_list(*RATING_IDS))


def _elo_from_rows(qs) -> dict:
    return ratings.continue_online_elo({}, _ordered(qs))


def _key(qs) -> str:
    """One state per board query (source, split, study, filters): its SQL and parameters."""
    sql, params = qs.values_list(*RATING_IDS).query.sql_with_params()
    return "elo-state:v1:" + hashlib.sha256(repr((sql, params)).encode()).hexdigest()
