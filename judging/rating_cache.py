"""Leaderboards computed once per result and shared by the page, its plots, the CSV/JSON
downloads, the API, the judge pages and the ``ratings`` command.

Bradley-Terry with 1,000 bootstrap rounds over a million judgments takes seconds; the page and
each plot used to compute it again. Here every part (the pairwise board, the score board, what
else the page shows, the plots' PNG bytes …) is stored in Django's cache (Redis in
production, shared by every process) under a key made of its parameters and a **stamp** of the
judgments it was computed from:

- the newest judgment of the source (its id and uuid, one descent of the ``(source, id)``
  index) and the study's reference model, kept *in the entry*, not in the key: a view reads the
  stamp and, when newer judgments arrived, serves the entry only if none of them is of the
  entry's study (reads by primary key; the entry then remembers the newer stamp), so a
  vote in study B leaves study A's boards cached while a new judgment, an import or a judge
  re-run (which deletes and re-inserts) in A recomputes A at once; the uuid keeps a reused id
  (SQLite after a rollback) from matching an older entry;
- a per-source token that ``source_changed`` rotates, for writes that add no row (an edit in
  the admin, a rejection of the votes' work or its reversal);
- the study (every part is of one study: None is the default one), and the blocked workers
  when they are excluded;
- how a pairwise board counts its votes (``aggregation``, ``both_bad``: in its parameters);
- the trial batches when their votes are left out (``Batch.trial``), so marking a batch as a
  trial (or not) shows at once; ``LEADERBOARD_MIN_MATCHES``, so a new threshold does too.

Deleting an older judgment (the admin, a cascade from a deleted batch or comparison) leaves the
newest in place. Counting a million rows costs ~80 ms, too much for every view, so an entry
remembers how many judgments it was computed from and a view re-counts them once every
``RECHECK_SECONDS`` (one count per source shared by all its parts): a deletion shows within
about twice that time. Other inputs (a model renamed, a gold answer set afterwards) show when
the entry expires (``ENTRY_SECONDS``).

The first views of one result do not all compute it: one takes a short lock (``cache.add``) and
the others wait for its value, or compute themselves if the holder died (the lock expires).

While votes arrive, nearly every view would find a new judgment of its study and recompute: a
board of at least ``LEADERBOARD_STALE_MIN_JUDGMENTS`` that judgments were only added to is
served as it is, when at most ``LEADERBOARD_STALE_SECONDS`` and ``LEADERBOARD_STALE_SHARE`` of
its judgments behind, while ``judging.board_refresh`` recomputes it once in the background (once
it is ``LEADERBOARD_REFRESH_SECONDS`` behind: refreshing at every vote would keep a core busy
recomputing); the view says how far behind it was (``board_refresh.tells_freshness``).
Anything else that changes what counts (a rejection, a deletion, a new reference, blocking)
still recomputes in the request.
"""
import hashlib
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max, Subquery, Value

from . import board_refresh, board_versions, leaderboards, selectors, vote_aggregation
from .models import EvalModel, Judgment
from .selectors import HUMAN
from .vote_aggregation import MAJORITY

PAGE_ROUNDS = 1000  # bootstrap rounds of every page's board (one entry shared by all pages)
ENTRY_SECONDS = 3600  # an entry's life (bounds the staleness of inputs outside the stamp)
RECHECK_SECONDS = 30  # how often a cached view re-counts its judgments (catches deletions)
STORE_COUNT_SECONDS = 2  # entries stored this close together share one count
LOCK_SECONDS = 120  # the longest a view waits for another view computing the same result
POLL_SECONDS = 0.05
NEWER_CHECKED = 1000  # past this many new judgments elsewhere, an entry recomputes instead
ALL_SOURCES = board_versions.ALL_SOURCES
_PREFIX = board_versions.PREFIX  # a new version when the entries change shape


class Entry(NamedTuple):
    """What the cache holds per key: the value, the judgments it was computed from (``count``,
    and the ``seen`` stamp), when it was stored and last re-counted, and when its computation
    started reading (``snapshot_at``)."""

    value: Any
    count: int
    stored_at: float
    checked_at: float
    seen: tuple
    snapshot_at: float


_STALE_SERVED = object()  # ``_fresh``'s answer for an entry to serve while it is refreshed
_RECOMPUTE = object()  # ``_fresh``'s answer inside a refresh for such an entry: replace it
_AWAIT = object()  # … or wait for the refresh of it another is running
_APPENDED = object()  # ``_count_after``: judgments were added, some of the entry's study
_GONE, _OURS = -1, -2  # ``_added_elsewhere``'s answers besides a count (cached as ints)


def get_or_compute(part: str, compute: Callable[[], Any], *, source: str | None,
                   params: dict | None = None, exclude_blocked: bool = False,
                   include_trial: bool = False, study=None) -> Any:
    """The cached value of ``part`` for ``source`` (``ALL_SOURCES``: every source) and
    ``params``, or ``compute()`` stored under it. The one entry point: every part goes
    through it."""
    study_id = selectors.study_id(study)
    key = _key(part, source, params or {}, exclude_blocked, include_trial, study_id)
    stamp = board_refresh.once_per_view(("stamp", source, study_id),
                                        lambda: _stamp(source, study_id))
    entry = cache.get(key)
    value = _fresh(key, entry, source, stamp, study_id)
    if value is _AWAIT:  # inside a refresh: another is refreshing this one; take its result
        board_refresh.wait_for_release(key, LOCK_SECONDS)
        stamp, entry = _stamp(source, study_id), cache.get(key)
        value = _fresh(key, entry, source, stamp, study_id)
    if value is _AWAIT:  # still running after LOCK_SECONDS: build on what there is
        waited = Entry(*entry)
        board_refresh.built_from(waited.seen, waited.snapshot_at)
        value = _STALE_SERVED
    if value is _STALE_SERVED:  # a little behind: served, and refreshed in the background
        entry = Entry(*entry)
        if time.time() - entry.snapshot_at >= settings.LEADERBOARD_REFRESH_SECONDS:
            board_refresh.refresh_in_background(
                key, lambda: _store(key, source, study_id, _stamp(source, study_id), compute),
                LOCK_SECONDS)
        return entry.value
    if value is _RECOMPUTE:  # inside a refresh: the served entry stays until this replaces it
        try:
            return _store(key, source, study_id, stamp, compute)
        finally:
            board_refresh.release(key)
    if value is not None:
        return value
    return _compute_once(key, source, study_id, stamp, compute)


def source_changed(source: str) -> None:
    """Forget the cached results of ``source`` (and the list of sources): for writes the stamp
    cannot see, such as a judgment edited in place."""
    board_versions.source_changed(source)


# ---------------------------------------------------------------- the parts


def leaderboard(judge: str = HUMAN, split: str = "all", *, exclude_blocked: bool = False,
                include_trial: bool = False, bootstrap_rounds: int = PAGE_ROUNDS,
                seed: int = 0, aggregation: str = MAJORITY,
                both_bad: str = "tie", study=None) -> leaderboards.Leaderboard:
    params = {"split": split, "rounds": bootstrap_rounds, "seed": seed,
              **_counting(aggregation, both_bad)}
    return get_or_compute("pairwise", lambda: leaderboards.leaderboard_build(
        judge, split, exclude_blocked=exclude_blocked, include_trial=include_trial,
        bootstrap_rounds=bootstrap_rounds, seed=seed, aggregation=aggregation,
        both_bad=both_bad, study=study), source=judge, params=params,
        exclude_blocked=exclude_blocked, include_trial=include_trial, study=study)


def _counting(aggregation: str, both_bad: str) -> dict:
    """How a board counts its votes, checked (``vote_aggregation.UnknownChoice``): part of
    every key of a part that depends on it."""
    return {"aggregation": vote_aggregation.check_aggregation(aggregation),
            "both_bad": vote_aggregation.check_both_bad(both_bad)}


def score_leaderboard(judge: str = HUMAN, split: str = "all", *, exclude_blocked: bool = False,
                      include_trial: bool = False, bootstrap_rounds: int = PAGE_ROUNDS,
                      seed: int = 0, study=None) -> leaderboards.ScoreLeaderboard:
    params = {"split": split, "rounds": bootstrap_rounds, "seed": seed}
    return get_or_compute("scores", lambda: leaderboards.score_leaderboard_build(
        judge, split, exclude_blocked=exclude_blocked, include_trial=include_trial,
        bootstrap_rounds=bootstrap_rounds, seed=seed, study=study), source=judge, params=params,
        exclude_blocked=exclude_blocked, include_trial=include_trial, study=study)


def leaderboard_page(judge: str = HUMAN, split: str = "all", *,
                     exclude_blocked: bool = False, include_trial: bool = False,
                     aggregation: str = MAJORITY, both_bad: str = "tie",
                     study=None) -> dict:
    """What the leaderboard page shows of one source: its boards (the entries the API, the
    downloads and the plots read too), the sampling behind them and its categories; one entry,
    so a cached page checks one stamp."""
    votes = {"exclude_blocked": exclude_blocked, "include_trial": include_trial, "study": study}
    counting = _counting(aggregation, both_bad)

    def compute():
        return {"board": leaderboard(judge, split, **votes, **counting),
                "scores": score_leaderboard(judge, split, **votes),
                "sampling": selectors.comparison_sampling_counts(
                    judge=judge, split=split, **votes),
                "categories": selectors.category_names(judge, study)}
    return get_or_compute("page", compute, source=judge, params={"split": split, **counting},
                          **votes)


def category_rates(judge: str = HUMAN, *, exclude_blocked: bool = False,
                   include_trial: bool = False, aggregation: str = MAJORITY,
                   both_bad: str = "tie", study=None) -> dict:
    """``leaderboards.category_win_rates``: one entry the study board's table and the
    categories plot share (while votes arrive, one refresh computes it for both)."""
    counting = _counting(aggregation, both_bad)
    return get_or_compute("category-rates", lambda: leaderboards.category_win_rates(
        judge, exclude_blocked=exclude_blocked, include_trial=include_trial, study=study,
        **counting), source=judge, params=counting, exclude_blocked=exclude_blocked,
        include_trial=include_trial, study=study)


def leaderboard_sources(study=None) -> list[str]:
    return get_or_compute("sources", lambda: selectors.leaderboard_sources(study),
                          source=ALL_SOURCES, study=study)


# ---------------------------------------------------------------- keys and stamps


def _key(part: str, source: str | None, params: dict, exclude_blocked: bool,
         include_trial: bool = False, study_id: int | None = None) -> str:
    """The cache key: the part, its parameters and study, hashed (a source name may hold any
    character; some caches refuse spaces and control characters in keys). The stamp is not in
    it: the entry keeps it (``_fresh``), so another study's votes leave the key alone."""
    token, blocked, trial = board_versions.versions(source, exclude_blocked=exclude_blocked,
                                                    include_trial=include_trial)
    raw = repr((part, source, study_id, sorted(params.items()), exclude_blocked, token,
                blocked, include_trial, trial, settings.LEADERBOARD_MIN_MATCHES))
    return f"{_PREFIX}:{part}:{hashlib.sha256(raw.encode()).hexdigest()}"


_token_key = board_versions.token_key


def _rows(source: str | None):
    # Every row, rejected votes too: the stamp and the count watch for rows added or deleted
    # and stay reads of an index alone; a rejection, which adds or deletes nothing, rotates
    # the source's token instead (``source_changed``).
    qs = Judgment.with_rejected.all()
    return qs if source is ALL_SOURCES else qs.filter(source=source)


def _scope(source: str | None, study_id: int):
    """The judgments an entry of ``study_id`` counts: a range of the ``(study, source, …)``
    index, so other studies' votes cost its counts nothing."""
    return _rows(source).filter(study_id=study_id)


def _stamp(source: str | None, study_id: int | None = None) -> tuple:
    """(id, uuid) of the newest judgment in scope and the reference model, in one query: the
    newest id is a descent of the ``(source, id)`` index (the primary key's for every source)
    without reading the table; the row is then read by primary key. (Asked as "newest row
    first" instead, PostgreSQL may walk the primary key backwards past every newer row of
    other sources.)"""
    newest = (_rows(source).order_by().annotate(scope=Value(1)).values("scope")
              .annotate(top=Max("pk")).values("top"))
    reference = EvalModel.objects.filter(is_reference=True,
                                         study_id=selectors.study_id(study_id)).values("name")[:1]
    row = (Judgment.objects.filter(pk=Subquery(newest))
           .annotate(reference=Subquery(reference)).values_list("pk", "uuid", "reference")
           .first())
    return row or (None, None, selectors.reference_model_name(study_id))


def _count_after(seen: tuple, stamp: tuple, source: str | None, study_id: int | None,
                 count: int):
    """The entry's judgment count (of its study: unchanged) when every judgment newer than the
    one it ``seen`` is of another study; ``_APPENDED`` when judgments were only added (the
    seen one still there, the same reference) but one of them is of its study, or more than
    ``NEWER_CHECKED`` (a bulk arrival: recomputing costs less than sorting them out); None
    when the seen one is gone or reused, or the reference changed. Reads the new rows (with
    their studies) by primary key; the answer is shared by the page's other parts for
    ``RECHECK_SECONDS``."""
    seen_id, new_id, reference = seen[0], stamp[0], stamp[2]
    if seen[2] != reference or new_id is None or (seen_id or 0) >= new_id:
        return None
    # Every part of a page was stored at the same stamp: the first to look shares its answer.
    memo = f"{_token_key(source)}:newer:" + hashlib.sha256(
        repr((study_id, seen, stamp)).encode()).hexdigest()
    added = cache.get(memo)
    if added is None:
        added = _added_elsewhere(seen, new_id, source, study_id)
        cache.set(memo, added, RECHECK_SECONDS)
    if added == _GONE:
        return None
    return _APPENDED if added == _OURS else count


def _added_elsewhere(seen: tuple, new_id: int, source: str | None, study_id: int | None) -> int:
    """How many judgments after ``seen`` up to ``new_id`` there are, all of other studies;
    ``_GONE`` when the seen one is gone, ``_OURS`` when one is of ``study_id`` or there are
    too many to look at."""
    seen_id, seen_uuid, _ = seen
    rows = list(_rows(source).filter(pk__gte=seen_id or 0, pk__lte=new_id).order_by("pk")
                .values_list("pk", "uuid", "study_id")[:NEWER_CHECKED + 2])
    if seen_id is not None:
        if not rows or rows[0][:2] != (seen_id, seen_uuid):
            return _GONE
        rows = rows[1:]
    study = study_id if study_id is not None else selectors.study_id(None)
    if len(rows) > NEWER_CHECKED or any(row[2] == study for row in rows):
        return _OURS
    return len(rows)


def _count(source: str | None, study_id: int) -> int:
    """How many judgments are in scope: a scan of the index (~80 ms per million rows)."""
    return _scope(source, study_id).aggregate(n=Count("pk"))["n"]


def _count_before_storing(source: str | None, study_id: int, stamp: tuple) -> int:
    """The judgments in scope up to ``stamp`` before computing an entry: a refresh stores a
    page and the boards under it at once, and a count reads the study's whole range of the
    ``(study, source, …)`` index (~0.1 s at a million judgments), so a count taken within ``STORE_COUNT_SECONDS`` is moved
    on over the ids since (an index range) instead of counted again."""
    key, top = f"{_token_key(source)}:count-before-storing:{study_id}", stamp[0] or 0
    known = cache.get(key)
    if known is not None and known[1] <= top:
        count = known[0] + _scope(source, study_id).filter(pk__gt=known[1], pk__lte=top).count()
    else:
        count = _scope(source, study_id).filter(pk__lte=top).count()
    cache.set(key, (count, top), STORE_COUNT_SECONDS)
    return count


def _recent_count(source: str | None, study_id: int) -> int:
    """``_count``, counted at most once per ``RECHECK_SECONDS`` per scope (every part of a
    page shares it)."""
    key = f"{_token_key(source)}:count:{study_id}"
    count = cache.get(key)
    if count is None:
        count = _count(source, study_id)
        cache.set(key, count, RECHECK_SECONDS)
    return count


# ---------------------------------------------------------------- entries and the lock


def _fresh(key: str, entry, source: str | None, stamp: tuple, study_id: int | None):
    """The entry's value; ``_STALE_SERVED`` when judgments of its study arrived since its
    stamp but it may be served while a refresh runs (``_behind``); None when there is none or
    it is stale (``_count_after``), or a re-count shows deleted judgments (an entry older than
    ``RECHECK_SECONDS`` is re-counted: a deletion anywhere shows within about twice that
    time). Moving the stamp on or re-counting keeps the entry's expiry: it still ends
    ``ENTRY_SECONDS`` after it was computed."""
    if entry is None:
        return None
    entry = Entry(*entry)
    now = time.time()
    left = ENTRY_SECONDS - (now - entry.stored_at)
    if entry.seen != stamp:
        count = _count_after(entry.seen, stamp, source, study_id, entry.count)
        behind = _behind(entry, source, study_id) if count is _APPENDED and left > 0 else None
        if count is _APPENDED and left > 0 and board_refresh.refreshing() and (
                behind is None or now - entry.snapshot_at >= settings.LEADERBOARD_REFRESH_SECONDS):
            # A refresh needing it recomputes it, or awaits the refresh another is running
            # (even one past the bounds: two computations of one entry would race).
            return _RECOMPUTE if board_refresh.claim(key, LOCK_SECONDS) else _AWAIT
        if behind is not None:
            # Served behind: to a view, or to a refresh built on it (refreshed moments ago):
            # each entry is computed once per refresh, not once per entry built on it.
            board_refresh.served(behind, now - entry.snapshot_at, entry.seen, entry.snapshot_at)
            return _STALE_SERVED
        if count is None or count is _APPENDED or left <= 0:
            cache.delete(key)  # so that nobody waiting for the new value takes this one
            return None
        entry = entry._replace(count=count, seen=stamp)
        cache.set(key, tuple(entry), left)
    if now - entry.checked_at < RECHECK_SECONDS:
        return entry.value
    if left <= 0 or _recent_count(source, study_id) != entry.count:
        cache.delete(key)
        return None
    cache.set(key, tuple(entry._replace(checked_at=now)), left)
    return entry.value


def _behind(entry: Entry, source: str | None, study_id: int) -> int | None:
    """How many judgments are newer than an ``entry`` that judgments were only added to
    (``_APPENDED``) when it may still be served while a background refresh computes the new
    one; None when it must be recomputed now. Only an entry of at least
    ``LEADERBOARD_STALE_MIN_JUDGMENTS`` (a smaller board costs little to recompute in the
    request, so it always shows the last vote) that is at most ``LEADERBOARD_STALE_SECONDS``
    and ``LEADERBOARD_STALE_SHARE`` of its judgments behind. (A refresh recomputes such an
    entry without deleting it first: the views reading it meanwhile still get it.)"""
    if (entry.count < settings.LEADERBOARD_STALE_MIN_JUDGMENTS
            or time.time() - entry.snapshot_at > settings.LEADERBOARD_STALE_SECONDS):
        return None
    allowed = int(entry.count * settings.LEADERBOARD_STALE_SHARE)
    behind = board_refresh.once_per_view(
        ("after", source, study_id, entry.seen[0], allowed),
        lambda: _scope(source, study_id).filter(pk__gt=entry.seen[0] or 0).order_by()[:allowed + 1].count())
    return behind if behind <= allowed else None


def _compute_once(key: str, source: str | None, study_id: int, stamp: tuple,
                  compute: Callable[[], Any]) -> Any:
    """Compute under a lock so concurrent first views compute once: the others poll for the
    value; when the holder fails or dies (its lock released or expired) one of them takes
    over; after ``LOCK_SECONDS`` a waiter computes on its own."""
    lock = f"{key}:lock"
    deadline = time.monotonic() + LOCK_SECONDS
    while not cache.add(lock, 1, LOCK_SECONDS):
        if (entry := cache.get(key)) is not None:
            return Entry(*entry).value
        if time.monotonic() > deadline:
            return _store(key, source, study_id, stamp, compute)
        time.sleep(POLL_SECONDS)
    try:
        if (entry := cache.get(key)) is not None:  # stored while we waited for the lock
            return Entry(*entry).value
        return _store(key, source, study_id, stamp, compute)
    finally:
        cache.delete(lock)


def _store(key: str, source: str | None, study_id: int, stamp: tuple,
           compute: Callable[[], Any]) -> Any:
    """Compute and store the entry. Built on entries served behind, it takes the oldest's
    stamp and snapshot time (and passes them on to what is built on it): it says how far
    behind it really is, and the bounds hold for what it shows."""
    started = time.time()
    count = _count_before_storing(source, study_id, stamp)  # a deletion shows at the re-count
    cache.set(f"{_token_key(source)}:count:{study_id}", count, RECHECK_SECONDS)
    with board_refresh.computing_from() as nested:
        value = compute()
    top = stamp[0] or 0
    for seen, snapshot_at in nested:
        if (seen[0] or 0) < (stamp[0] or 0):
            stamp = seen
        if snapshot_at < started:
            started = snapshot_at
    if nested:
        board_refresh.built_from(stamp, started)
        count -= _scope(source, study_id).filter(pk__gt=stamp[0] or 0, pk__lte=top).count()
    now = time.time()
    cache.set(key, tuple(Entry(value, count, now, now, stamp, started)), ENTRY_SECONDS)
    return value
