"""Classification labels of score rows as arrays: the predicted label, the gold label and the declared
label set of every labelled row (the rows a macro-F1 bucket scores), each a code into one vocabulary.

A night of 10^7 rows holds about 10^6 labelled rows; as a dict of tuples they took ~300 MB, as codes
they take ~20 MB. :class:`LabelColumns` is a read-only mapping row -> ``(predicted, gold, declared)``,
so a reader that wants one row's labels asks for it as from a dict; readers of many rows use its
arrays (``routing.boards.leaderboard.label_codes``).
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

Label = tuple[Any, Any, tuple[Any, ...]]


class LabelColumns(Mapping[int, Label]):
    """Row -> (predicted, gold, declared label set), rows ascending; labels as codes into
    ``label_values`` (every distinct label as read) and ``label_sets`` (every distinct declared set)."""

    def __init__(
        self,
        rows: np.ndarray,
        predicted: np.ndarray,
        gold: np.ndarray,
        declared: np.ndarray,
        values: Sequence[Any],
        sets: Sequence[tuple[Any, ...]],
    ) -> None:
        order = np.argsort(rows, kind="stable")
        self.rows = np.asarray(rows, dtype=np.int64)[order]
        self.predicted = np.asarray(predicted, dtype=np.int32)[order]
        self.gold = np.asarray(gold, dtype=np.int32)[order]
        self.declared = np.asarray(declared, dtype=np.int32)[order]
        self.label_values = list(values)
        self.label_sets = list(sets)

    @classmethod
    def empty(cls) -> LabelColumns:
        none = np.zeros(0, dtype=np.int64)
        return cls(none, none, none, none, [], [])

    def _at(self, row: int) -> int:
        at = int(np.searchsorted(self.rows, row))
        if at == len(self.rows) or int(self.rows[at]) != row:
            raise KeyError(row)
        return at

    def __getitem__(self, row: int) -> Label:
        at = self._at(int(row))
        return (
            self.label_values[int(self.predicted[at])],
            self.label_values[int(self.gold[at])],
            self.label_sets[int(self.declared[at])],
        )

    def __contains__(self, row: object) -> bool:
        try:
            self._at(int(row))  # type: ignore[call-overload]
        except (KeyError, TypeError, ValueError):
            return False
        return True

    def __iter__(self) -> Iterator[int]:
        return iter(self.rows.tolist())

    def __len__(self) -> int:
        return len(self.rows)

    def renumbered(self, new_row: np.ndarray) -> LabelColumns:
        """The labels of the rows ``new_row`` keeps (``new_row[row] >= 0``), under their new numbers."""
        target = np.asarray(new_row, dtype=np.int64)[self.rows] if len(self.rows) else self.rows
        kept = target >= 0
        return LabelColumns(
            target[kept], self.predicted[kept], self.gold[kept], self.declared[kept], self.label_values, self.label_sets
        )

    @classmethod
    def concat(cls, parts: Sequence[LabelColumns]) -> LabelColumns:
        """Every part's rows (no row twice), their vocabularies merged."""
        builder = LabelBuilder()
        for part in parts:
            value_code = np.array([builder.value_code(v) for v in part.label_values] + [0], dtype=np.int32)
            set_code = np.array([builder.set_code(s) for s in part.label_sets] + [0], dtype=np.int32)
            builder.rows.extend(part.rows.tolist())
            builder.predicted.extend(value_code[part.predicted].tolist())
            builder.gold.extend(value_code[part.gold].tolist())
            builder.declared.extend(set_code[part.declared].tolist())
        return builder.take()


def _key(value: Any) -> str:
    """One key per distinct JSON value (1, 1.0, True and "1" stay apart)."""
    return json.dumps([type(value).__name__, value], ensure_ascii=False, sort_keys=True, default=str)


class LabelBuilder:
    """Labels added a row at a time into compact arrays; :meth:`take` gives the :class:`LabelColumns`."""

    def __init__(self) -> None:
        self.rows, self.predicted, self.gold, self.declared = array("q"), array("i"), array("i"), array("i")
        self._values: dict[str, int] = {}
        self.values: list[Any] = []
        self._sets: dict[str, int] = {}
        self.sets: list[tuple[Any, ...]] = []

    def value_code(self, value: Any) -> int:
        key = _key(value)
        code = self._values.get(key)
        if code is None:
            code = self._values[key] = len(self.values)
            self.values.append(value)
        return code

    def set_code(self, declared: Sequence[Any]) -> int:
        key = _key(list(declared))
        code = self._sets.get(key)
        if code is None:
            code = self._sets[key] = len(self.sets)
            self.sets.append(tuple(declared))
        return code

    def add(self, row: int, label: Label) -> None:
        predicted, gold, declared = label
        self.rows.append(row)
        self.predicted.append(self.value_code(predicted))
        self.gold.append(self.value_code(gold))
        self.declared.append(self.set_code(declared))

    def __len__(self) -> int:
        return len(self.rows)

    def take(self) -> LabelColumns:
        """The labels added so far; the builder starts empty again (its vocabularies kept)."""
        out = LabelColumns(
            np.frombuffer(self.rows, dtype=np.int64) if self.rows else np.zeros(0, dtype=np.int64),
            np.frombuffer(self.predicted, dtype=np.int32) if self.predicted else np.zeros(0, dtype=np.int32),
            np.frombuffer(self.gold, dtype=np.int32) if self.gold else np.zeros(0, dtype=np.int32),
            np.frombuffer(self.declared, dtype=np.int32) if self.declared else np.zeros(0, dtype=np.int32),
            list(self.values),
            list(self.sets),
        )
        self.rows, self.predicted, self.gold, self.declared = array("q"), array("i"), array("i"), array("i")
        return out
