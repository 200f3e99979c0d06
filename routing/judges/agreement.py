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

A nightly panel holds millions of units, so each function reads the matrix ``SLICE_UNITS`` units at
a time: the per-unit terms (m_u, s_u, q_u, Σ_c n_uc² without the count matrix) are computed slice by
slice into one float vector per term, and the sums over units run over those whole vectors exactly as
over the unsliced matrix. The numbers do not depend on the slice size, bit for bit; transient memory
is a few float vectors over units plus one slice. ``units`` (a boolean mask) restricts any of them to
a subset of the rows without copying the matrix.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

ALPHA_WARN = 0.67
SLICE_UNITS = 1 << 16  # units read at a time: bounds the transient memory on 10^7-row nights


def _matrix(ratings: np.ndarray, what: str) -> np.ndarray:
    """The units × raters matrix as an array (an array is not copied: it is read a slice at a time)."""
    r = ratings if isinstance(ratings, np.ndarray) else np.asarray(ratings, dtype=float)
    if r.ndim != 2:
        raise ValueError(f"{what} must be a units × raters matrix, got shape {r.shape}")
    return r


def _slices(r: np.ndarray, units: np.ndarray | None) -> Iterator[np.ndarray]:
    """The rows of ``r`` (those where ``units`` is True), ``SLICE_UNITS`` at a time, as float."""
    for lo in range(0, r.shape[0], SLICE_UNITS):
        part = np.asarray(r[lo : lo + SLICE_UNITS], dtype=float)
        yield part if units is None else part[np.asarray(units[lo : lo + SLICE_UNITS], dtype=bool)]


def _pairable(r: np.ndarray, units: np.ndarray | None) -> Iterator[np.ndarray]:
    """Slices of the units with at least 2 ratings (nothing to pair otherwise), non-empty ones only."""
    for part in _slices(r, units):
        kept = part[(~np.isnan(part)).sum(axis=1) >= 2]
        if len(kept):
            yield kept


def _squared_counts(part: np.ndarray) -> np.ndarray:
    """Σ_c n_uc² of each unit (row) without the units × values count matrix: in the sorted row, each
    run of n equal values adds n² = Σ_{t<n} (2t + 1). Exact integers (float64)."""
    ordered = np.sort(part, axis=1)  # NaN last
    present = ~np.isnan(ordered)
    out = present[:, 0].astype(np.int64)
    run = np.zeros(len(ordered), dtype=np.int64)
    for j in range(1, ordered.shape[1]):
        run = np.where(ordered[:, j] == ordered[:, j - 1], run + 1, 0)
        out += np.where(present[:, j], 2 * run + 1, 0)
    return out.astype(float)


class _Margins:
    """How often each distinct value occurs (n_c), merged slice by slice; values in ascending order."""

    def __init__(self) -> None:
        self.values = np.empty(0)
        self.counts = np.empty(0, dtype=np.int64)

    def add(self, part: np.ndarray) -> None:
        values, counts = np.unique(part[~np.isnan(part)], return_counts=True)
        merged, inverse = np.unique(np.concatenate([self.values, values]), return_inverse=True)
        total = np.zeros(len(merged), dtype=np.int64)
        np.add.at(total, inverse.ravel(), np.concatenate([self.counts, counts]))
        self.values, self.counts = merged, total


def _alpha(observed: float, expected: float) -> float | None:
    """1 − D_o / D_e, None when D_e = 0."""
    if expected <= 0.0:
        return None
    return 1.0 - observed / expected


def _units_of(r: np.ndarray, units: np.ndarray | None) -> int:
    return r.shape[0] if units is None else int(np.count_nonzero(units))


def krippendorff_alpha_interval(ratings: np.ndarray, units: np.ndarray | None = None) -> float | None:
    """Krippendorff's α with δ² = (c − k)² (module doc); None when undefined."""
    r = _matrix(ratings, "ratings")
    size = _units_of(r, units)
    s, q, cross = np.empty(size), np.empty(size), np.empty(size)
    k, n, low, high = 0, 0, np.inf, -np.inf
    for part in _pairable(r, units):
        m = (~np.isnan(part)).sum(axis=1)
        ps, pq = np.nansum(part, axis=1), np.nansum(part * part, axis=1)
        end = k + len(part)
        s[k:end], q[k:end] = ps, pq
        cross[k:end] = (ps * ps - pq) / (m.astype(float) - 1.0)
        n += int(m.sum())
        low, high = min(low, float(np.nanmin(part))), max(high, float(np.nanmax(part)))
        k = end
    if k == 0 or low == high:
        return None
    s, q, cross = s[:k], q[:k], cross[:k]
    n_values = float(n)
    crossed = float(np.sum(cross))  # Σ_ck o_ck·c·k
    squares = float(q.sum())  # Σ_c n_c·c², the coincidence margins' second moment
    observed = max(0.0, 2.0 * (squares - crossed) / n_values)  # ≥ 0 exactly; rounding must not push α past 1
    expected = 2.0 * (n_values * squares - float(s.sum()) ** 2) / (n_values * (n_values - 1.0))
    return _alpha(observed, expected)


def krippendorff_alpha_nominal(ratings: np.ndarray, units: np.ndarray | None = None) -> float | None:
    """Krippendorff's α with δ² = [c ≠ k] (module doc); values are category codes; None when undefined."""
    r = _matrix(ratings, "ratings")
    agreeing_units = np.empty(_units_of(r, units))
    margins = _Margins()
    k, n = 0, 0
    for part in _pairable(r, units):
        m = (~np.isnan(part)).sum(axis=1).astype(float)
        end = k + len(part)
        agreeing_units[k:end] = (_squared_counts(part) - m) / (m - 1.0)
        margins.add(part)
        n += int(m.sum())
        k = end
    if k == 0:
        return None
    n_values = float(n)
    agreeing = float(np.sum(agreeing_units[:k]))  # Σ_c o_cc
    observed = (n_values - agreeing) / n_values
    squared_margins = float(np.sum(margins.counts * margins.counts))  # Σ_c n_c², exact
    expected = (n_values * n_values - squared_margins) / (n_values * (n_values - 1.0))
    return _alpha(observed, expected)


def _kappa(agreement_units: np.ndarray, totals: np.ndarray, m: float) -> float | None:
    """κ from each unit's P_i and the categories' total counts (module doc)."""
    agreement = float(np.mean(agreement_units))
    shares = totals / (agreement_units.shape[0] * m)
    chance = float(np.sum(shares * shares))
    if chance >= 1.0 - 1e-12:
        return None
    return (agreement - chance) / (1.0 - chance)


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
    return _kappa(((c * c).sum(axis=1) - m) / (m * (m - 1.0)), c.sum(axis=0), m)


def fleiss_kappa(labels: np.ndarray, units: np.ndarray | None = None) -> float | None:
    """Fleiss' κ over units × raters category codes (NaN = missing), on the units every rater labelled."""
    r = _matrix(labels, "labels")
    if r.shape[1] < 2:
        return None
    m = float(r.shape[1])
    agreement_units = np.empty(_units_of(r, units))
    margins = _Margins()
    k = 0
    for part in _slices(r, units):
        complete = part[~np.isnan(part).any(axis=1)]
        end = k + len(complete)
        agreement_units[k:end] = (_squared_counts(complete) - m) / (m * (m - 1.0))
        margins.add(complete)
        k = end
    if k < 2:
        return None
    return _kappa(agreement_units[:k], margins.counts.astype(float), m)
