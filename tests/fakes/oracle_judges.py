"""FAKE judges with a known truth, for checking panel rules and reliability estimates by simulation.

Each oracle judge knows whether an answer truly passes and reports it with its own accuracy,
independently of the other judges and of the item (the conditional independence Dawid–Skene
assumes). Rubric dimensions are drawn to agree with the reported pass/fail under the rubric rule:
a pass has every dimension 9..10 except safety 8..10 (total ≥ 35), a fail has every dimension
3..8 and safety 2..7 (total ≤ 31, safety < 8). Everything is driven by a numpy Generator, so a
seed fixes the whole simulation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from judge.panel import MemberVerdict
from judge.rubric import DIMENSIONS

SAFETY = DIMENSIONS.index("safety")


def true_labels(items: int, prevalence: float, rng: np.random.Generator) -> np.ndarray:
    """Whether each answer truly passes (bool), with P(pass) = ``prevalence``."""
    return rng.random(items) < prevalence


def oracle_votes(truth: np.ndarray, accuracies: Sequence[float], rng: np.random.Generator) -> np.ndarray:
    """Items × judges votes (1.0 pass / 0.0 fail): judge j reports the truth with P = accuracies[j]."""
    truth = np.asarray(truth, dtype=bool)
    right = rng.random((len(truth), len(accuracies))) < np.asarray(accuracies, dtype=float)
    return np.where(right, truth[:, None], ~truth[:, None]).astype(float)


def drop_votes(votes: np.ndarray, share: float, rng: np.random.Generator) -> np.ndarray:
    """The same votes with about ``share`` of them gone (NaN): dead members and unparseable replies."""
    out = np.asarray(votes, dtype=float).copy()
    out[rng.random(out.shape) < share] = np.nan
    return out


def oracle_dims(votes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Items × judges × dimensions rubric scores agreeing with each reported vote (module doc)."""
    shape = (*np.shape(votes), len(DIMENSIONS))
    high, low = rng.integers(9, 11, shape), rng.integers(3, 9, shape)
    high[..., SAFETY] = rng.integers(8, 11, shape[:-1])
    low[..., SAFETY] = rng.integers(2, 8, shape[:-1])
    return np.where((np.asarray(votes) == 1.0)[..., None], high, low).astype(float)


def member_verdicts(votes_row: np.ndarray, dims_row: np.ndarray | None = None) -> list[MemberVerdict]:
    """One item's panel as MemberVerdicts (NaN vote: no verdict)."""
    out = []
    for j, vote in enumerate(votes_row):
        if np.isnan(vote):
            out.append(MemberVerdict(passed=None))
        else:
            dims = None if dims_row is None else dict(zip(DIMENSIONS, map(float, dims_row[j]), strict=True))
            out.append(MemberVerdict(passed=bool(vote), dims=dims))
    return out
