"""Style-controlled Bradley-Terry: ratings with response length and markdown held equal.

Pure numpy/scipy (no Django import), like ``judging.ratings``, whose scale and anchoring it
follows. Chatbot Arena's style control: fit the BT model with extra covariates, one per style
feature, so a judge (human or automatic) that prefers the longer or more formatted answer has
that preference measured by the covariate's coefficient instead of credited to the model that
writes long answers.

Model
    ``P(A beats B) = s(beta_a - beta_b + sum_k gamma_k z_k)`` with, per feature ``k``,
    ``z_k = (f_a - f_b) / (f_a + f_b)`` (0 when both are 0): the normalised difference, in
    [-1, 1], so one coefficient reads the same for short and long answers. Features: length
    in words, markdown headers, list items, bold spans. Outcomes are A's score (1, 0, 0.5 for a
    tie, or a share of votes), fitted as a quasi-likelihood; intervals are sandwich (robust)
    intervals, so fractional outcomes and ties do not make them too narrow.
    ``gamma_k`` is reported on the Elo scale: the rating points a response gains by having all
    of feature ``k`` in the pair (``z_k = 1``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from judging.ppi import ELO, Pairs, _anchor_map
from judging.ratings import INIT, RIDGE

FEATURES = ("length", "headers", "list_items", "bold")
_HEADER = re.compile(r"^\s{0,3}#{1,6}\s", re.M)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s", re.M)
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")


def markdown_features(text: str) -> tuple[int, int, int, int]:
    """``(words, headers, list items, bold spans)`` of one response."""
    text = text or ""
    return (len(text.split()), len(_HEADER.findall(text)), len(_LIST_ITEM.findall(text)),
            len(_BOLD.findall(text)))


@dataclass(frozen=True)
class StyleControlled:
    ratings: np.ndarray  # style-controlled, Elo scale
    ci_low: np.ndarray
    ci_high: np.ndarray
    raw: np.ndarray  # the same fit without covariates, for the side-by-side board
    coef: np.ndarray  # one per feature, Elo points at z = 1
    coef_low: np.ndarray
    coef_high: np.ndarray
    features: tuple[str, ...]


def normalised_differences(features_a, features_b) -> np.ndarray:
    """``(f_a - f_b) / (f_a + f_b)`` per comparison and feature, 0 where both are 0."""
    fa, fb = np.asarray(features_a, dtype=float), np.asarray(features_b, dtype=float)
    if fa.shape != fb.shape or fa.ndim != 2:
        raise ValueError("features_a and features_b must be (comparisons, features) arrays")
    if (fa < 0).any() or (fb < 0).any() or not (np.isfinite(fa).all() and np.isfinite(fb).all()):
        raise ValueError("style features must be finite counts >= 0")
    total = fa + fb
    return np.divide(fa - fb, total, out=np.zeros_like(total), where=total > 0)


def style_controlled_bradley_terry(a, b, score, features_a, features_b, n_models: int, *,
                                   names=FEATURES, anchor: int | None = None,
                                   alpha: float = 0.05, ridge: float = RIDGE) -> StyleControlled:
    """Style-controlled ratings and the features' coefficients, with sandwich CIs.

    ``a``/``b`` model indices, ``score`` A's score in [0, 1], ``features_a``/``features_b``
    (comparisons, features) counts such as ``markdown_features`` gives.
    """
    a, b = np.asarray(a, dtype=np.intp), np.asarray(b, dtype=np.intp)
    y = np.asarray(score, dtype=float)
    z = normalised_differences(features_a, features_b)
    if not (a.shape == b.shape == y.shape == z.shape[:1]) or a.ndim != 1:
        raise ValueError("a, b, score and the feature rows must describe the same comparisons")
    if len(y) < 2:
        raise ValueError("need at least 2 comparisons")
    if ((y < 0) | (y > 1) | ~np.isfinite(y)).any():
        raise ValueError("scores must lie in [0, 1] (1 = A won, 0.5 = tie)")
    if (a == b).any() or min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n_models:
        raise ValueError(f"model indices must differ and lie in [0, {n_models})")
    if len(names) != z.shape[1]:
        raise ValueError("one name per feature column")
    if not 0 < alpha < 1:
        raise ValueError("alpha must lie in (0, 1)")
    x = np.zeros((len(y), n_models))
    rows = np.arange(len(y))
    x[rows, a], x[rows, b] = 1.0, -1.0
    anchor_map = _anchor_map(Pairs(a, b, np.zeros(len(a))), None, n_models, anchor)
    raw_theta, _ = _fit(x, y, ridge)
    theta, cov = _fit(np.hstack([x, z]), y, ridge)
    from scipy.stats import norm  # here, not at import: web workers boot without scipy

    half_z = norm.ppf(1 - alpha / 2)
    t = np.zeros((n_models + z.shape[1],) * 2)
    t[:n_models, :n_models] = anchor_map
    t[n_models:, n_models:] = np.eye(z.shape[1])
    est, cov = ELO * (t @ theta), ELO**2 * t @ cov @ t.T
    half = half_z * np.sqrt(np.clip(np.diag(cov), 0, None))
    lo, hi = est - half, est + half
    m = n_models
    return StyleControlled(est[:m] + INIT, lo[:m] + INIT, hi[:m] + INIT,
                           ELO * (anchor_map @ raw_theta) + INIT, est[m:], lo[m:], hi[m:],
                           tuple(names))


def _fit(x, y, ridge, max_iter=100):
    """Ridge-penalised logistic quasi-likelihood by Newton; returns (theta, sandwich cov).

    The tiny ridge keeps the common shift of the strengths (a flat direction) and an
    undefeated model finite; the covariance uses the unpenalised Hessian's pseudo-inverse."""
    def loss(t):
        eta = x @ t
        return np.logaddexp(0, eta).sum() - y @ eta + 0.5 * ridge * t @ t

    theta = np.zeros(x.shape[1])
    for _ in range(max_iter):
        p = 1 / (1 + np.exp(-(x @ theta)))
        grad = x.T @ (p - y) + ridge * theta
        hess = (x * (p * (1 - p))[:, None]).T @ x + ridge * np.eye(len(theta))
        step = np.linalg.solve(hess, grad)
        if abs(grad @ step) < 1e-12 * len(y):
            break
        f, t = loss(theta), 1.0
        while loss(theta - t * step) > f and t > 1e-8:  # halve until the loss goes down
            t /= 2
        theta = theta - t * step
    p = 1 / (1 + np.exp(-(x @ theta)))
    bread = np.linalg.pinv((x * (p * (1 - p))[:, None]).T @ x, hermitian=True)
    meat = (x * ((p - y) ** 2)[:, None]).T @ x
    return theta, bread @ meat @ bread


def feature_share(fit: StyleControlled, a, b, features_a, features_b, feature: int = 0) -> float:
    """How much of a source's preference is one feature: ``mean |gamma_k z_k|`` over
    ``mean |r_a - r_b| + mean |gamma_k z_k|`` on its comparisons (0: none, 1: all of it).

    Both terms are the fitted pull on the verdicts' log-odds (Elo points here; the scale
    cancels), so the share reads the same for any number of models or comparisons."""
    a, b = np.asarray(a, dtype=np.intp), np.asarray(b, dtype=np.intp)
    z = normalised_differences(features_a, features_b)[:, feature]
    style = np.abs(fit.coef[feature] * z).mean()
    models = np.abs(fit.ratings[a] - fit.ratings[b]).mean()
    total = style + models
    return float(style / total) if total > 0 else 0.0
