"""Which (model, family) pairs a run tests adaptively, and the units it asks outright.

A model is tested adaptively when ``--adaptive-models`` names it, or else when it is new: no
family's bank was fitted on it. A family is tested adaptively when the history has a bank for it
(:func:`routing.bank.history.banks_from_history`: enough fully evaluated models), its items are
judge-free (a judged item would need the judge inside the loop) and the bank holds every item the
run selected of it (an item the bank has not seen has no difficulty yet). Every other unit is
asked in full, as without ``--adaptive``; a model that answers every item is scored as today.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eval.gold_types import FAMILY_OF_GOLD_TYPE, JUDGED_GOLD_TYPES
from pool.plan import Plan
from pool.store.outcome import Unit
from routing.bank.history import Bank, banks_from_history

ADAPTIVE_FILENAME = "adaptive.json"


@dataclass(frozen=True)
class FamilyTest:
    """One model's adaptive test of one family: the bank and the run's items of it, in bank order."""

    model: str
    family: str
    bank: Bank
    item_ids: tuple[str, ...]  # the run's items of the family
    index: np.ndarray  # each item's position in the bank
    budget: int  # items at most


@dataclass(frozen=True)
class AdaptivePlan:
    tests: tuple[FamilyTest, ...]
    notes: tuple[str, ...]
    banks: Mapping[str, Bank] = field(default_factory=dict)

    def adaptive_units(self) -> set[tuple[str, str]]:
        return {(t.model, item) for t in self.tests for item in t.item_ids}

    def initial_units(self, plan: Plan) -> Iterator[Unit]:
        """The plan's units without the ones the adaptive tests choose among."""
        chosen = self.adaptive_units()
        return (u for u in plan.units() if (u.model, u.item_id) not in chosen)

    def to_json(self) -> dict[str, Any]:
        return {"notes": list(self.notes), "banks": {f: b.to_json() for f, b in sorted(self.banks.items())}}


def adaptive_plan(plan: Plan, options: Mapping[str, Any], root: Path) -> AdaptivePlan:
    """The adaptive tests of a run with ``--adaptive`` (``options``: the run's stored options)."""
    by_family: dict[str, list[str]] = {}
    judged: set[str] = set()
    for item in plan.items:
        family = FAMILY_OF_GOLD_TYPE[item.gold_type]
        by_family.setdefault(family, []).append(item.id)
        if item.gold_type in JUDGED_GOLD_TYPES:
            judged.add(family)
    named = [n for n in (options.get("adaptive_models") or "").split(",") if n.strip()]
    banks, notes = banks_from_history(root, by_family, leave_out=named)
    notes = list(notes)
    fitted_on = {name for bank in banks.values() for name in bank.models}
    models = named or [m.name for m in plan.models if m.name not in fitted_on]
    if not named and not models:
        notes.append("every model of the run is in the history's banks: all are evaluated in full")
    tests: list[FamilyTest] = []
    share = float(options.get("adaptive_budget") or 0.1)
    for family, item_ids in sorted(by_family.items()):
        bank = banks.get(family)
        if bank is None:
            continue
        if family in judged:
            notes.append(f"{family}: judged items; evaluated in full (adaptive selection is judge-free)")
            continue
        position = {item: j for j, item in enumerate(bank.items)}
        unseen = [i for i in item_ids if i not in position]
        if unseen:
            notes.append(
                f"{family}: {len(unseen)} of the run's {len(item_ids)} items are not in the bank "
                f"(e.g. {unseen[0]}); evaluated in full"
            )
            continue
        index = np.array([position[i] for i in item_ids])
        budget = max(1, math.ceil(share * len(item_ids)))
        tests += [FamilyTest(m, family, bank, tuple(item_ids), index, budget) for m in models]
    return AdaptivePlan(tuple(tests), tuple(notes), banks)
