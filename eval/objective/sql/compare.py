"""Comparing two executions of one item: a query's rows, or the tables after a data change.

Rows are multisets of normalised values (numbers rounded to 1e-6, text stripped, a midnight time
dropped from a date, NULL kept); column names are ignored and column order is free: some
permutation of the model's columns must give the reference's rows. When the reference's outermost
query has ORDER BY, order matters too, up to ties: rows with equal sort keys (``Execution.ties``)
may come in any order. A data change compares every table's rows afterwards.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

PERMUTATION_BUDGET = 2_000  # column orders tried when several columns hold the same values


@dataclass(frozen=True)
class Execution:
    """What one block did: a query's rows (with tie runs when ordered) or the tables after a change."""

    mode: Literal["query", "state"]
    block: int
    sql: str  # the SQLite text run (statements joined by ';\n')
    rows: tuple[tuple[Any, ...], ...] = ()
    width: int = 0
    ordered: bool = False
    ties: tuple[int, ...] | None = None  # lengths of runs of equal sort keys; None = compare in strict order
    state: Mapping[str, Counter] = field(default_factory=dict)


def normalise(value: Any) -> Any:
    """Numbers -> float rounded to 1e-6 (so 3 == 3.0), text stripped with 'YYYY-MM-DD 00:00:00' -> the date."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        rounded = round(float(value), 6)
        return 0.0 if rounded == 0 else rounded
    if isinstance(value, bytes):
        return value.hex()
    text = str(value).strip()
    if len(text) == 19 and text.endswith(" 00:00:00") and text[4] == "-" and text[7] == "-":
        return text[:10]
    return text


def _column_orders(reference: Execution, rows: tuple[tuple[Any, ...], ...]) -> list[tuple[int, ...]]:
    """Orders of the model's columns under which each column holds the same values as the
    reference's column at that position (identity first), at most PERMUTATION_BUDGET of them."""
    width = reference.width
    ref_columns = [Counter(row[j] for row in reference.rows) for j in range(width)]
    model_columns = [Counter(row[j] for row in rows) for j in range(width)]
    options = [[k for k in range(width) if model_columns[k] == ref_columns[j]] for j in range(width)]
    found: list[tuple[int, ...]] = []

    def extend(prefix: list[int]) -> None:
        if len(found) >= PERMUTATION_BUDGET:
            return
        if len(prefix) == width:
            found.append(tuple(prefix))
            return
        for k in sorted(options[len(prefix)], key=lambda k: k != len(prefix)):
            if k not in prefix:
                extend(prefix + [k])

    extend([])
    return found


def _same_rows(reference: Execution, rows: list[tuple[Any, ...]]) -> bool:
    if not reference.ordered:
        return Counter(rows) == Counter(reference.rows)
    if reference.ties is None:
        return rows == list(reference.rows)
    start = 0
    for length in reference.ties:
        if Counter(rows[start : start + length]) != Counter(reference.rows[start : start + length]):
            return False
        start += length
    return True


def compare(reference: Execution, model: Execution, initial: Mapping[str, Counter]) -> tuple[bool, dict[str, Any]]:
    """(equal?, details) for two executions of the same item by the rule in the module docstring."""
    if reference.mode != model.mode:
        what = {"query": "returns rows", "state": "changes data"}
        return False, {"reason": f"the reference {what[reference.mode]} but the model's SQL {what[model.mode]}"}
    if reference.mode == "state":
        differ = sorted(name for name in reference.state if reference.state[name] != model.state.get(name))
        changed = sum(sum((reference.state[n] - initial.get(n, Counter())).values()) for n in reference.state)
        return not differ, {"tables_differing": differ, "reference_rows_changed": changed}
    details: dict[str, Any] = {
        "reference_rows": len(reference.rows),
        "model_rows": len(model.rows),
        "reference_columns": reference.width,
        "model_columns": model.width,
        "ordered": reference.ordered,
        "order_ties": reference.ties is not None,
    }
    if model.width != reference.width or len(model.rows) != len(reference.rows):
        details["reason"] = "different number of columns or rows"
        return False, details
    for order in _column_orders(reference, model.rows):
        if _same_rows(reference, [tuple(row[k] for k in order) for row in model.rows]):
            details["column_order"] = list(order)
            return True, details
    details["reason"] = "different values" if reference.rows else "different columns"
    return False, details


def informative(reference: Execution, initial: Mapping[str, Counter]) -> bool:
    """False when the reference returns no row or changes nothing: then any query of the same shape
    matches it, and a match says little (the synthetic data missed the reference's filters)."""
    if reference.mode == "query":
        return bool(reference.rows)
    return any(reference.state[name] != initial.get(name) for name in reference.state)
