"""Adaptive testing on a fitted bank: which item to ask next, when to stop, and the full-suite score
it implies, with an interval. Pure: the caller asks the model and tells the outcome.

- **Ability** is the posterior on a grid (prior N(0, 1), the fit's prior): its mean (EAP) and sd.
- **Selection**: maximum Fisher information ``a² P (1 − P)`` at the current ability, with exposure
  control by randomesque choice — one of the ``top_k`` most informative items, uniformly — so that
  several new models do not all see the same few items.
- **Estimate**: the full-suite score the model would get, on 0–1. At each grid ability θ it is

      S(θ) = (Σ answered y + Σ unanswered P_j(θ)) / N

  with a spread ``V(θ) = Σ unanswered P (1 − P) / N² + (U/N)² (D(θ)² + C(θ))``: the luck of the ``U``
  items not asked (each a draw around ``P``) and the bank's check against the history
  (:class:`CurveCheck`: the bank's predicted full-suite score disagrees with the history's actual
  scores by ``D(θ)`` at that ability, known to within variance ``C(θ)``). The score is the posterior
  mean of ``S``; its interval the 2.5% and 97.5% quantiles of the posterior mixture of
  ``N(S(θ), V(θ))`` — not mean ± 1.96 sd, because near 0 or 100 ``S`` bends and the mixture is skewed.
- **Stop** when the score's sd is at most ``target_se`` or ``budget`` items were asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit, logit
from scipy.stats import norm

from routing.bank.irt import probability

GRID = np.linspace(-6.0, 6.0, 241)
QUANTILE_GRID = np.linspace(0.0, 1.0, 4001)  # score values the interval's quantiles are read on
LEVEL = 0.95


@dataclass(frozen=True)
class CurveCheck:
    """How well the bank's predicted full-suite score matches the history's actual ones:
    ``logit F_i = c₀ + c₁ logit T(θ_i)`` over the bank's models (``T``: the bank's mean curve, ``F``: the
    model's actual score), least squares, with the coefficients' covariance. A 2PL fitted on a few
    dozen models bends its mean curve too far at the ends of the ability range (1–2 points at the
    extremes, measured on a simulated bank); the line measures that bend and its uncertainty."""

    coef: np.ndarray
    cov: np.ndarray

    @classmethod
    def fit(cls, predicted: np.ndarray, actual: np.ndarray) -> CurveCheck:
        x = np.column_stack([np.ones(len(predicted)), logit(np.clip(predicted, 1e-4, 1 - 1e-4))])
        t = logit(np.clip(actual, 1e-4, 1 - 1e-4))
        coef, *_ = np.linalg.lstsq(x, t, rcond=None)
        resid = t - x @ coef
        s2 = float(resid @ resid) / max(len(t) - 2, 1)
        return cls(coef, s2 * np.linalg.pinv(x.T @ x))

    def discrepancy(self, predicted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """At each predicted score ``T``: the line's ``F − T`` and the variance of the line's ``F``."""
        x = np.column_stack([np.ones(len(predicted)), logit(np.clip(predicted, 1e-4, 1 - 1e-4))])
        f = expit(x @ self.coef)
        slope = f * (1.0 - f)
        return f - predicted, slope * slope * np.einsum("gi,ij,gj->g", x, self.cov, x)


@dataclass(frozen=True)
class Estimate:
    """The estimated full-suite score (0–1) with its sd and 95% interval, from ``items_used`` items."""

    score: float
    se: float
    low: float
    high: float
    theta: float
    theta_se: float
    items_used: int
    items_total: int

    def to_json(self, scale: float = 100.0) -> dict[str, float | int | bool]:
        return {
            "estimated": True,
            "score": round(self.score * scale, 3),
            "se": round(self.se * scale, 3),
            "low": round(self.low * scale, 3),
            "high": round(self.high * scale, 3),
            "theta": round(self.theta, 4),
            "theta_se": round(self.theta_se, 4),
            "items_used": self.items_used,
            "items_total": self.items_total,
        }


@dataclass
class AdaptiveTest:
    """One model's adaptive test on one family's bank (``a``, ``b`` per item).

    ``check``: the bank's :class:`CurveCheck` (none: no bank error added). ``budget``:
    items at most; ``target_se``: stop when the score's sd (0–1) is at most this; ``min_items``: ask at
    least these before stopping on the sd; ``top_k``: randomesque width.
    """

    a: np.ndarray
    b: np.ndarray
    budget: int
    target_se: float = 0.01
    min_items: int = 10
    top_k: int = 5
    seed: int = 0
    check: CurveCheck | None = None
    answered: dict[int, float] = field(default_factory=dict)
    asked: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.a = np.asarray(self.a, dtype=float)
        self.b = np.asarray(self.b, dtype=float)
        self._rng = np.random.default_rng(self.seed)
        self._p_grid = np.clip(probability(self.a, self.b, GRID), 1e-12, 1 - 1e-12)  # grid × items, computed once
        self._log_post = -0.5 * GRID**2
        self._check = (
            self.check.discrepancy(self._p_grid.mean(axis=1)) if self.check is not None else (0.0 * GRID, 0.0 * GRID)
        )

    @property
    def n_items(self) -> int:
        return len(self.a)

    def posterior(self) -> np.ndarray:
        w = np.exp(self._log_post - self._log_post.max())
        return w / w.sum()

    def ability(self) -> tuple[float, float]:
        w = self.posterior()
        mean = float(w @ GRID)
        return mean, float(np.sqrt(max(w @ (GRID - mean) ** 2, 0.0)))

    def next_items(self, n: int = 1) -> list[int]:
        """Up to ``n`` items not yet asked, each one of the ``top_k`` most informative left at the
        current ability (none once the test is done)."""
        if self.done():
            return []
        n = min(n, self.budget - len(self.asked), self.n_items - len(self.asked))
        theta, _ = self.ability()
        p = probability(self.a, self.b, theta)
        info = self.a**2 * p * (1.0 - p)
        if self.asked:
            info[list(self.asked)] = -np.inf
        chosen: list[int] = []
        for _ in range(max(n, 0)):
            k = min(self.top_k, self.n_items - len(self.asked) - len(chosen))
            top = np.argpartition(-info, k - 1)[:k]
            pick = int(self._rng.choice(top))
            chosen.append(pick)
            info[pick] = -np.inf
        self.asked.update(chosen)
        return chosen

    def tell(self, item: int, y: float) -> None:
        """The model's score on ``item`` (0/1, or a judged score in [0, 1])."""
        y = float(min(max(y, 0.0), 1.0))
        self.asked.add(item)
        self.answered[item] = y
        p = self._p_grid[:, item]
        self._log_post = self._log_post + y * np.log(p) + (1.0 - y) * np.log(1.0 - p)

    def _score_grid(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Posterior weights, ``S(θ)`` and ``V(θ)`` on the grid (see the module docstring)."""
        w = self.posterior()
        unanswered = np.ones(self.n_items, dtype=bool)
        unanswered[list(self.answered)] = False
        p = self._p_grid[:, unanswered]
        n, left = self.n_items, int(unanswered.sum())
        s = (sum(self.answered.values()) + p.sum(axis=1)) / n
        gap, gap_var = self._check
        v = (p * (1.0 - p)).sum(axis=1) / n**2 + (left / n) ** 2 * (gap * gap + gap_var)
        return w, s, v

    def _moments(self) -> tuple[float, float]:
        w, s, v = self._score_grid()
        mean = float(w @ s)
        return mean, float(np.sqrt(max(float(w @ (s - mean) ** 2 + w @ v), 0.0)))

    def estimate(self) -> Estimate:
        """The full-suite score, its sd and its 95% interval (quantiles of the posterior mixture)."""
        w, s, v = self._score_grid()
        mean = float(w @ s)
        se = float(np.sqrt(max(float(w @ (s - mean) ** 2 + w @ v), 0.0)))
        keep = w > 1e-9
        sd = np.sqrt(np.maximum(v[keep], 1e-12))[:, None]
        cdf = w[keep] @ norm.cdf((QUANTILE_GRID[None, :] - s[keep, None]) / sd) / w[keep].sum()
        tail = (1.0 - LEVEL) / 2
        low, high = (float(np.interp(q, cdf, QUANTILE_GRID)) for q in (tail, 1.0 - tail))
        theta, theta_se = self.ability()
        return Estimate(mean, se, low, high, theta, theta_se, len(self.answered), self.n_items)

    def done(self) -> bool:
        if len(self.asked) >= min(self.budget, self.n_items):
            return True
        return len(self.answered) >= self.min_items and self._moments()[1] <= self.target_se
