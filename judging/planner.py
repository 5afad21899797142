"""How many more human votes, and what cost, for a target certainty (pure: no Django).

The question an analyst asks before spending money: "to get every CI under W Elo points / to
separate model X from Y / to fix the top-k, how many more comparisons must people vote on,
with and without the judge?" ``plan`` answers it from what the data already says:

The variance model (the board's Bradley-Terry on comparison shares, ``judging.ppi``)
    A comparison between ``i`` and ``j`` is one outcome ``y`` (A's share of its votes, ties
    half) with mean ``s = sigmoid(b_i - b_j)`` and variance ``dispersion * s (1 - s)``.
    ``dispersion`` is the measured worker noise: about ``1 / V`` when the ``V`` votes on a
    comparison are independent fair coin flips around ``s``, 1 when they always agree (then
    extra votes on the same comparison teach nothing). The BT information of ``n_ij``
    comparisons is ``sum n_ij s (1 - s) / dispersion (e_i - e_j)(e_i - e_j)^T``; its
    inverse is the sandwich covariance the board reports (up to the HC1 factor).

The judge (PPI++, ``judging.ppi``)
    With the judge's verdict on every comparison (judge verdicts cost cents, so the plan
    assumes the judge rates all of them, ``N >> n``) and the optimal power-tuning weight, the
    human variance shrinks by ``1 - rho^2``, ``rho`` the correlation of the human and judge
    residuals on the comparisons both rated: a judge is worth the same as
    ``1 / (1 - rho^2)`` times the human votes. So with the judge the plan needs
    ``(1 - rho^2)`` times the *total* comparisons, minus those already voted on.

The sampler (greedy, targeted active sampling)
    Comparisons are added a chunk at a time (1 % of the comparisons so far, at least one) to
    the pair whose chunk lowers the unmet contrasts' variances most (Sherman-Morrison, as in
    ``judging.active_sampling``), until every contrast meets its threshold; the last chunk is
    cut to the smallest size that still meets it. Planned counts therefore come with the
    pairs that realise them, and the batch is made from those pairs.

Targets (``Target.parse``: ``ci:W``, ``separate:X,Y``, ``topk:K``)
    ``ci:W``: every model's CI (full width, Elo points, at ``1 - alpha``) at most ``W``, the
    ratings anchored at the comparison-weighted mean as on the board. ``separate:X,Y``: the
    CI of ``X - Y`` excludes 0 with probability ``power`` if the current difference is the
    truth (``|d| >= (z_{alpha/2} + z_power) sd``). ``topk:K``: the same for every pair of a
    current top-K model and a model outside it, Bonferroni-corrected over those pairs, so the
    top-K *set* is fixed at ``1 - alpha`` simultaneously.

Known limits: the current ratings are taken as the truth (a plan from very few votes is a
rough one; re-plan after each round); the judge's ``rho`` is assumed to hold on the new
comparisons; ``dispersion`` is one number for every pair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np
from scipy.stats import norm

from annotation.providers.costs import CostEstimate, FeeSchedule, estimate
from judging.ppi import ELO, Pairs, bradley_terry_human

CHUNK = 0.01  # a greedy step adds this share of the comparisons so far (at least one)
MAX_STEPS = 20_000
MAX_COMPARISONS = 1_000_000  # beyond this a target counts as out of reach
PRIOR = 1e-6  # precision on every strength, so unconnected models have a (huge) variance


class PlanError(ValueError):
    """A target the planner cannot read, or models it does not know."""


@dataclass(frozen=True)
class Target:
    """What the plan must reach: ``kind`` in ci / separate / topk and its argument."""

    kind: str
    width: float = 0.0  # ci: full CI width in Elo points
    models: tuple[str, str] = ("", "")  # separate
    k: int = 0  # topk

    @classmethod
    def parse(cls, text: str) -> Target:
        kind, _, arg = (text or "").partition(":")
        try:
            if kind == "ci":
                width = float(arg)
                if not (math.isfinite(width) and width > 0):
                    raise ValueError
                return cls("ci", width=width)
            if kind == "separate":
                x, y = (part.strip() for part in arg.split(","))
                if not x or not y or x == y:
                    raise ValueError
                return cls("separate", models=(x, y))
            if kind == "topk":
                k = int(arg)
                if k < 1:
                    raise ValueError
                return cls("topk", k=k)
        except ValueError:
            pass
        raise PlanError(f"unknown target {text!r}: use ci:W (Elo points, W > 0), "
                        "separate:X,Y (two model names) or topk:K (K >= 1)")

    def __str__(self) -> str:
        if self.kind == "ci":
            return f"every CI under {self.width:g} Elo points"
        if self.kind == "separate":
            return f"separate {self.models[0]} from {self.models[1]}"
        return f"fix the top {self.k}"


@dataclass(frozen=True)
class World:
    """What the data says now: strengths (natural-log BT), human-voted comparisons per pair,
    the worker noise (``dispersion``) and the judge's residual correlation (None: no judge)."""

    models: tuple[str, ...]
    strengths: np.ndarray
    comparisons: np.ndarray  # (M, M) symmetric
    dispersion: float
    rho: float | None = None
    capacity: np.ndarray | None = None  # (M, M) symmetric: comparisons a pair can still get

    def __post_init__(self):
        m = len(self.models)
        if np.shape(self.strengths) != (m,) or np.shape(self.comparisons) != (m, m):
            raise PlanError("strengths and comparisons must match the models")
        if not self.dispersion > 0:
            raise PlanError("dispersion must be > 0")
        if self.rho is not None and not -1 < self.rho < 1:
            raise PlanError("rho must lie in (-1, 1)")


@dataclass(frozen=True)
class Plan:
    """How many more comparisons (and on which pairs) reach the target; ``reachable`` False
    when no number of votes does (equal models cannot be separated, capacity ran out)."""

    target: Target
    reachable: bool
    comparisons: int  # more comparisons to vote on
    pairs: dict[tuple[int, int], int] = field(default_factory=dict)
    worst_now: float = math.inf  # largest variance / threshold among the contrasts, now
    worst_after: float = math.inf  # and after the plan (<= 1 when reachable)
    variance_factor: float = 1.0  # 1 - rho^2 with the judge
    ratios: tuple[float, ...] = ()  # each contrast's variance / threshold after the plan

    def cost(self, *, votes_per_comparison: int, reward: Decimal,
             fees: FeeSchedule | None = None) -> CostEstimate:
        """Rewards and marketplace fees of the plan's votes (one paid assignment each)."""
        return estimate(reward=Decimal(reward), assignments=self.comparisons * votes_per_comparison,
                        assignments_per_hit=votes_per_comparison, fees=fees or FeeSchedule())


@dataclass(frozen=True)
class Plans:
    human_only: Plan
    with_judge: Plan | None


# ----------------------------------------------------------------------------- measuring


def measure(models, labeled: Pairs) -> World:
    """A ``World`` from the human-voted comparisons (``labeled.human`` A's share of votes;
    ``labeled.judge`` NaN-free judge scores, or None for no judge) via the board's BT fit."""
    m = len(models)
    if len(labeled) < 2:
        raise PlanError("need at least 2 human-voted comparisons to plan from")
    fit = bradley_terry_human(labeled, m)
    beta = (fit.ratings - fit.ratings.mean()) / ELO
    s = 1.0 / (1.0 + np.exp(beta[labeled.b] - beta[labeled.a]))
    resid = labeled.human - s
    n = len(labeled)
    dispersion = float((resid**2).sum() / max((s * (1 - s)).sum(), 1e-12)
                       * n / max(n - (m - 1), 1))
    counts = np.zeros((m, m))
    np.add.at(counts, (labeled.a, labeled.b), 1)
    counts += counts.T
    return World(tuple(models), beta, counts, max(dispersion, 1e-3))


def residual_correlation(labeled: Pairs, strengths: np.ndarray) -> float | None:
    """``rho`` of human and judge residuals (the PPI gain): None when it is undefined."""
    s = 1.0 / (1.0 + np.exp(strengths[labeled.b] - strengths[labeled.a]))
    h, j = labeled.human - s, labeled.judge - s
    if len(h) < 3 or h.std() == 0 or j.std() == 0:
        return None
    return float(np.clip(np.corrcoef(h, j)[0, 1], -0.99, 0.99))


# ----------------------------------------------------------------------------- planning


def plan(world: World, target: Target, *, alpha: float = 0.05, power: float = 0.8) -> Plans:
    """The plan without the judge and (when ``world.rho`` is known) with it."""
    human = _plan(world, target, 1.0, alpha, power)
    if world.rho is None:
        return Plans(human, None)
    return Plans(human, _plan(world, target, 1.0 - world.rho**2, alpha, power))


def _contrasts(world: World, target: Target, alpha: float, power: float):
    """(rows, variance thresholds): the target as linear contrasts of the strengths."""
    m = len(world.models)
    index = {name: i for i, name in enumerate(world.models)}
    b = world.strengths
    if target.kind == "ci":
        per_model = world.comparisons.sum(1)
        w = per_model / per_model.sum() if per_model.sum() > 0 else np.full(m, 1.0 / m)
        rows = np.eye(m) - w[None, :]
        limit = (target.width / (2 * norm.ppf(1 - alpha / 2) * ELO)) ** 2
        return rows, np.full(m, limit)
    if target.kind == "separate":
        missing = [x for x in target.models if x not in index]
        if missing:
            raise PlanError(f"unknown model(s): {missing}")
        pairs = [(index[target.models[0]], index[target.models[1]])]
        z = norm.ppf(1 - alpha / 2) + norm.ppf(power)
    else:
        if not 1 <= target.k < m:
            raise PlanError(f"topk needs 1 <= K < {m} (the number of models)")
        order = np.argsort(-b, kind="stable")
        top, rest = order[:target.k], order[target.k:]
        pairs = [(int(i), int(j)) for i in top for j in rest]
        z = norm.ppf(1 - alpha / (2 * len(pairs))) + norm.ppf(power)
    rows = np.zeros((len(pairs), m))
    for r, (i, j) in enumerate(pairs):
        rows[r, i], rows[r, j] = 1.0, -1.0
    return rows, np.array([(b[i] - b[j]) ** 2 for i, j in pairs]) / z**2


def _plan(world: World, target: Target, factor: float, alpha: float, power: float) -> Plan:
    rows, limit = _contrasts(world, target, alpha, power)
    m = len(world.models)
    b = world.strengths
    s = 1.0 / (1.0 + np.exp(b[None, :] - b[:, None]))
    gain = s * (1 - s) / (world.dispersion * factor)  # information of one comparison
    np.fill_diagonal(gain, 0.0)
    info = _laplacian(world.comparisons * gain) + PRIOR * np.eye(m)
    # With the judge, the comparisons voted so far count 1 / factor times over as well.
    cov = np.linalg.inv(info)
    done = float(world.comparisons.sum() / 2)
    capacity = (np.full((m, m), np.inf) if world.capacity is None
                else np.asarray(world.capacity, dtype=float).copy())
    np.fill_diagonal(capacity, 0.0)

    def ratio(c, more=0):
        n = done + more  # the board's small-sample factor (HC1, as judging.ppi)
        hc1 = n / (n - (m - 1)) if n > m else 1.0
        return hc1 * np.einsum("rm,mn,rn->r", rows, c, rows) / np.where(limit > 0, limit, np.nan)

    worst_now = float(np.nanmax(ratio(cov))) if (limit > 0).all() else math.inf
    if not (limit > 0).all():
        return Plan(target, False, 0, worst_now=math.inf, variance_factor=factor)
    iu, ju = np.triu_indices(m, 1)
    added: dict[tuple[int, int], int] = {}
    total = 0
    for _ in range(MAX_STEPS):
        r = ratio(cov, total)
        unmet = r > 1.0
        if not unmet.any():
            return Plan(target, True, total, added, worst_now, float(r.max()), factor,
                        tuple(r.tolist()))
        open_ = capacity[iu, ju] > 0
        if not open_.any() or total >= MAX_COMPARISONS:
            break
        chunk = max(1, int(CHUNK * (done + total)))
        sr = rows[unmet] @ cov  # (R, M)
        u = sr[:, iu] - sr[:, ju]
        var_diff = cov[iu, iu] + cov[ju, ju] - 2 * cov[iu, ju]
        size = np.minimum(chunk, capacity[iu, ju])
        g = gain[iu, ju] * size
        score = ((u**2) / limit[unmet][:, None]).sum(0) * g / (1 + g * var_diff)
        score = np.where(open_, score, -np.inf)
        pick = int(np.argmax(score))
        i, j = int(iu[pick]), int(ju[pick])
        c = int(size[pick])
        x = np.zeros(m)
        x[i], x[j] = 1.0, -1.0
        g1 = gain[i, j]

        def meets(k, cov=cov, x=x, g1=g1, total=total):
            return bool((ratio(_added(cov, x, g1 * k), total + k) <= 1.0).all())

        if c > 1 and meets(c):
            c = _smallest(meets, c)
        cov = _added(cov, x, g1 * c)
        capacity[i, j] -= c
        capacity[j, i] -= c
        added[(i, j)] = added.get((i, j), 0) + c
        total += c
    r = ratio(cov, total)
    return Plan(target, False, total, added, worst_now, float(r.max()), factor, tuple(r.tolist()))


def _laplacian(c: np.ndarray) -> np.ndarray:
    """``sum_{i<j} c_ij (e_i - e_j)(e_i - e_j)^T`` for symmetric ``c``."""
    c = np.array(c, dtype=float)
    np.fill_diagonal(c, 0.0)
    return np.diag(c.sum(1)) - c


def _added(cov, x, g):
    """Covariance after adding information ``g x x^T`` (Sherman-Morrison)."""
    sx = cov @ x
    return cov - g * np.outer(sx, sx) / (1.0 + g * (x @ sx))


def _smallest(ok, high: int) -> int:
    """Smallest ``k`` in [1, high] with ``ok(k)`` (``ok`` monotone, ``ok(high)`` true)."""
    low = 1
    while low < high:
        mid = (low + high) // 2
        if ok(mid):
            high = mid
        else:
            low = mid + 1
    return low
