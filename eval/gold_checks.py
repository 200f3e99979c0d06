"""Gold shape checks: one function per shape, each ``check(gold, context) -> problem | None``.

A gold type names its check in its declaration (``eval.gold_types``); ``eval.items.Item`` runs it
when the item is built, so a malformed gold is refused at load time with ``path:line`` instead of
surfacing as a wrong score later. The gold arrives frozen (lists as tuples, objects as read-only
mappings, see ``eval.items.freeze``). A problem is a phrase that reads after "<gold_type> gold",
e.g. "must be a non-empty string". This module imports nothing of ours, so the item model and the
declarations can both use it without a cycle.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

PROBE_BEHAVIOURS = ("abstain", "refute")
TOOL_ACTIONS = ("call", "direct")
DOMAIN_PATTERN = re.compile(r"^[A-Za-z0-9_-]+:[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class GoldContext:
    """What a check may look at besides the gold: the item's option labels and texts (None without
    options) and its read-only ``meta``."""

    option_labels: tuple[str, ...] | None = None
    option_texts: tuple[str, ...] | None = None
    meta: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


GoldCheck = Callable[[Any, GoldContext], "str | None"]


def is_str_list(value: Any, allow_empty: bool = True) -> bool:
    """A (frozen) list of non-empty strings; ``allow_empty=False`` also refuses the empty list."""
    return isinstance(value, tuple) and (allow_empty or len(value) > 0) and all(isinstance(v, str) and v for v in value)


def non_empty_string(gold: Any, context: GoldContext) -> str | None:
    return None if isinstance(gold, str) and gold.strip() else "must be a non-empty string"


def one_of(values: tuple[str, ...]) -> GoldCheck:
    """A check accepting exactly one of ``values`` (compared as given: no case folding)."""

    def check(gold: Any, context: GoldContext) -> str | None:
        return None if isinstance(gold, str) and gold in values else f"must be one of {list(values)}"

    check.__qualname__ = f"one_of({', '.join(values)})"
    return check


def criteria(gold: Any, context: GoldContext) -> str | None:
    if not isinstance(gold, Mapping):
        return "must be an object with expected_topics (and optionally must_warn, must_not)"
    if not is_str_list(gold.get("expected_topics"), allow_empty=False):
        return "expected_topics must be a non-empty list of strings"
    for key in ("must_warn", "must_not", "patient_must_not_phrases"):
        if key in gold and not is_str_list(gold[key]):
            return f"{key} must be a list of strings"
    return None


def _choice(chosen: Any, context: GoldContext) -> str | None:
    labels = context.option_labels
    if not is_str_list(chosen, allow_empty=False):
        return "must be a non-empty list of option labels"
    unknown = [label for label in chosen if label not in labels]  # type: ignore[operator]
    if unknown:
        return f"labels {unknown} are not among the options {list(labels or ())}"
    if len(set(chosen)) != len(chosen):
        return "repeats an option label"
    return None


def single_choice(gold: Any, context: GoldContext) -> str | None:
    if context.option_labels is None:
        return "a choice item needs options"
    if not isinstance(gold, str):
        return "must be one option label (a string)"
    return _choice((gold,), context)


def multi_choice(gold: Any, context: GoldContext) -> str | None:
    if context.option_labels is None:
        return "a choice item needs options"
    return _choice(gold, context)


def cloze(gold: Any, context: GoldContext) -> str | None:
    ok = (isinstance(gold, str) and gold.strip()) or is_str_list(gold, allow_empty=False)
    return None if ok else "must be a non-empty string or a list of acceptable strings"


def extraction(gold: Any, context: GoldContext) -> str | None:
    if not isinstance(gold, tuple) or not all(
        isinstance(e, Mapping) and isinstance(e.get("entity"), str) and isinstance(e.get("type"), str) for e in gold
    ):
        return 'must be a list of {"entity": str, "type": str} objects'
    return None


def open_label(gold: Any, context: GoldContext) -> str | None:
    return None if is_str_list(gold, allow_empty=False) else "must be a non-empty list of label strings"


def quantitative(gold: Any, context: GoldContext) -> str | None:
    if not isinstance(gold, Mapping) or not gold:
        return "must be a non-empty object {herb: grams}"
    bad = [k for k, v in gold.items() if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0]
    return f"doses for {bad} must be non-negative numbers of grams" if bad else None


def classification(gold: Any, context: GoldContext) -> str | None:
    """A non-empty label that, when the item declares its label set (``meta.labels``), is in it."""
    problem = non_empty_string(gold, context)
    known = context.meta.get("labels")
    if not problem and known is not None and gold not in known:
        return f"{gold!r} is not in meta.labels"
    return problem


def routing(gold: Any, context: GoldContext) -> str | None:
    if not isinstance(gold, str) or not DOMAIN_PATTERN.match(gold):
        return 'must be a "system:topic" specialty slug'
    if context.option_texts is not None and gold not in context.option_texts:
        return f"{gold!r} is not among the option texts {list(context.option_texts)}"
    return None


def tcm_case(gold: Any, context: GoldContext) -> str | None:
    if not isinstance(gold, Mapping):
        return "must be an object with clinical_info, mechanisms, syndromes, summary"
    for key in ("clinical_info", "mechanisms", "syndromes"):
        if not is_str_list(gold.get(key), allow_empty=False):
            return f"{key} must be a non-empty list of strings"
    if not isinstance(gold.get("summary"), str) or not gold["summary"].strip():
        return "summary must be a non-empty string"
    return None
