"""What a run measured per candidate: each family's score with its interval, the specialty family's
unsupported rate, and the score the theory order is compared with.

Per pool model (an entrant's model name) and family, the score is the mean ``value`` over its scored
rows, with the leaderboard's interval (:func:`routing.stats.intervals.ratio_intervals`: Wilson for
pass/fail, t for continuous means). When several judges scored a model in one family, the judge with
the most scored rows speaks for it (as the nightly index does), so a number never blends two judges.
The unsupported rate is Σ unsupported claims / Σ claims where the judge split answers into claims
(``--hallu``), else the share of answers the judge found unsupported by any source — the
leaderboard's rule. The *order score* is the asked family's, narrowed to the asked domain (its system
or topics) when the family is specialty. Pure: a loaded table in, numbers out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from routing.load.table import SCORED, ScoreTable
from routing.screen.score import domain_matches
from routing.stats.intervals import ratio_intervals

SPECIALTY = "specialty"


@dataclass(frozen=True)
class Measure:
    """A mean with its 95% interval over ``n`` scored items."""

    value: float
    lo: float
    hi: float
    n: int
    ci_method: str

    def shown(self) -> str:
        return f"{self.value:.3f} [{self.lo:.2f}, {self.hi:.2f}] n={self.n}"


@dataclass(frozen=True)
class Measured:
    """One candidate's measurements in a run."""

    model: str
    families: dict[str, Measure]
    unsupported: Measure | None
    order: Measure | None  # the order family's score (narrowed to the domain for specialty)


def _measure(num: np.ndarray, den: np.ndarray | None = None) -> Measure | None:
    den = np.ones_like(num) if den is None else den
    present = ~np.isnan(num) & ~np.isnan(den)
    num, den = num[present], den[present]
    if not len(num) or den.sum() <= 0:
        return None
    lo, hi, methods = ratio_intervals(num[:, None], den[:, None], scale=np.array([1.0]))
    return Measure(float(num.sum() / den.sum()), float(lo[0]), float(hi[0]), int(len(num)), methods[0])


def unsupported_rate(table: ScoreTable, rows: np.ndarray) -> Measure | None:
    """Claim-level where claims were counted, else per answer (module docstring); None when never recorded."""
    claims = table.flags["claims_total"][rows].astype(float)
    if (~np.isnan(claims)).any():
        return _measure(table.flags["claims_unsupported"][rows].astype(float), claims)
    return _measure(table.flags["grounding_unsupported"][rows].astype(float))


def _rows_by_judge(table: ScoreTable, name: str, family: int) -> np.ndarray:
    """The scored rows of model ``name`` in ``family``, from the entrant (judge) with the most of them."""
    scored = (table.status == SCORED) & (table.family == family)
    best = np.zeros(0, dtype=np.int64)
    for index, entrant in enumerate(table.entrants):
        if entrant.model.name != name:
            continue
        rows = np.flatnonzero(scored & (table.entrant == index))
        if len(rows) > len(best):
            best = rows
    return best


def _in_domain(table: ScoreTable, rows: np.ndarray, domain: str) -> np.ndarray:
    names = table.names("domain")
    wanted = np.array([domain_matches([name], domain) for name in names], dtype=bool)
    return rows[wanted[table.domain[rows]]] if len(names) else rows[:0]


def measure(
    table: ScoreTable, models: Sequence[str], families: Sequence[str], order_family: str, domain: str | None
) -> dict[str, Measured]:
    """``{model: Measured}`` for the named models that have a scored row in the run."""
    family_names = table.names("family")
    out: dict[str, Measured] = {}
    for model in models:
        scores: dict[str, Measure] = {}
        unsupported = order = None
        for family in sorted(set(families) | {order_family}):
            if family not in family_names:
                continue
            rows = _rows_by_judge(table, model, family_names.index(family))
            found = _measure(table.value[rows].astype(float)) if len(rows) else None
            if found is not None and family in families:
                scores[family] = found
            if family == SPECIALTY and len(rows):
                unsupported = unsupported_rate(table, rows)
            if family == order_family and len(rows):
                narrowed = _in_domain(table, rows, domain) if domain and family == SPECIALTY else rows
                order = _measure(table.value[narrowed].astype(float)) if len(narrowed) else None
        if scores or order is not None:
            out[model] = Measured(model, scores, unsupported, order)
    return out
