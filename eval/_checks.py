"""Input checks shared by the metrics.

Metrics are called on model output and hand-built golds, where a swapped argument or a bare string
in place of a list is the usual mistake. Python would often turn such a mistake into a plausible
wrong number (a string iterates as characters), so every public metric checks its inputs here and
raises ``TypeError`` / ``ValueError`` naming the argument instead.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Mapping, Sequence
from typing import Any


def type_name(value: object) -> str:
    return type(value).__name__


def require_str(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type_name(value)}")
    return value


def require_sequence(name: str, value: Any) -> Sequence[Any]:
    """A list or tuple (or other Sequence) but never a str/bytes, which would iterate as characters."""
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list, got {type_name(value)}")
    return value


def require_collection(name: str, value: Any) -> Collection[Any]:
    """Any sized iterable (list, tuple, set, frozenset) except a str."""
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Collection):
        raise TypeError(
            f"{name} must be a list or set of items, got {type_name(value)}"
            + (" (split the string into items first)" if isinstance(value, str) else "")
        )
    return value


def require_str_sequence(name: str, value: Any) -> Sequence[str]:
    seq = require_sequence(name, value)
    for i, item in enumerate(seq):
        if not isinstance(item, str):
            raise TypeError(f"{name}[{i}] must be a str, got {type_name(item)}")
    return seq


def require_str_collection(name: str, value: Any) -> Collection[str]:
    coll = require_collection(name, value)
    for item in coll:
        if not isinstance(item, str):
            raise TypeError(f"every item of {name} must be a str, got {type_name(item)}")
    return coll


def require_int(name: str, value: Any, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type_name(value)}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def require_real(name: str, value: Any, low: float | None = None, high: float | None = None) -> float:
    """A finite real number (bools rejected: True is not a score)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type_name(value)}")
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if low is not None and value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value}")
    return value


def require_mapping(name: str, value: Any) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict, got {type_name(value)}")
    return value


def require_same_length(name_a: str, a: Sequence[Any], name_b: str, b: Sequence[Any]) -> None:
    if len(a) != len(b):
        raise ValueError(f"{name_a} and {name_b} must have the same length, got {len(a)} and {len(b)}")


def f1_from_counts(tp: float, pred_total: float, gold_total: float) -> tuple[float, float, float]:
    """(precision, recall, F1) with 0.0 wherever a denominator is zero."""
    precision = tp / pred_total if pred_total > 0 else 0.0
    recall = tp / gold_total if gold_total > 0 else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1
