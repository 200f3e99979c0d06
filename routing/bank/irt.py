"""The two-parameter logistic (2PL) item response model, fitted by MAP: pure functions over arrays.

A model of ability ``θ_i`` answers item ``j`` (discrimination ``a_j > 0``, difficulty ``b_j``)
correctly with probability ``P_ij = σ(a_j (θ_i − b_j))``. The fit maximises the log posterior

    Σ_observed [y log P + (1 − y) log (1 − P)]  −  Σ θ²/2  −  Σ (log a − μ_a)²/(2 s_a²)  −  Σ b²/(2 s_b²)

jointly over every θ, log a and b with L-BFGS (scipy), the gradient written out and vectorised over
the model × item matrix; missing cells (``NaN``) are left out. ``y`` may be a pass/fail (0/1) or a
judged score in [0, 1] (the continuous variant: the same likelihood read as a soft outcome, whose
expected value is ``P``). The priors — normal on ability, log-normal on discrimination, normal on
difficulty — keep an item that every model passes or fails finite, and keep ``a`` positive, so a
bad item cannot steer item selection; :func:`negative_discrimination` refits each item's slope free
of sign to list the items whose score falls as ability rises (likely a wrong gold).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

PRIOR_LOG_A_MEAN, PRIOR_LOG_A_SD, PRIOR_B_SD = 0.0, 0.5, 2.0


@dataclass(frozen=True)
class ItemFit:
    """A fitted bank: per item ``a`` (discrimination) and ``b`` (difficulty), per model ``theta``."""

    a: np.ndarray
    b: np.ndarray
    theta: np.ndarray
    converged: bool
    iterations: int


def probability(a: np.ndarray, b: np.ndarray, theta: np.ndarray | float) -> np.ndarray:
    """``P`` of passing each item at each ability: shape ``theta.shape + a.shape``."""
    t = np.asarray(theta, dtype=float)[..., None]
    return expit(a * (t - b))


def information(a: np.ndarray, b: np.ndarray, theta: float) -> np.ndarray:
    """Fisher information of each item at ``theta``: ``a² P (1 − P)``."""
    p = probability(a, b, theta)
    return a * a * p * (1.0 - p)


def fit_2pl(y: np.ndarray, *, max_iter: int = 500, start: ItemFit | None = None) -> ItemFit:
    """MAP fit of the 2PL model to ``y`` (models × items, values in [0, 1], ``NaN`` = not answered);
    ``start``: a fit of the same items to begin from (its abilities are used when the models match)."""
    y = np.asarray(y, dtype=float)
    if y.ndim != 2:
        raise ValueError(f"y: a models × items matrix expected, got shape {y.shape}")
    seen = ~np.isnan(y)
    obs = np.where(seen, y, 0.0)
    mask = seen.astype(float)
    n_models, n_items = y.shape

    def unpack(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return x[:n_models], x[n_models : n_models + n_items], x[n_models + n_items :]

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        theta, log_a, b = unpack(x)
        a = np.exp(log_a)
        diff = theta[:, None] - b[None, :]
        z = a[None, :] * diff
        # -log-likelihood of a soft outcome: softplus(z) − y z, stable for large |z|
        nll = float(np.sum(mask * (np.logaddexp(0.0, z) - obs * z)))
        r = mask * (expit(z) - obs)  # d nll / d z
        d_log_a = (log_a - PRIOR_LOG_A_MEAN) / PRIOR_LOG_A_SD**2
        prior = 0.5 * float(theta @ theta) + 0.5 * float(np.sum((log_a - PRIOR_LOG_A_MEAN) ** 2)) / PRIOR_LOG_A_SD**2
        prior += 0.5 * float(b @ b) / PRIOR_B_SD**2
        g_theta = r @ a + theta
        g_log_a = a * np.sum(r * diff, axis=0) + d_log_a
        g_b = -a * r.sum(axis=0) + b / PRIOR_B_SD**2
        return nll + prior, np.concatenate([g_theta, g_log_a, g_b])

    mean = np.where(seen.any(axis=0), np.nanmean(np.where(seen, y, np.nan), axis=0, keepdims=False), 0.5)
    start_b = -np.log(np.clip(mean, 0.02, 0.98) / (1 - np.clip(mean, 0.02, 0.98)))
    row = np.nanmean(np.where(seen, y, np.nan), axis=1)
    start_theta = np.log(np.clip(row, 0.02, 0.98) / (1 - np.clip(row, 0.02, 0.98)))
    start_theta = np.nan_to_num(start_theta - start_theta.mean())
    x0 = np.concatenate([start_theta, np.zeros(n_items), np.clip(start_b, -4, 4)])
    if start is not None:
        theta0 = start.theta if len(start.theta) == n_models else start_theta
        x0 = np.concatenate([theta0, np.log(start.a), start.b])
    result = minimize(objective, x0, jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    theta, log_a, b = unpack(result.x)
    return ItemFit(np.exp(log_a), b, theta, bool(result.success), int(result.nit))


def negative_discrimination(y: np.ndarray, theta: np.ndarray, *, prior_sd: float = 2.0, steps: int = 25) -> np.ndarray:
    """Each item's slope on ability fitted free of sign: ``logit P = c θ + d`` per item by Newton's
    method (vectorised over items; a weak normal prior of sd ``prior_sd`` on ``c`` and ``d``). A
    negative ``c`` says stronger models score lower on the item — usually a wrong gold."""
    y = np.asarray(y, dtype=float)
    seen = ~np.isnan(y)
    obs, mask = np.where(seen, y, 0.0), seen.astype(float)
    t = np.asarray(theta, dtype=float)[:, None]
    c = np.zeros(y.shape[1])
    d = np.zeros(y.shape[1])
    ridge = 1.0 / prior_sd**2
    for _ in range(steps):
        p = expit(c[None, :] * t + d[None, :])
        r = mask * (p - obs)
        w = mask * p * (1.0 - p)
        g_c, g_d = (r * t).sum(axis=0) + ridge * c, r.sum(axis=0) + ridge * d
        h_cc, h_cd, h_dd = (w * t * t).sum(axis=0) + ridge, (w * t).sum(axis=0), w.sum(axis=0) + ridge
        det = h_cc * h_dd - h_cd * h_cd
        c = c - (h_dd * g_c - h_cd * g_d) / det
        d = d - (h_cc * g_d - h_cd * g_c) / det
    return c
