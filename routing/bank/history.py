"""Item banks from the run history: per family, the model × item matrix of scores, fitted (2PL).

The history is the run index (:mod:`routing.nights.history`) — every run it lists whose folder is
still there — read into one score table (:func:`routing.load.runs.load_runs`, so a later run's row
for the same model and item wins). Per family, a cell is the model's mean ``value`` on the item over
its scored rows (0/1 for pass/fail items, a judged score in [0, 1] otherwise; the fit reads either),
a model being its pool name (every judge and identity of one name pooled).

A family's bank is fitted only from the models that answered at least ``FULL_SHARE`` of its items:
a model scored adaptively answered a few items chosen for it and would tell the fit little. With
fewer than ``MIN_MODELS`` such models the family has no bank and :class:`Bank` is not made — the
caller says so and falls back to full evaluation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from routing.bank.adaptive import CurveCheck
from routing.bank.irt import ItemFit, fit_2pl, negative_discrimination, probability
from routing.load.runs import LoadError, load_runs
from routing.load.table import SCORED, ScoreTable
from routing.nights.history import read_index

MIN_MODELS = 8  # fully evaluated models a family's bank needs (fewer: fall back to full evaluation)
FULL_SHARE = 0.9  # share of a family's items a model must have answered to count as fully evaluated


@dataclass(frozen=True)
class FamilyMatrix:
    """One family's scores: ``y[model, item]`` (``NaN`` = not scored)."""

    family: str
    models: tuple[str, ...]
    items: tuple[str, ...]
    y: np.ndarray

    def full_models(self, share: float = FULL_SHARE) -> np.ndarray:
        """Indices of the models that answered at least ``share`` of the items."""
        answered = (~np.isnan(self.y)).mean(axis=1)
        return np.flatnonzero(answered >= share)


@dataclass(frozen=True)
class Bank:
    """A family's fitted bank: the items' ``a`` and ``b``, the fit models' abilities, the check of its
    predicted full-suite scores against the models' actual ones (``check``) and the items whose slope on
    ability is negative (likely a bad gold)."""

    family: str
    items: tuple[str, ...]
    models: tuple[str, ...]
    fit: ItemFit
    check: CurveCheck
    negative: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "family": self.family,
            "items": len(self.items),
            "models": list(self.models),
            "converged": self.fit.converged,
            "negative_discrimination": list(self.negative),
        }


def family_matrices(table: ScoreTable) -> dict[str, FamilyMatrix]:
    """Per family, the model × item matrix of mean scored ``value`` (models by pool name)."""
    scored = np.flatnonzero(table.status == SCORED)
    names = np.array([e.model.name for e in table.entrants], dtype=object)
    families = table.names("family")
    out: dict[str, FamilyMatrix] = {}
    for code in np.unique(table.family[scored]):
        rows = scored[table.family[scored] == code]
        model_names, model_idx = np.unique(names[table.entrant[rows]].astype(str), return_inverse=True)
        item_codes, item_idx = np.unique(table.item[rows], return_inverse=True)
        total = np.zeros((len(model_names), len(item_codes)))
        count = np.zeros_like(total)
        np.add.at(total, (model_idx, item_idx), table.value[rows])
        np.add.at(count, (model_idx, item_idx), 1.0)
        with np.errstate(invalid="ignore"):
            y = total / count
        items = tuple(table.items[c] for c in item_codes)
        out[families[code]] = FamilyMatrix(families[code], tuple(map(str, model_names)), items, y)
    return out


def fit_bank(matrix: FamilyMatrix, *, leave_out: Iterable[str] = (), min_models: int = MIN_MODELS) -> Bank | str:
    """The family's bank from its fully evaluated models (``leave_out`` excluded), or why none can be
    fitted (a sentence for the user)."""
    skip = set(leave_out)
    full = [i for i in matrix.full_models() if matrix.models[i] not in skip]
    if len(full) < min_models:
        return (
            f"{matrix.family}: {len(full)} fully evaluated model(s) in the history, {min_models} needed to fit "
            "an item bank; evaluated in full"
        )
    y = matrix.y[full]
    fit = fit_2pl(y)
    check = curve_check(y, fit)
    slope = negative_discrimination(y, fit.theta)
    return Bank(
        matrix.family,
        matrix.items,
        tuple(matrix.models[i] for i in full),
        fit,
        check,
        tuple(matrix.items[j] for j in np.flatnonzero(slope < 0)),
    )


def curve_check(y: np.ndarray, fit: ItemFit) -> CurveCheck:
    """The bank's predicted full-suite score of each of its models (the mean of ``P(θ_i)`` over the
    items the model answered) against the model's actual score."""
    seen = ~np.isnan(y)
    p = probability(fit.a, fit.b, fit.theta)
    predicted = np.where(seen, p, 0.0).sum(axis=1) / seen.sum(axis=1)
    return CurveCheck.fit(predicted, np.nanmean(y, axis=1))


def history_table(root: Path) -> tuple[ScoreTable | None, list[str]]:
    """The score table of every indexed run under ``root`` whose folder is still there, and notes
    (none indexed; runs that could not be read)."""
    entries = [e for e in read_index(root) if not e.missing]
    if not entries:
        return None, [f"{root}: no run in the run index (index.jsonl); the history is empty"]
    try:
        return load_runs([e.path for e in entries]).table, []
    except LoadError as exc:
        return None, [f"{root}: the history could not be read ({exc})"]


def banks_from_history(
    root: Path, families: Iterable[str] | None = None, *, leave_out: Iterable[str] = ()
) -> tuple[dict[str, Bank], list[str]]:
    """A bank per family of the history under ``root`` (``families``: only these) and, for each
    family without one, why."""
    table, notes = history_table(root)
    if table is None:
        return {}, notes
    banks: dict[str, Bank] = {}
    wanted = set(families) if families is not None else None
    matrices: Mapping[str, FamilyMatrix] = family_matrices(table)
    for family, matrix in matrices.items():
        if wanted is not None and family not in wanted:
            continue
        bank = fit_bank(matrix, leave_out=leave_out)
        if isinstance(bank, str):
            notes.append(bank)
        else:
            banks[family] = bank
    for family in sorted((wanted or set()) - set(matrices)):
        notes.append(f"{family}: no scores in the history; evaluated in full")
    return banks, notes
