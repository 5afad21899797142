"""Judge-powered estimates of the human numbers a board shows (prediction-powered inference).

Pure numpy/scipy (no Django import), like ``judging.ratings``, whose Bradley-Terry fit,
scale and anchor conventions it reuses. The target is always what the **humans** would say;
an automatic judge's verdicts only make the interval narrower, never move its target.

How (PPI++, Angelopoulos, Duchi & Zrnic 2023)
    Humans voted on ``n`` comparisons, the judge gave verdicts on those and on ``N`` more that
    no human saw (disjoint sets, as in the paper and ``ppi-python``). For any M-estimator with
    per-comparison loss ``l`` the estimate minimises::

        lam * mean_U l(judge) + mean_L l(human) - lam * mean_L l(judge)

    The last two terms are the judge's measured error on the human-voted comparisons, so the
    estimate targets the human answer whatever the judge's quality (a judge that prefers long
    answers shifts nothing but the interval width). Its covariance is the sandwich
    ``H^-1 (n/N lam^2 Cov_U(g_judge) + Cov_L(g_human - lam g_judge)) H^-1 / n``, and ``lam``
    (the power-tuning parameter, clipped to [0, 1]) minimises the summed variance, so a useless
    judge gets ``lam ~ 0`` and gives the human-only interval back. A judge that copies the
    humans gets ``lam = N / (N + n)``, which weights every comparison equally: exactly the
    interval humans voting on all ``n + N`` comparisons would give.

Why not ``ppi-python`` itself
    ``ppi-python`` 0.2.3 (the authors' package) computes the same estimators and the tests
    check these numbers against it, but it brings numba/llvmlite, statsmodels, gdown and
    beautifulsoup into a web app for ~100 lines of algebra, and its logistic regression fits
    one dense design row per comparison with sklearn: Bradley-Terry's design (``e_a - e_b``, no
    intercept) is rank-deficient there (the ratings' common shift), so a column must be
    dropped, and a 40-model bench of thousands of fits is too slow. Here BT is fitted from
    M x M win matrices with ``ratings._fit_bt`` and the gradient moments are scattered into
    M x M matrices, so a fit costs the same at 1,000 or 1,000,000 comparisons.

Conventions
    Outcomes are A's score in [0, 1]: 1 = A won, 0 = B won, 0.5 = tie (or "both bad"); a
    comparison voted by several workers (or per turn) is one row holding the share of its
    votes for A, ties half, because votes on the same comparison are not independent.
    Ratings are on the Elo scale and anchored like ``ratings.leaderboard`` (the match-weighted
    mean of all compared rows at ``INIT``, or ``anchor`` at ``INIT`` with zero width).
    Intervals are normal (Wald) intervals at level ``1 - alpha``; the BT covariance carries
    the usual small-sample factor ``n / (n - (M - 1))`` (HC1: M - 1 free strengths estimated
    from n human-voted comparisons), which ``bench/ppi.py`` needed to keep coverage >= 93 %
    with 15 human-voted comparisons per model; ``df_correction=False`` gives the textbook
    (and ``ppi-python``'s) interval.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from judging.ratings import BASE, INIT, RIDGE, SCALE, RatingsWarning, _fit_bt

ELO = SCALE / math.log(BASE)  # rating points per unit of BT strength


@dataclass(frozen=True)
class Pairs:
    """Comparisons as index arrays: ``a``/``b`` model indices, ``human``/``judge`` A's score."""

    a: np.ndarray
    b: np.ndarray
    judge: np.ndarray
    human: np.ndarray | None = None  # None: the judge-only comparisons

    @classmethod
    def of(cls, a, b, judge, human=None) -> Pairs:
        """Validated arrays (bad input raises a ValueError naming the problem)."""
        a, b = np.asarray(a, dtype=np.intp), np.asarray(b, dtype=np.intp)
        judge = _scores(judge, "judge")
        human = None if human is None else _scores(human, "human")
        n = len(a)
        if a.ndim != 1 or b.shape != a.shape or judge.shape != a.shape or (
                human is not None and human.shape != a.shape):
            raise ValueError("a, b, judge (and human) must be 1-D arrays of one length")
        if n and (a == b).any():
            raise ValueError(f"comparison #{int(np.flatnonzero(a == b)[0])} pits a model "
                             "against itself")
        return cls(a, b, judge, human)

    def __len__(self) -> int:
        return len(self.a)


def _scores(x, name) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if not np.isfinite(x).all() or (x < 0).any() or (x > 1).any():
        raise ValueError(f"{name} scores must lie in [0, 1] (1 = A won, 0.5 = tie)")
    return x


@dataclass(frozen=True)
class Ratings:
    """BT ratings (Elo scale) with their covariance, CIs and the human-only comparison."""

    ratings: np.ndarray
    cov: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    lam: float
    n_human: int
    n_judge_only: int
    human_only: Ratings | None = None

    @property
    def width(self) -> np.ndarray:
        return self.ci_high - self.ci_low

    @property
    def effective_human_votes(self) -> float:
        """Human-voted comparisons a human-only board would need for the same median CI
        width: ``n * (median human-only width / median width)^2`` (variance scales as 1/n)."""
        if self.human_only is None:
            return float(self.n_human)
        return self.n_human * _median_width_ratio(self.human_only.width, self.width) ** 2


def _median_width_ratio(reference, width) -> float:
    shown = width > 0  # an anchored model has zero width on both
    if not shown.any():
        return 1.0
    return float(np.median(reference[shown]) / np.median(width[shown]))


@dataclass(frozen=True)
class Mean:
    """A judge-powered mean (win rate, mean score) with its CI and the human-only one."""

    estimate: float
    ci_low: float
    ci_high: float
    se: float
    lam: float
    n_human: int
    n_judge_only: int
    human_only_se: float

    @property
    def effective_human_votes(self) -> float:
        return self.n_human * (self.human_only_se / self.se) ** 2 if self.se > 0 else math.inf


# ----------------------------------------------------------------------------- means


def ppi_mean(human, judge, judge_only, alpha: float = 0.05, lam: float | None = None) -> Mean:
    """PPI++ mean of the human values: win rate (scores 0 / 0.5 / 1), mean score, any mean.

    ``human`` and ``judge`` are paired (the same items), ``judge_only`` the judge's values on
    items no human rated. ``lam`` None picks the power-tuning parameter from the data.
    """
    y, f = np.asarray(human, dtype=float), np.asarray(judge, dtype=float)
    fu = np.asarray(judge_only, dtype=float)
    _check_alpha(alpha)
    if y.ndim != 1 or f.shape != y.shape or fu.ndim != 1:
        raise ValueError("human and judge must be 1-D and paired; judge_only 1-D")
    if len(y) < 2:
        raise ValueError("need at least 2 human-rated items for an interval")
    if not (np.isfinite(y).all() and np.isfinite(f).all() and np.isfinite(fu).all()):
        raise ValueError("values must be finite")
    n, big_n = len(y), len(fu)
    human_se = float(y.std() / math.sqrt(n))
    if big_n < 2:
        lam = 0.0
    elif lam is None:
        theta = fu.mean() + (y - f).mean()  # the lam = 1 estimate the gradients are taken at
        g, gh, ghu = y - theta, f - theta, fu - theta
        lam = _lambda(_cross(g, gh, n), np.var(np.concatenate([gh, ghu]), ddof=1), n, big_n)
    _check_lambda(lam)
    estimate = (lam * fu.mean() if big_n else 0.0) + (y - lam * f).mean()
    var = (lam * fu).var() / big_n if big_n else 0.0
    se = float(math.sqrt(var + (y - lam * f).var() / n))
    z = _z(alpha)
    return Mean(float(estimate), float(estimate - z * se), float(estimate + z * se), se,
                float(lam), n, big_n, human_se)


def _cross(g, gh, n):
    """PPI++'s symmetrised cross-covariance of human and judge gradients (1/n, centred)."""
    gc, ghc = g - g.mean(0), gh - gh.mean(0)
    return (gc.T @ ghc + ghc.T @ gc) / n if gc.ndim == 2 else 2 * (gc @ ghc) / n


def _lambda(cross, var_judge, n, big_n, inv_h=None) -> float:
    """``tr(A cross A) / (2 (1 + n/N) tr(A var A))`` clipped to [0, 1], ``A = H^-1``."""
    if inv_h is not None:
        cross, var_judge = inv_h @ cross @ inv_h, inv_h @ var_judge @ inv_h
    num, den = np.trace(np.atleast_2d(cross)), np.trace(np.atleast_2d(var_judge))
    if den <= 0:
        return 0.0
    return float(np.clip(num / (2 * (1 + n / big_n) * den), 0.0, 1.0))


def win_rates_vs_reference(labeled: Pairs, unlabeled: Pairs, n_models: int, reference: int,
                           alpha: float = 0.05) -> dict[int, Mean | None]:
    """``{model index: judge-powered win rate against reference}`` (ties half).

    Each model's comparisons with the reference are its own mean-estimation problem; None
    when fewer than 2 human-voted comparisons of the pair exist.
    """
    _check_pairs(labeled, unlabeled, n_models)
    out: dict[int, Mean | None] = {}
    for model in range(n_models):
        if model == reference:
            continue
        y, f = _side_scores(labeled, model, reference, with_human=True)
        _, fu = _side_scores(unlabeled, model, reference, with_human=False)
        out[model] = ppi_mean(y, f, fu, alpha) if len(y) >= 2 else None
    return out


def _side_scores(pairs: Pairs, model: int, reference: int, with_human: bool):
    """``model``'s scores in its comparisons with ``reference``, whichever side it was on."""
    as_a = (pairs.a == model) & (pairs.b == reference)
    as_b = (pairs.b == model) & (pairs.a == reference)
    judge = np.concatenate([pairs.judge[as_a], 1 - pairs.judge[as_b]])
    if not with_human:
        return None, judge
    return np.concatenate([pairs.human[as_a], 1 - pairs.human[as_b]]), judge


# ----------------------------------------------------------------------------- Bradley-Terry


def bradley_terry_ppi(labeled: Pairs, unlabeled: Pairs, n_models: int, *,
                      lam: float | None = None, anchor: int | None = None,
                      alpha: float = 0.05, ridge: float = RIDGE,
                      df_correction: bool = True) -> Ratings:
    """Judge-powered BT ratings of the human votes, with the human-only board beside them.

    ``labeled`` needs ``human`` (A's share of its votes) and ``judge``; ``unlabeled`` holds
    the judge-only comparisons. ``lam`` None tunes it (PPI++: at the ``lam = 1`` fit).
    """
    _check_pairs(labeled, unlabeled, n_models)
    _check_alpha(alpha)
    fit = dict(anchor=anchor, alpha=alpha, ridge=ridge, df_correction=df_correction)
    human = _fit(labeled, None, n_models, 0.0, None, **fit)
    if len(unlabeled) == 0:
        return human
    if lam is None:
        beta = _beta(labeled, unlabeled, n_models, 1.0, ridge)
        lam = _tuned_lambda(labeled, unlabeled, n_models, beta)
    _check_lambda(lam)
    return _fit(labeled, unlabeled, n_models, lam, human, **fit)


def bradley_terry_human(labeled: Pairs, n_models: int, **options) -> Ratings:
    """Human-only BT ratings with sandwich CIs (the ``lam = 0`` case, comparable widths);
    ``options`` as for ``bradley_terry_ppi``."""
    return bradley_terry_ppi(labeled, Pairs.of([], [], []), n_models, **options)


def _check_pairs(labeled: Pairs, unlabeled: Pairs, n_models: int) -> None:
    if labeled.human is None:
        raise ValueError("the labeled comparisons need the human scores")
    if len(labeled) < 2:
        raise ValueError("need at least 2 human-voted comparisons for an interval")
    for pairs in (labeled, unlabeled):
        if len(pairs) and (min(pairs.a.min(), pairs.b.min()) < 0
                           or max(pairs.a.max(), pairs.b.max()) >= n_models):
            raise ValueError(f"model indices must lie in [0, {n_models})")


def _check_alpha(alpha):
    if not 0 < alpha < 1:
        raise ValueError("alpha must lie in (0, 1)")


def _check_lambda(lam):
    if not 0 <= lam <= 1:
        raise ValueError("lam must lie in [0, 1] (0: human only, 1: plain PPI)")


def _z(alpha):
    from scipy.stats import norm  # here, not at import: web workers boot without scipy

    return float(norm.ppf(1 - alpha / 2))


def _wins(pairs: Pairs, score: np.ndarray, m: int, weight: float) -> np.ndarray:
    """(M, M) win matrix, a score of s giving s to A and 1 - s to B, times ``weight``."""
    return (np.bincount(pairs.a * m + pairs.b, weight * score, m * m)
            + np.bincount(pairs.b * m + pairs.a, weight * (1 - score), m * m)).reshape(m, m)


def _beta(labeled, unlabeled, m, lam, ridge) -> np.ndarray:
    """The PPI++ objective (times n, so the ridge weighs as on a human-only fit) as one
    weighted win matrix: judge-only at lam n/N, human votes at 1, their judge verdicts at
    -lam. Pair totals are >= 0 (lam <= 1), so it stays convex."""
    w = _wins(labeled, labeled.human, m, 1.0)
    if not lam:
        return _fit_bt(w[None], ridge)[0]
    w -= _wins(labeled, labeled.judge, m, lam)
    w += _wins(unlabeled, unlabeled.judge, m, lam * len(labeled) / len(unlabeled))
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        beta = _fit_bt(w[None], ridge)[0]
    if np.isfinite(beta).all() and not caught:
        return beta
    # Rectified win shares outside [0, 1] (a lopsided pair with few comparisons that the
    # judge called the other way) can leave the objective without a minimum: clip them.
    warnings.warn("the judge-powered fit had no minimum; pairs whose rectified win share left "
                  "[0, 1] were clipped to it", RatingsWarning, stacklevel=3)
    return _fit_bt(np.clip(w, 0.0, w + w.T)[None], ridge)[0]


def _residual(pairs: Pairs, beta: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Per-comparison loss gradient is ``(p_ab - score) (e_a - e_b)``; this is its scalar."""
    return 1.0 / (1.0 + np.exp(beta[pairs.b] - beta[pairs.a])) - score


def _outer(pairs: Pairs, u: np.ndarray, v: np.ndarray, m: int) -> np.ndarray:
    """``sum_i u_i v_i x_i x_i^T`` with ``x_i = e_a - e_b``, scattered into (M, M)."""
    c = np.bincount(pairs.a * m + pairs.b, u * v, m * m).reshape(m, m)
    c = c + c.T
    return np.diag(c.sum(1)) - c


def _mean_grad(pairs: Pairs, r: np.ndarray, m: int) -> np.ndarray:
    return (np.bincount(pairs.a, r, m) - np.bincount(pairs.b, r, m)) / max(len(pairs), 1)


def _cov(pairs: Pairs, r: np.ndarray, m: int) -> np.ndarray:
    """Sample covariance (ddof 1) of the gradients ``r_i x_i``."""
    n, mu = len(pairs), _mean_grad(pairs, r, m)
    return (_outer(pairs, r, r, m) - n * np.outer(mu, mu)) / (n - 1)


def _hessian_inv(pairs_list, beta, m) -> np.ndarray:
    """Pseudo-inverse of the mean BT Hessian over the given comparisons; gradients and the
    anchored ratings are orthogonal to the common shift it leaves out."""
    h = np.zeros((m, m))
    total = 0
    for pairs in pairs_list:
        p = _residual(pairs, beta, np.zeros(len(pairs)))
        h += _outer(pairs, p, 1 - p, m)
        total += len(pairs)
    return np.linalg.pinv(h / total, hermitian=True)


def _tuned_lambda(labeled, unlabeled, m, beta) -> float:
    n, big_n = len(labeled), len(unlabeled)
    r, rh = _residual(labeled, beta, labeled.human), _residual(labeled, beta, labeled.judge)
    rhu = _residual(unlabeled, beta, unlabeled.judge)
    mu, muh = _mean_grad(labeled, r, m), _mean_grad(labeled, rh, m)
    cross = (2 * _outer(labeled, r, rh, m) - n * (np.outer(mu, muh) + np.outer(muh, mu))) / n
    pooled = (n * muh + big_n * _mean_grad(unlabeled, rhu, m)) / (n + big_n)
    var_judge = (_outer(labeled, rh, rh, m) + _outer(unlabeled, rhu, rhu, m)
                 - (n + big_n) * np.outer(pooled, pooled)) / (n + big_n - 1)
    inv_h = _hessian_inv([labeled, unlabeled], beta, m)
    return _lambda(cross, var_judge, n, big_n, inv_h)


def _fit(labeled, unlabeled, m, lam, human, *, anchor, alpha, ridge, df_correction) -> Ratings:
    n = len(labeled)
    big_n = 0 if unlabeled is None else len(unlabeled)
    beta = _beta(labeled, unlabeled, m, lam, ridge)
    r = _residual(labeled, beta, labeled.human)
    if lam:
        r = r - lam * _residual(labeled, beta, labeled.judge)
    meat = _cov(labeled, r, m)
    if lam:
        ru = lam * _residual(unlabeled, beta, unlabeled.judge)
        meat += n / big_n * _cov(unlabeled, ru, m)
    inv_h = _hessian_inv([labeled] + ([unlabeled] if lam else []), beta, m)
    cov_beta = inv_h @ meat @ inv_h / n
    if df_correction:
        cov_beta *= n / max(n - (m - 1), 1)
    t = _anchor_map(labeled, unlabeled, m, anchor)
    ratings = ELO * (t @ beta) + INIT
    cov = ELO**2 * t @ cov_beta @ t.T
    half = _z(alpha) * np.sqrt(np.clip(np.diag(cov), 0, None))
    return Ratings(ratings, cov, ratings - half, ratings + half, float(lam), n, big_n, human)


def _anchor_map(labeled, unlabeled, m, anchor) -> np.ndarray:
    """``T`` with anchored strengths ``T beta``: ``anchor`` at 0, or the match-weighted mean
    (matches over every comparison used) at 0, as ``ratings._to_rating`` anchors."""
    if anchor is not None:
        if not 0 <= anchor < m:
            raise ValueError(f"anchor must be a model index in [0, {m})")
        ref = np.eye(m)[anchor]
    else:
        used = [labeled] + ([unlabeled] if unlabeled is not None else [])
        weights = sum(np.bincount(p.a, minlength=m) + np.bincount(p.b, minlength=m)
                      for p in used).astype(float)
        ref = weights / weights.sum() if weights.sum() else np.full(m, 1.0 / m)
    return np.eye(m) - np.outer(np.ones(m), ref)


# ----------------------------------------------------------------------------- rank-sets


def rank_sets(ratings, cov, alpha: float = 0.05, draws: int = 4000,
              seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Simultaneous rank-sets ``[best, worst]`` (1 = top) from the ratings' covariance.

    Model i is surely above j when their difference's interval excludes 0, with one critical
    value for all pairs at once (the 1 - alpha quantile of the largest standardised
    difference, drawn from the fitted normal): every model's true rank then lies in its set
    with probability >= 1 - alpha jointly, the guarantee of prediction-powered ranking.
    """
    r, c = np.asarray(ratings, dtype=float), np.asarray(cov, dtype=float)
    m = len(r)
    var = np.diag(c)
    se = np.sqrt(np.clip(var[:, None] + var[None, :] - 2 * c, 0, None))
    crit = _max_stat_quantile(c, se, alpha, draws, seed)
    diff = r[:, None] - r[None, :]
    above = diff - crit * se > 0  # above[i, j]: i surely above j
    np.fill_diagonal(above, False)
    best = 1 + above.sum(0)  # models surely above this one
    worst = m - above.sum(1)  # minus models surely below
    return best, worst


def _max_stat_quantile(cov, se, alpha, draws, seed) -> float:
    m = len(cov)
    iu = np.triu_indices(m, 1)
    keep = se[iu] > 0
    if not keep.any():
        return _z(alpha)
    values, vectors = np.linalg.eigh(cov)
    root = vectors * np.sqrt(np.clip(values, 0, None))
    x = np.random.default_rng(seed).standard_normal((draws, m)) @ root.T
    d = np.abs(x[:, iu[0][keep]] - x[:, iu[1][keep]]) / se[iu][keep]
    return float(np.quantile(d.max(1), 1 - alpha))
