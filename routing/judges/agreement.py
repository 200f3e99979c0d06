"""Inter-rater agreement: Krippendorff's α (interval, nominal) and Fleiss' κ; pure functions over arrays.

Ratings are a units × raters matrix, NaN where a rater gave nothing (a judge that died, a reply
that would not parse).

**Krippendorff's α** (Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011), from the
coincidence matrix. Units with fewer than 2 ratings are dropped (nothing to pair); m_u is the
number of ratings of unit u, n = Σ m_u the pairable values, n_uc the ratings of value c in unit u:

    o_ck = Σ_u (n_uc·n_uk − [c = k]·n_uc) / (m_u − 1)        n_c = Σ_k o_ck
    D_o  = Σ_ck o_ck·δ²_ck / n        D_e = Σ_ck n_c·n_k·δ²_ck / (n·(n − 1))        α = 1 − D_o / D_e

with δ²_ck = [c ≠ k] (nominal) or (c − k)² (interval). Neither needs the V × V matrix itself:
nominal uses only its diagonal Σ_c o_cc = Σ_u (Σ_c n_uc² − m_u) / (m_u − 1); interval only its
moments, since Σ_ck o_ck·c·k = Σ_u (s_u² − q_u) / (m_u − 1) with s_u, q_u the unit's sum of values
and of squares. So the cost is O(units × raters) whatever the number of distinct values.
α is None when no unit has 2 ratings, or when D_e = 0 (every pairable value the same: agreement is
then perfect but indistinguishable from chance, α = 0/0).
``ALPHA_WARN`` = 0.67 is Krippendorff's floor for drawing even tentative conclusions (0.8 for
firm ones).

**Fleiss' κ** (Fleiss 1971) for categorical labels, from per-unit category counts n_ij with the
same number m of raters on every unit:

    P_i = (Σ_j n_ij² − m) / (m·(m − 1))     P̄ = mean P_i     p_j = Σ_i n_ij / (N·m)
    P_e = Σ_j p_j²                          κ = (P̄ − P_e) / (1 − P_e)

``fleiss_kappa`` takes labels and uses only the units every rater labelled (κ assumes a fixed
number of ratings per unit; α is the statistic that copes with missing ratings). κ is None with
fewer than 2 such units, fewer than 2 raters, or P_e = 1 (one category everywhere).
"""

from __future__ import annotations

import numpy as np

ALPHA_WARN = 0.67


def _pairable(ratings: np.ndarray) -> np.ndarray:
    """The units × raters matrix (float, NaN = missing) without units of fewer than 2 ratings."""
    r = np.asarray(ratings, dtype=float)
    if r.ndim != 2:
        raise ValueError(f"ratings must be a units × raters matrix, got shape {r.shape}")
    return r[(~np.isnan(r)).sum(axis=1) >= 2]


def _alpha(observed: float, expected: float) -> float | None:
    """1 − D_o / D_e, None when D_e = 0."""
    if expected <= 0.0:
        return None
    return 1.0 - observed / expected


def krippendorff_alpha_interval(ratings: np.ndarray) -> float | None:
    """Krippendorff's α with δ² = (c − k)² (module doc); None when undefined."""
    r = _pairable(ratings)
    if r.shape[0] == 0 or np.nanmin(r) == np.nanmax(r):
        return None
    m = (~np.isnan(r)).sum(axis=1).astype(float)
    s, q = np.nansum(r, axis=1), np.nansum(r * r, axis=1)
    n = float(m.sum())
    cross = float(np.sum((s * s - q) / (m - 1.0)))  # Σ_ck o_ck·c·k
    squares = float(q.sum())  # Σ_c n_c·c², the coincidence margins' second moment
    observed = max(0.0, 2.0 * (squares - cross) / n)  # ≥ 0 exactly; rounding must not push α past 1
    expected = 2.0 * (n * squares - float(s.sum()) ** 2) / (n * (n - 1.0))
    return _alpha(observed, expected)


def _value_counts(r: np.ndarray) -> np.ndarray:
    """Units × distinct values counts n_uc of a (pairable) ratings matrix."""
    present = ~np.isnan(r)
    _, codes = np.unique(r[present], return_inverse=True)
    units = np.nonzero(present)[0]
    counts = np.zeros((r.shape[0], int(codes.max()) + 1 if codes.size else 0))
    np.add.at(counts, (units, codes), 1.0)
    return counts


def krippendorff_alpha_nominal(ratings: np.ndarray) -> float | None:
    """Krippendorff's α with δ² = [c ≠ k] (module doc); values are category codes; None when undefined."""
    r = _pairable(ratings)
    if r.shape[0] == 0:
        return None
    counts = _value_counts(r)
    m = counts.sum(axis=1)
    n = float(m.sum())
    agreeing = float(np.sum(((counts * counts).sum(axis=1) - m) / (m - 1.0)))  # Σ_c o_cc
    margins = counts.sum(axis=0)  # n_c
    observed = (n - agreeing) / n
    expected = (n * n - float(np.sum(margins * margins))) / (n * (n - 1.0))
    return _alpha(observed, expected)


def fleiss_kappa_from_counts(counts: np.ndarray) -> float | None:
    """Fleiss' κ from units × categories counts, every row summing to the same m (module doc)."""
    c = np.asarray(counts, dtype=float)
    if c.ndim != 2:
        raise ValueError(f"counts must be a units × categories matrix, got shape {c.shape}")
    if c.shape[0] < 2:
        return None
    per_unit = c.sum(axis=1)
    if np.any(per_unit != per_unit[0]):
        row = int(np.argmax(per_unit != per_unit[0]))
        raise ValueError(
            f"Fleiss' κ needs the same number of ratings on every unit: row 0 has {per_unit[0]:g}, "
            f"row {row} has {per_unit[row]:g}"
        )
    m = float(per_unit[0])
    if m < 2:
        return None
    agreement = float(np.mean(((c * c).sum(axis=1) - m) / (m * (m - 1.0))))
    shares = c.sum(axis=0) / (c.shape[0] * m)
    chance = float(np.sum(shares * shares))
    if chance >= 1.0 - 1e-12:
        return None
    return (agreement - chance) / (1.0 - chance)


def fleiss_kappa(labels: np.ndarray) -> float | None:
    """Fleiss' κ over units × raters category codes (NaN = missing), on the units every rater labelled."""
    r = np.asarray(labels, dtype=float)
    if r.ndim != 2:
        raise ValueError(f"labels must be a units × raters matrix, got shape {r.shape}")
    complete = r[~np.isnan(r).any(axis=1)]
    if complete.shape[0] < 2 or complete.shape[1] < 2:
        return None
    return fleiss_kappa_from_counts(_value_counts(complete))
