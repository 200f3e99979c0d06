"""Adaptive testing on a fitted bank: which item to ask next, when to stop, and the full-suite score
it implies, with an interval. Pure: the caller asks the model and tells the outcome.

- **Ability** is the posterior on a grid (prior N(0, 1), the fit's prior): its mean (EAP) and sd.
- **Selection**: maximum Fisher information ``a² P (1 − P)`` at the current ability, with exposure
  control by randomesque choice — one of the ``top_k`` most informative items, uniformly — so that
  several new models do not all see the same few items.
- **Estimate**: the full-suite score the model would get, on 0–1, as the posterior mean of

      S(θ) = (Σ answered y + Σ unanswered P_j(θ)) / N

  and its variance ``Var_post S(θ) + E_post Σ unanswered P(1 − P) / N²``: the ability's uncertainty
  plus the luck of the items not asked (each a Bernoulli draw around ``P``). The interval is
  ``mean ± z·sd``, clipped to [0, 1].
- **Stop** when the score's sd is at most ``target_se`` or ``budget`` items were asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from routing.bank.irt import probability

GRID = np.linspace(-6.0, 6.0, 241)
Z95 = 1.959964


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

    ``budget``: items at most; ``target_se``: stop when the score's sd (0–1) is at most this;
    ``min_items``: ask at least these before stopping on the sd; ``top_k``: randomesque width.
    """

    a: np.ndarray
    b: np.ndarray
    budget: int
    target_se: float = 0.01
    min_items: int = 10
    top_k: int = 5
    seed: int = 0
    answered: dict[int, float] = field(default_factory=dict)
    asked: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.a = np.asarray(self.a, dtype=float)
        self.b = np.asarray(self.b, dtype=float)
        self._rng = np.random.default_rng(self.seed)
        self._p_grid = probability(self.a, self.b, GRID)  # grid × items, computed once
        self._log_post = -0.5 * GRID**2

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
        p = np.clip(self._p_grid[:, item], 1e-12, 1 - 1e-12)
        self._log_post = self._log_post + y * np.log(p) + (1.0 - y) * np.log(1.0 - p)

    def _score(self, p_grid: np.ndarray, log_post: np.ndarray) -> tuple[float, float]:
        """(mean, variance) of the full-suite score under one bank's item curves ``p_grid``."""
        w = np.exp(log_post - log_post.max())
        w /= w.sum()
        unanswered = np.ones(self.n_items, dtype=bool)
        unanswered[list(self.answered)] = False
        p = p_grid[:, unanswered]
        s_grid = (sum(self.answered.values()) + p.sum(axis=1)) / self.n_items  # S(θ) on the grid
        mean = float(w @ s_grid)
        luck = float(w @ (p * (1.0 - p)).sum(axis=1)) / self.n_items**2
        return mean, max(float(w @ (s_grid - mean) ** 2), 0.0) + luck

    def _log_post_under(self, p_grid: np.ndarray) -> np.ndarray:
        log_post = -0.5 * GRID**2
        for item, y in self.answered.items():
            p = np.clip(p_grid[:, item], 1e-12, 1 - 1e-12)
            log_post = log_post + y * np.log(p) + (1.0 - y) * np.log(1.0 - p)
        return log_post

    def estimate(self, alternates: Sequence[tuple[np.ndarray, np.ndarray]] = ()) -> Estimate:
        """The full-suite score. ``alternates``: other fits of the same bank (``(a, b)`` each, e.g.
        :func:`routing.bank.irt.bootstrap_fits`); the spread of the score across them is added to the
        variance, so the interval also covers the bank's own uncertainty."""
        mean, var = self._score(self._p_grid, self._log_post)
        if alternates:
            means = []
            for a, b in alternates:
                p_grid = probability(np.asarray(a), np.asarray(b), GRID)
                means.append(self._score(p_grid, self._log_post_under(p_grid))[0])
            var += float(np.var(means, ddof=1)) if len(means) > 1 else 0.0
        se = float(np.sqrt(var))
        theta, theta_se = self.ability()
        return Estimate(
            mean,
            se,
            max(0.0, mean - Z95 * se),
            min(1.0, mean + Z95 * se),
            theta,
            theta_se,
            len(self.answered),
            self.n_items,
        )

    def done(self) -> bool:
        if len(self.asked) >= min(self.budget, self.n_items):
            return True
        return len(self.answered) >= self.min_items and self.estimate().se <= self.target_se
