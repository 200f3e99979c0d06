"""The smallest drop a night's paired test could have seen, and the gate's word for each comparison.

A test that finds nothing says "no change" only if it could have found the drop that matters. The
minimum detectable drop (MDD) is the smallest true drop δ (NEW − BASE = −δ, score points in [0, 1])
the comparison's own test finds as a significant regression with probability ``POWER`` (0.8), at the
night's n paired items and at ``level`` — the first Holm step, α/m over the m comparisons tested:
the level a lone regression among m comparisons must pass.

- Pass/fail scores, tested with the mid-p McNemar test (:func:`routing.stats.intervals.mcnemar_midp`):
  the power is computed exactly, not by a normal approximation. With ψ the share of discordant items,
  under a drop δ the n items split multinomially into better (ψ − δ)/2, worse (ψ + δ)/2 and same
  1 − ψ; power = Σ_D Binom(D; n, ψ) · P(worse ≥ k_D | D, q), q = (ψ + δ)/(2ψ), where k_D is the
  fewest "worse" among D discordant items whose two-sided mid-p is below ``level`` (Connor 1987 gives
  the normal-approximation version). ψ is the night's observed discordant share, floored at δ (a drop
  of δ moves at least δ·n items).
- Continuous scores, tested with the paired t-test: power = P(T < −t₁₋ₗₑᵥₑₗ/₂,ₙ₋₁) with T noncentral t,
  n − 1 degrees of freedom, noncentrality −δ√n/s_d (s_d the observed SD of the differences; scipy's
  ``nct``). Differences without spread are tested by the sign test, so they get the pass/fail MDD.

The MDD is the smallest δ in (0, 1] with power ≥ 0.8 (bisection to 1e-4); NaN when even δ = 1 is not
found (too few items for the level). The simulation behind the 0.8 is ``python -m bench.gate``.

Status (:func:`gate_status`): ``regressed`` (a significant drop), ``improved`` (a significant gain),
``no change`` (nothing found, and MDD ≤ ``min_drop``: a drop that matters would have been seen), else
``inconclusive`` (nothing found, but the night could not have seen a drop of ``min_drop``).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

POWER = 0.8
DEFAULT_MIN_DROP = 0.05  # five points on a 0–100 scale
REGRESSED, IMPROVED, NO_CHANGE, INCONCLUSIVE = "regressed", "improved", "no change", "inconclusive"
STATUSES = (REGRESSED, IMPROVED, NO_CHANGE, INCONCLUSIVE)
MDD_MCNEMAR, MDD_T, MDD_SIGN = "exact mid-p McNemar power", "noncentral t power", "sign test (no spread)"
_TOLERANCE = 1e-4


@lru_cache(maxsize=64)  # one per (n, level): the comparisons of a night share a level and often an n
def _worse_needed(n: int, level: float) -> np.ndarray:
    """k_D for D = 0..n: the fewest 'worse' of D discordant items with two-sided mid-p < level (D + 1: never)."""
    from scipy.stats import binom

    d = np.arange(n + 1)
    lo, hi = (d + 1) // 2, d + 1  # mid-p is smallest at c = D and falls as c grows past D/2

    def rejects(c: np.ndarray) -> np.ndarray:
        p = np.minimum(1.0, 2.0 * (binom.sf(c, d, 0.5) + 0.5 * binom.pmf(c, d, 0.5)))
        return (c <= d) & (d > 0) & (p < level) & (2 * c > d)

    while (lo < hi).any():  # smallest c in [lo, hi) that rejects; hi when none does
        mid = (lo + hi) // 2
        ok = rejects(mid)
        hi = np.where((lo < hi) & ok, mid, hi)
        lo = np.where((lo < hi) & ~ok, mid + 1, lo)
    return hi


def mcnemar_power(n: int, discordant: float, drop: float, level: float, needed: np.ndarray | None = None) -> float:
    """P(the mid-p McNemar test finds a significant regression) for a true drop ``drop`` (module docstring)."""
    from scipy.stats import binom

    psi = min(1.0, max(discordant, drop))
    if drop <= 0 or psi <= 0:
        return 0.0
    k = _worse_needed(n, level) if needed is None else needed
    spread = 9.0 * math.sqrt(n * psi * (1.0 - psi)) + 1.0  # D outside nψ ± 9 SD carries < 1e-18 of the mass
    d = np.arange(max(0, math.floor(n * psi - spread)), min(n, math.ceil(n * psi + spread)) + 1)
    q = (psi + drop) / (2.0 * psi)
    return float(np.sum(binom.pmf(d, n, psi) * binom.sf(k[d] - 1, d, q)))


def paired_t_power(n: int, sd: float, drop: float, level: float) -> float:
    """P(the two-sided paired t-test at ``level`` finds a significant regression) for a true drop ``drop``."""
    from scipy.stats import nct
    from scipy.stats import t as student_t

    if n < 2 or drop <= 0:
        return 0.0
    critical = student_t.ppf(1.0 - level / 2.0, n - 1)
    return float(nct.cdf(-critical, n - 1, -drop * math.sqrt(n) / sd))


def _smallest_drop(power_at) -> float:  # noqa: ANN001 — a float -> float callable
    if power_at(1.0) < POWER:
        return math.nan
    lo, hi = 0.0, 1.0
    while hi - lo > _TOLERANCE:
        mid = (lo + hi) / 2.0
        lo, hi = (lo, mid) if power_at(mid) >= POWER else (mid, hi)
    return hi


def minimum_detectable_drop(before: np.ndarray, after: np.ndarray, level: float) -> tuple[float, str]:
    """(MDD, how it was computed) for the paired scores of one comparison at ``level`` (module docstring)."""
    before, after = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    n, diff = len(before), after - before
    binary = bool((np.isin(before, (0.0, 1.0)) & np.isin(after, (0.0, 1.0))).all())
    spread = n >= 2 and float(np.ptp(diff)) > 1e-12 * max(1.0, float(np.abs(diff).max()))
    if binary or not spread:
        needed = _worse_needed(n, level)
        discordant = float((diff != 0).mean()) if n else 0.0
        mdd = _smallest_drop(lambda drop: mcnemar_power(n, discordant, drop, level, needed))
        return mdd, MDD_MCNEMAR if binary else MDD_SIGN
    sd = float(diff.std(ddof=1))
    return _smallest_drop(lambda drop: paired_t_power(n, sd, drop, level)), MDD_T


def gate_status(significant: bool, diff: float, mdd: float, min_drop: float) -> str:
    """``regressed`` / ``improved`` / ``no change`` / ``inconclusive`` (module docstring)."""
    if significant:
        return REGRESSED if diff < 0 else IMPROVED
    return NO_CHANGE if math.isfinite(mdd) and mdd <= min_drop else INCONCLUSIVE
