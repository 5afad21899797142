"""Pairwise-judgment ratings: majority vote, online Elo, Bradley-Terry, bootstrap CIs.

Pure numpy/scipy on purpose (no Django import) so it can run in workers, notebooks
and benchmarks, and so the same code rates any judge's verdicts (humans, a VLM judge,
a subset filtered by the caller -- splits are the caller's job).

Conventions (FastChat / LMSYS Chatbot Arena):

* A judgment is ``(model_a, model_b, outcome[, timestamp])`` with outcome ``'A'``,
  ``'B'`` or ``'tie'``. Anything after the outcome (e.g. a timestamp) is ignored:
  judgments are consumed **in the given order**, so sort them first if order matters
  (it only matters for online Elo; Bradley-Terry and the bootstrap are order-free).
* A tie counts as half a win for each side, in Elo, Bradley-Terry and win rates. ``'bad'``
  ("both are bad", where a batch offers it) is rated as a tie -- neither model gained on the
  other -- but stays its own bloc in a majority vote. (A board may leave "both bad" votes
  out before they reach these functions: ``judging.vote_aggregation``.)
* Ratings live on the Elo scale: ``rating = SCALE / ln(BASE) * beta + INIT``.
* Bradley-Terry is anchored so the **match-weighted mean rating is INIT (1000)** (the
  average rating of a model taking part in a judgment), or, with ``anchor=model``, so
  that model sits exactly at INIT (its CI then has zero width). Weighting by matches
  keeps a barely-seen model, whose rating the ridge pushes far out, from dragging the
  whole board (and every bootstrap CI) up or down.
* A tiny ridge (``RIDGE``, FastChat's ``C=1e6``) keeps the fit finite when the MLE
  does not exist: an undefeated/winless model gets a large but finite rating, and in a
  disconnected comparison graph each component is centred on its own (ratings across
  components are not comparable). Both cases emit a ``RatingsWarning``.

Input may be any iterable of rows (list of tuples, generator, 2-D array; for a DataFrame
pass ``df[["model_a", "model_b", "outcome"]].itertuples(index=False)``) or a
``Judgments`` from ``encode()``, which callers can reuse to skip re-validation.

Entry point: ``leaderboard()``. ``bench/ratings.py`` prints its speed on 1M judgments.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

INIT, SCALE, BASE, K = 1000.0, 400.0, 10.0, 4.0
RIDGE = 1e-6
OUTCOMES = ("A", "B", "tie")
VOTES = (*OUTCOMES, "bad")  # what a crowd vote may say ("bad": both are bad)
_CODE = {"A": 0, "B": 1, "tie": 2, "bad": 2}  # 0 = A wins, 1 = B wins, 2 = tie (or both bad)
OUTCOME_CODE = _CODE  # for callers that encode rows themselves (judging.selectors)
_SCORE_A = np.array([1.0, 0.0, 0.5])  # model_a's score by outcome code


class RatingsWarning(UserWarning):
    """Ratings were computed but some of them are unreliable (see message)."""


@dataclass(frozen=True, eq=False)
class Judgments:
    """Integer-encoded judgments: ``models`` sorted, ``a``/``b`` index into it, ``outcome`` codes."""

    models: tuple
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray  # int8: 0 = A wins, 1 = B wins, 2 = tie

    def __len__(self) -> int:
        return len(self.a)


@dataclass(frozen=True)
class LeaderboardRow:
    model: str
    elo: float
    bt_rating: float
    ci_low: float
    ci_high: float
    rank: int
    matches: int
    win_rate_vs_reference: float | None
    n_vs_reference: int


def encode(judgments: Iterable[Sequence] | Judgments) -> Judgments:
    """Validate rows and encode them as integer arrays once, so every later step is numpy-fast.

    Model order is sorted (not first-seen) so results and seeded bootstraps do not depend on
    row order. Columns are pulled with ``itemgetter`` rather than ``zip(*rows)``: building
    1M new tuples triggers the garbage collector and costs ~1 s.
    """
    if isinstance(judgments, Judgments):
        return judgments
    rows = judgments if isinstance(judgments, Sequence) else list(judgments)
    if len(rows) == 0:
        raise ValueError("no judgments given")
    try:
        col_a, col_b, col_o = (list(map(itemgetter(k), rows)) for k in range(3))
    except (IndexError, KeyError, TypeError):
        raise ValueError("each judgment must be (model_a, model_b, outcome[, timestamp])") from None
    models = tuple(sorted(set(col_a) | set(col_b), key=str))
    index = {m: i for i, m in enumerate(models)}
    a = np.fromiter(map(index.__getitem__, col_a), np.intp, len(rows))
    b = np.fromiter(map(index.__getitem__, col_b), np.intp, len(rows))
    try:
        outcome = np.fromiter(map(_CODE.__getitem__, col_o), np.int8, len(rows))
    except (KeyError, TypeError):
        bad = next(o for o in col_o if not isinstance(o, str) or o not in _CODE)
        raise ValueError(f"unknown outcome {bad!r}; expected one of {OUTCOMES}") from None
    same = np.flatnonzero(a == b)
    if same.size:
        raise ValueError(f"judgment #{same[0]} compares {models[a[same[0]]]!r} with itself")
    return Judgments(models, a, b, outcome)


def majority_vote(choices: Iterable[str]) -> tuple[str, int, int]:
    """Collapse one comparison's N human votes to ``(winner, agreement_count, n)``.

    ``winner`` is the most common choice; when 'A' and 'B' (or any top choices) are tied
    in vote count the result is ``'tie'``. ``agreement_count`` is the size of the largest
    bloc, so 5/5, 4/5 and 3/5 read as ``(w, 5, 5)``, ``(w, 4, 5)``, ``(w, 3, 5)``.
    """
    counts = Counter(choices)
    if not counts:
        raise ValueError("no votes given")
    unknown = set(counts) - set(VOTES)
    if unknown:
        raise ValueError(f"unknown vote(s) {sorted(map(repr, unknown))}; expected one of {VOTES}")
    top = max(counts.values())
    leaders = [c for c in VOTES if counts[c] == top]
    return (leaders[0] if len(leaders) == 1 else "tie"), top, sum(counts.values())


def online_elo(judgments, k: float = K, scale: float = SCALE, base: float = BASE,
               init: float = INIT) -> dict:
    """FastChat online Elo, judgments consumed in the given order.

    The loop is plain Python over int lists with everything in locals; the update is
    inherently sequential, so numpy cannot vectorise it.
    """
    c = math.log(base) / scale
    if not isinstance(judgments, Judgments):
        rows = judgments if isinstance(judgments, Sequence) else list(judgments)
        fast = _online_elo_rows(rows, k, c, float(init))
        if fast is not None:
            return fast
        judgments = rows  # a row the fast loop could not take: encode says which and why
    j = encode(judgments)
    r = [float(init)] * len(j.models)
    exp = math.exp
    for a, b, s in zip(j.a.tolist(), j.b.tolist(), _SCORE_A[j.outcome].tolist(), strict=True):
        ra = r[a]
        rb = r[b]
        d = k * (s - 1.0 / (1.0 + exp((rb - ra) * c)))
        r[a] = ra + d
        r[b] = rb - d
    return dict(zip(j.models, r, strict=True))


_SCORE = {"A": 1.0, "B": 0.0, "tie": 0.5, "bad": 0.5}  # model_a's score by outcome


def continue_online_elo(start: dict, rows: Sequence, k: float = K, scale: float = SCALE,
                        base: float = BASE, init: float = INIT) -> dict:
    """Online Elo over ``rows`` from the ratings ``start`` (online Elo of the judgments before
    them, by the same keys): the same floats as ``online_elo`` over the earlier and the new
    rows together, since the loop is the same arithmetic in the same order."""
    rows = rows if isinstance(rows, Sequence) else list(rows)
    if not rows:
        return {m: start[m] for m in sorted(start, key=str)}
    fast = _online_elo_rows(rows, k, math.log(base) / scale, float(init), start)
    if fast is None:
        encode(rows)  # says which row is not a judgment, and why
        raise ValueError("judgments must be (model_a, model_b, outcome) rows")
    return fast


def _online_elo_rows(rows: Sequence, k: float, c: float, init: float,
                     start: dict | None = None) -> dict | None:
    """Online Elo straight over ``(model_a, model_b, outcome)`` rows, ratings kept by name:
    the same arithmetic in the same order as the encoded loop (so the same floats), without
    encoding first, which took half of the time at 10M rows. None when a row is not a plain
    valid triple (four columns, an unknown outcome, a model against itself, ...): the caller
    then encodes, which names the row and the problem."""
    if len(rows) == 0:
        return None
    r: dict = dict(start or {})
    get, exp, score = r.get, math.exp, _SCORE
    try:
        for a, b, o in rows:
            if a == b:
                return None
            ra = get(a, init)
            rb = get(b, init)
            d = k * (score[o] - 1.0 / (1.0 + exp((rb - ra) * c)))
            r[a] = ra + d
            r[b] = rb - d
    except (ValueError, TypeError, KeyError):
        return None
    return {m: r[m] for m in sorted(r, key=str)}


def pair_counts(judgments, times=None) -> tuple[tuple, np.ndarray, np.ndarray]:
    """Collapse rows to ``(models, wins, ties)``: ``wins[i, j]`` = times i beat j,
    ``ties`` symmetric. Everything except online Elo works from these counts.

    ``times`` (one non-negative integer per row) says how often each row occurred, so rows
    already counted by the database (``GROUP BY`` model_a, model_b, outcome) give the same
    integer matrices as the rows themselves. Raw rows without ``times`` are counted that way
    first: their distinct ``(model_a, model_b, outcome)`` triples (a few thousand) are encoded
    instead of every row (10M rows: 1.9 s instead of 3.3 for BT + 1,000 rounds)."""
    if times is None and not isinstance(judgments, Judgments):
        judgments = judgments if isinstance(judgments, Sequence) else list(judgments)
        counted = _distinct_triples(judgments)
        if counted is not None:
            judgments, times = counted
    j = encode(judgments)
    m = len(j.models)
    winner = np.where(j.outcome == 1, j.b, j.a)
    loser = np.where(j.outcome == 1, j.a, j.b)
    decided = j.outcome != 2
    if times is None:
        wins = np.bincount(winner[decided] * m + loser[decided], minlength=m * m)
        t = np.bincount(j.a[~decided] * m + j.b[~decided], minlength=m * m)
    else:
        times = np.asarray(times, dtype=np.int64)
        if times.shape != (len(j),) or (times < 0).any():
            raise ValueError("times must hold one non-negative count per judgment")
        wins = _weighted_bincount(winner[decided] * m + loser[decided], times[decided], m * m)
        t = _weighted_bincount(j.a[~decided] * m + j.b[~decided], times[~decided], m * m)
    t = t.reshape(m, m)
    return j.models, wins.reshape(m, m), t + t.T


def _distinct_triples(rows: Sequence) -> tuple[list, list[int]] | None:
    """(distinct rows, how often each occurs), or None unless every row is a hashable, valid
    ``(model_a, model_b, outcome)`` triple: other rows are encoded one by one, so encoding's
    errors name the row, not a triple."""
    try:
        counted = Counter(rows)
        if not counted or any(len(t) != 3 or t[0] == t[1] or t[2] not in _CODE
                              for t in counted):
            return None
    except TypeError:
        return None
    return list(counted), list(counted.values())


def _weighted_bincount(cells: np.ndarray, times: np.ndarray, size: int) -> np.ndarray:
    """Integer bincount with integer weights (``np.bincount`` would sum them as floats)."""
    out = np.zeros(size, dtype=np.int64)
    np.add.at(out, cells, times)
    return out


class _Cells:
    """Non-empty (pair, result) cells of the count matrices, the unit of the bootstrap.

    Resampling these counts multinomially with n fixed has exactly the distribution of
    the row bootstrap, because rows in the same cell are interchangeable for BT.
    """

    def __init__(self, wins: np.ndarray, ties: np.ndarray):
        m = self.m = wins.shape[0]
        iu, ju = np.triu_indices(m, 1)
        c = np.stack([wins[iu, ju], wins[ju, iu], ties[iu, ju]], axis=1)
        pair, rel = np.nonzero(c)  # rel: 0 = i beat j, 1 = j beat i, 2 = tie
        self.counts = c[pair, rel]
        i, j = iu[pair], ju[pair]
        self.groups = [(i[rel == 0] * m + j[rel == 0], rel == 0, 1.0),
                       (j[rel == 1] * m + i[rel == 1], rel == 1, 1.0),
                       (i[rel == 2] * m + j[rel == 2], rel == 2, 0.5),
                       (j[rel == 2] * m + i[rel == 2], rel == 2, 0.5)]

    def win_matrices(self, counts: np.ndarray) -> np.ndarray:
        """(rounds, cells) counts -> (rounds, M, M) win totals, a tie giving 0.5 to each side."""
        w = np.zeros((self.m * self.m, len(counts)))  # row scatter is much faster than column
        ct = np.ascontiguousarray(counts.T, dtype=float)
        for pos, sel, weight in self.groups:
            w[pos] += weight * ct[sel]
        return np.ascontiguousarray(w.T).reshape(len(counts), self.m, self.m)


def _prob(b):
    """p_ij = e^b_i / (e^b_i + e^b_j) from only R*M exponentials (shifted against overflow)."""
    shift = b.max(1)
    pi = np.exp(b - shift[:, None])
    s = pi[:, :, None] + pi[:, None, :]
    return pi[:, :, None] / s, s, shift


def _objective(b, s, shift, n, w_row, ridge):
    """-sum_ij w_ij log p_ij + ridge/2 |b|^2, written via log(e^b_i + e^b_j) = log s_ij + shift."""
    return (0.5 * (n * np.log(s)).sum((1, 2)) + 0.5 * n.sum((1, 2)) * shift
            - (b * w_row).sum(1) + 0.5 * ridge * (b * b).sum(1))


def _hessian(np_, p, ridge):
    hess = -np_ * p.transpose(0, 2, 1)  # -n_ij p_ij p_ji: exact even when p_ij ~ 1
    diag = np.arange(hess.shape[1])
    hess[:, diag, diag] = -hess.sum(2) + ridge
    return hess


# Kept over scipy.optimize.minimize: 50-95x faster, 1M-judgment bootstrap (bench/library_first.py).
def _fit_bt(w: np.ndarray, ridge: float, beta: np.ndarray | None = None,
            h_inv: np.ndarray | None = None, chord_iters: int = 10, max_iter: int = 100):
    """Ridge-penalised BT MLE for R win matrices (R, M, M) at once; returns beta (R, M).

    Row-wise minimises ``-sum_ij w_ij log p_ij + ridge/2 |beta|^2``. The objective is
    strictly convex, so Newton steps with step halving converge from any start; all
    rounds are solved together with numpy batching, and converged rounds drop out.
    With ``h_inv`` (inverse Hessian of the full-data fit) the first ``chord_iters`` steps
    reuse it instead of a fresh (R, M, M) solve -- bootstrap samples are close to the
    data, so this converges in a few cheap steps; rounds that stall (e.g. a model that
    drew no games) finish with true Newton. The optimum has mean(beta) == 0, so every
    step is re-centred, which also removes float noise along that flat direction.
    """
    n = w + w.transpose(0, 2, 1)
    w_row = w.sum(2)
    tol = 1e-12 * (1.0 + 0.5 * n.sum((1, 2)).max())  # on the Newton decrement
    beta = np.zeros(w.shape[:2]) if beta is None else np.array(beta, dtype=float)
    out, todo = np.empty_like(beta), np.arange(len(w))
    p, s, shift = _prob(beta)
    f = _objective(beta, s, shift, n, w_row, ridge)
    for it in range(max_iter):
        np_ = n * p
        grad = np_.sum(2) - w_row + ridge * beta
        if h_inv is not None and it < chord_iters:
            step = -grad @ h_inv
        else:
            step = -np.linalg.solve(_hessian(np_, p, ridge), grad[..., None])[..., 0]
        decrement = -(grad * step).sum(1)
        t = np.ones(len(todo))
        for _ in range(60):  # halve the step only for the rounds that got worse
            new = beta + t[:, None] * step
            new -= new.mean(1, keepdims=True)
            p, s, shift = _prob(new)
            f_new = _objective(new, s, shift, n, w_row, ridge)
            worse = f_new > f + 1e-12 * np.abs(f)
            if not worse.any():
                break
            t[worse] *= 0.5
        beta, f = new, f_new
        done = decrement < tol
        if done.any():
            out[todo[done]] = beta[done]
            keep = ~done
            todo, beta, f, p, s, shift, n, w_row = (
                x[keep] for x in (todo, beta, f, p, s, shift, n, w_row))
            if not todo.size:
                return out
    warnings.warn("Bradley-Terry fit did not converge", RatingsWarning, stacklevel=3)
    out[todo] = beta
    return out


def _to_rating(beta: np.ndarray, anchor: int | None, weights: np.ndarray):
    """beta -> Elo scale, with ``anchor`` at INIT or else the ``weights``-weighted mean."""
    if anchor is not None:
        ref = beta[:, [anchor]]
    else:
        weights = weights if weights.sum() > 0 else np.ones_like(weights)
        ref = (beta @ weights)[:, None] / weights.sum()
    return SCALE / math.log(BASE) * (beta - ref) + INIT


def _anchor_index(models, anchor, role="anchor"):
    if anchor is None:
        return None
    if anchor not in models:
        raise ValueError(f"{role} model {anchor!r} does not appear in the judgments")
    return models.index(anchor)


def _check_identifiable(models, wins, ties):
    """Warn (not fail) when the MLE does not exist and the ridge decides some ratings.

    Zermelo/Ford: the BT MLE exists iff the "beat or tied" graph is strongly connected.
    """
    w = wins + 0.5 * ties
    from scipy.sparse import csr_matrix  # here, not at import: web workers boot without scipy
    from scipy.sparse.csgraph import connected_components

    weak, _ = connected_components(csr_matrix(w + w.T > 0), directed=False)
    strong, _ = connected_components(csr_matrix(w > 0), directed=True, connection="strong")
    if weak > 1:
        warnings.warn(f"comparison graph has {weak} disconnected components; each is centred "
                      "on its own and ratings across components are not comparable",
                      RatingsWarning, stacklevel=3)
    if strong > weak:
        won, lost = w.sum(1), w.sum(0)
        extreme = [m for m, a, b in zip(models, won, lost, strict=True) if (a == 0) != (b == 0)]
        warnings.warn("some models never lost (or never won) against the rest"
                      + (f", e.g. never lost / never won: {extreme}" if extreme else "")
                      + "; their rating gaps are set by the ridge and are unreliable",
                      RatingsWarning, stacklevel=3)


def _win_matrix(wins, ties, ridge) -> np.ndarray:
    """Validated (1, M, M) win matrix, ties counting half a win each way."""
    if ridge <= 0:
        raise ValueError("ridge must be > 0 (it makes the ratings identifiable)")
    w = np.asarray(wins, dtype=float)
    if w.ndim != 2 or w.shape[0] != w.shape[1] or (w < 0).any():
        raise ValueError("wins must be a square matrix of non-negative counts")
    if ties is not None:
        w = w + 0.5 * np.asarray(ties, dtype=float)
    return w[None]


def bradley_terry_from_counts(wins, ties=None, anchor: int | None = None,
                              ridge: float = RIDGE) -> np.ndarray:
    """BT ratings (Elo scale) from a win-count matrix (``wins[i, j]`` = i beat j) and an
    optional symmetric tie matrix. ``anchor`` is an index; default anchors the
    match-weighted mean."""
    beta = _fit_bt(_win_matrix(wins, ties, ridge), ridge)
    wins = np.asarray(wins, dtype=float)
    ties = np.zeros_like(wins) if ties is None else np.asarray(ties, dtype=float)
    return _to_rating(beta, anchor, _matches(wins, ties))[0]


def bradley_terry(judgments, anchor=None, ridge: float = RIDGE) -> dict:
    """BT ratings on the Elo scale, ``{model: rating}``, anchored as in the module docstring."""
    models, wins, ties = pair_counts(judgments)
    _check_identifiable(models, wins, ties)
    ratings = bradley_terry_from_counts(wins, ties, _anchor_index(models, anchor), ridge)
    return dict(zip(models, ratings, strict=True))


def bootstrap_bradley_terry(judgments, rounds: int = 1000, seed: int = 0, anchor=None,
                            ridge: float = RIDGE) -> tuple[tuple, np.ndarray, np.ndarray]:
    """Return ``(models, point_ratings, samples[rounds, M])``.

    Each round draws the per-cell counts from Multinomial(n, observed proportions) with a
    seeded ``np.random.Generator`` (n fixed; cells = pair x {i won, j won, tie}) and
    refits, warm-started from the full fit.
    """
    models, wins, ties = pair_counts(judgments)
    return (models, *_bootstrap(models, wins, ties, rounds, seed, anchor, ridge))


def bootstrap_bradley_terry_from_counts(models: Sequence, wins, ties, rounds: int = 1000,
                                        seed: int = 0, anchor=None, ridge: float = RIDGE
                                        ) -> tuple[tuple, np.ndarray, np.ndarray]:
    """``bootstrap_bradley_terry`` from ``pair_counts``' output (e.g. counts the database
    grouped): the bootstrap resamples these counts, so the result is the same to the bit."""
    models = tuple(models)
    return (models, *_bootstrap(models, wins, ties, rounds, seed, anchor, ridge))


def _bootstrap(models, wins, ties, rounds, seed, anchor, ridge):
    if rounds < 0:
        raise ValueError("bootstrap rounds must be >= 0")
    idx = _anchor_index(models, anchor)
    w = _win_matrix(wins, ties, ridge)
    beta = _fit_bt(w, ridge)
    p = _prob(beta)[0]
    h_inv = np.linalg.inv(_hessian((w + w.transpose(0, 2, 1)) * p, p, ridge)[0])
    weights = _matches(wins, ties)  # full-data weights, fixed across rounds
    cells = _Cells(wins, ties)
    rng = np.random.default_rng(seed)
    n = int(cells.counts.sum())
    chunk = max(1, 2_000_000 // (cells.m * cells.m))  # bounds the (chunk, M, M) arrays
    samples = [np.empty((0, len(models)))]
    for start in range(0, rounds, chunk):
        size = min(chunk, rounds - start)
        wr = cells.win_matrices(rng.multinomial(n, cells.counts / n, size=size))
        b = _fit_bt(wr, ridge, np.repeat(beta, size, 0), h_inv)
        samples.append(_to_rating(b, idx, weights))
    return _to_rating(beta, idx, weights)[0], np.concatenate(samples)


def ranks_from_ci(ci_low: Sequence[float], ci_high: Sequence[float]) -> np.ndarray:
    """LMSYS rank: 1 + number of models whose lower bound is above this model's upper bound."""
    lo, hi = np.asarray(ci_low, dtype=float), np.asarray(ci_high, dtype=float)
    return 1 + (lo[None, :] > hi[:, None]).sum(axis=1)


def win_rates_vs(judgments, reference, times=None) -> dict:
    """``{model: (win_rate, n)}`` against ``reference`` (either side), ties count half.

    ``win_rate`` is None when the pair never met; the reference itself is omitted.
    ``times``: how often each row occurred (rows counted by the database; see ``pair_counts``).
    """
    return _win_rates(*pair_counts(judgments, times=times), reference)


def _win_rates(models, wins, ties, reference):
    ref = _anchor_index(models, reference, "reference")
    n = wins[:, ref] + wins[ref, :] + ties[:, ref]
    rate = (wins[:, ref] + 0.5 * ties[:, ref]) / np.maximum(n, 1)
    return {m: (float(rate[i]) if n[i] else None, int(n[i]))
            for i, m in enumerate(models) if i != ref}


def matches_per_model(judgments) -> dict:
    """``{model: number of judgments it took part in}``."""
    models, wins, ties = pair_counts(judgments)
    return dict(zip(models, _matches(wins, ties).tolist(), strict=True))


def _matches(wins, ties):
    return wins.sum(0) + wins.sum(1) + ties.sum(1)


@dataclass(frozen=True, eq=False)
class Counted:
    """Judgments already counted (``pair_counts``' output: models, wins, ties) with their online
    Elo by model, e.g. a database's GROUP BY and Elo kept up to date as verdicts arrive:
    ``leaderboard`` rates them to the same rows, bit for bit, as the judgments themselves."""

    models: tuple
    wins: np.ndarray
    ties: np.ndarray
    elo: dict


def leaderboard(judgments, reference=None, bootstrap_rounds: int = 1000, seed: int = 0,
                anchor=None, ridge: float = RIDGE) -> list[LeaderboardRow]:
    """One-call leaderboard for any judge's verdicts (or ``Counted`` ones), sorted by BT rating
    (best first).

    ``elo`` is online Elo in the given order; ``bt_rating`` and the CI (2.5/97.5 bootstrap
    percentiles) are order-free. With ``bootstrap_rounds=0`` the CI collapses to the point
    estimate, so ranks just order by rating. ``reference`` adds each model's win rate
    against it (ties half; None / 0 for the reference itself and models that never met it).
    """
    if isinstance(judgments, Counted):
        models, wins, ties, elo = (tuple(judgments.models), judgments.wins, judgments.ties,
                                   judgments.elo)
    else:
        j = encode(judgments)
        (models, wins, ties), elo = pair_counts(j), online_elo(j)
    _check_identifiable(models, wins, ties)
    vs_ref = _win_rates(models, wins, ties, reference) if reference is not None else {}
    point, samples = _bootstrap(models, wins, ties, bootstrap_rounds, seed, anchor, ridge)
    lo, hi = np.percentile(samples, [2.5, 97.5], axis=0) if bootstrap_rounds else (point, point)
    rank = ranks_from_ci(lo, hi)
    matches = _matches(wins, ties)
    rows = [LeaderboardRow(m, elo[m], float(point[i]), float(lo[i]), float(hi[i]), int(rank[i]),
                           int(matches[i]), *vs_ref.get(m, (None, 0)))
            for i, m in enumerate(models)]
    return sorted(rows, key=lambda row: -row.bt_rating)
