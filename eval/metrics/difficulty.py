"""Composite-difficulty hard subsets (LingLan §2.3): D = (1 − μ) + λ·σ² per item over models."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from eval._checks import require_int, require_real, require_sequence


def composite_difficulty(correctness: np.ndarray | Sequence[Sequence[float]], lam: float = 0.5) -> np.ndarray:
    """D_i = (1 − mean_i) + lam · var_i over the models of row i (population variance, ddof = 0).

    ``correctness`` is items × models with values in [0, 1] (1 = correct); NaN marks a missing
    result (e.g. an infra error) and is left out of that item's mean and variance.
    """
    lam = require_real("lam", lam)
    matrix = np.asarray(correctness, dtype=float)
    if matrix.ndim != 2:
        raise ValueError(f"correctness must be a 2-D items × models array, got shape {matrix.shape}")
    observed = ~np.isnan(matrix)
    if matrix.shape[0] and (~observed.any(axis=1)).any():
        row = int(np.flatnonzero(~observed.any(axis=1))[0])
        raise ValueError(f"correctness row {row} has no observed result; drop the item first")
    if (matrix < 0).any() or (matrix > 1).any():  # NaN compares False, so no masked copy is needed
        raise ValueError("correctness values must lie in [0, 1]")
    # D ignores model order but float sums do not: sorting each row gives items with the same results
    # bit-identical D, so ties really fall back to input order in hard_subset.
    matrix = np.sort(matrix, axis=1)  # NaN sorts last; a copy we own, reused in place below
    if observed.all():
        mean = matrix.mean(axis=1)
        np.square(np.subtract(matrix, mean[:, None], out=matrix), out=matrix)
        return (1.0 - mean) + lam * matrix.mean(axis=1)
    return (1.0 - np.nanmean(matrix, axis=1)) + lam * np.nanvar(matrix, axis=1)


def hard_subset(
    item_ids: Sequence[Hashable],
    correctness: np.ndarray | Sequence[Sequence[float]],
    top_k: int,
    lam: float = 0.5,
) -> list[Hashable]:
    """The top_k item ids by descending D = (1 − μ) + lam·σ² (all items if fewer); ties keep input order."""
    require_sequence("item_ids", item_ids)
    require_int("top_k", top_k, minimum=0)
    return hardest(item_ids, composite_difficulty(correctness, lam), top_k)


def hardest(item_ids: Sequence[Hashable], difficulty: np.ndarray, top_k: int) -> list[Hashable]:
    """The top_k item ids by descending precomputed D (all if fewer); ties keep input order."""
    if difficulty.shape[0] != len(item_ids):
        raise ValueError(f"correctness has {difficulty.shape[0]} rows but there are {len(item_ids)} item_ids")
    order = np.argsort(-difficulty, kind="stable")[:top_k]
    return [item_ids[i] for i in order]
