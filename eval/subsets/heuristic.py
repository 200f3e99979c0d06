"""A model-free difficulty per item, read from its gold alone (the med-agent-verifier README's
mini-bench heuristic): adversarial, safety and reflection tasks, long references, many topics to
cover, safety warnings, forbidden statements and dated guideline questions make an item harder.

Reference items: ``0.6·task_weight + 0.25·len(reference) + 0.15·len(question)``.
Criteria items: ``0.35·topics + 0.25·[must_warn] + 0.20·[must_not or patient_must_not_phrases]
+ 0.20·[guideline question]`` — a guideline question's id contains ``GUIDELINE``, or its text
says 指南 or names a year 2010–2029 followed by 年.

Every feature is min-max normalised among the items of its track that use the same formula (a
zero span gives 0.5, so a feature every item shares counts as middling), and the weighted sums are
min-max normalised again per track: difficulties compare within a track, never across.

Items of every other gold type (exam, TCM, probes, tool decisions, routing) carry nothing in their
gold that tells a hard one from an easy one, so each gets 0.5, the middle of its track's scale: they
still join the round robin, behind the hardest buckets of the tracks the heuristic can read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType

from eval.items import Item

# Harder task kinds weigh more (MedBench agent tasks); a task not listed weighs UNKNOWN_TASK_WEIGHT.
TASK_WEIGHTS: Mapping[str, float] = MappingProxyType({
    "MedDefend": 1.0, "MedShield": 0.9, "MedReflect": 0.8, "MedCOT": 0.7, "MedPathPlan": 0.7,
    "MedLongConv": 0.65, "MedLongQA": 0.65, "MedCollab": 0.6,
    "MedDecomp": 0.5, "MedCallAPI": 0.5, "MedRetAPI": 0.5, "MedDBOps": 0.5,
})
UNKNOWN_TASK_WEIGHT = 0.6
REFERENCE_WEIGHTS = (0.6, 0.25, 0.15)  # task weight, reference length, question length
CRITERIA_WEIGHTS = (0.35, 0.25, 0.20, 0.20)  # topics, must_warn, must_not, guideline question
OTHER_DIFFICULTY = 0.5
ZERO_SPAN = 0.5
_DATED_GUIDELINE = re.compile(r"(?<!\d)20[12]\d年")


def minmax(values: Sequence[float]) -> list[float]:
    """(v − min) / (max − min); every value 0.5 when max == min."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high == low:
        return [ZERO_SPAN] * len(values)
    return [(value - low) / (high - low) for value in values]


def question_length(item: Item) -> int:
    """Characters of the question, or of every message when the item is a chat."""
    if item.question is not None:
        return len(item.question)
    return sum(len(message["content"]) for message in item.messages or ())


def task_weight(task: str) -> float:
    return TASK_WEIGHTS.get(task, UNKNOWN_TASK_WEIGHT)


def is_guideline_question(item: Item) -> bool:
    """Guideline questions age with the guideline: the id says GUIDELINE, or the text 指南 or a dated year."""
    text = "\n".join(message["content"] for message in item.chat_messages())
    return "GUIDELINE" in item.id or "指南" in text or _DATED_GUIDELINE.search(text) is not None


def reference_features(item: Item) -> tuple[float, ...]:
    return (task_weight(item.task), float(len(str(item.gold))), float(question_length(item)))


def criteria_features(item: Item) -> tuple[float, ...]:
    gold = item.gold

    def listed(key: str) -> bool:
        return bool(gold.get(key))

    return (float(len(gold.get("expected_topics") or ())), float(listed("must_warn")),
            float(listed("must_not") or listed("patient_must_not_phrases")), float(is_guideline_question(item)))


Features = Callable[[Item], tuple[float, ...]]
FORMULAS: Mapping[str, tuple[Features, tuple[float, ...]]] = MappingProxyType({
    "reference": (reference_features, REFERENCE_WEIGHTS),
    "criteria": (criteria_features, CRITERIA_WEIGHTS),
})


def weighted_sums(items: Sequence[Item], features: Features, weights: tuple[float, ...]) -> list[float]:
    """Σ weight · (feature min-max normalised over ``items``), per item."""
    rows = [features(item) for item in items]
    columns = [minmax([row[k] for row in rows]) for k in range(len(weights))]
    return [sum(w * column[i] for w, column in zip(weights, columns, strict=True)) for i in range(len(items))]


def difficulties(items: Iterable[Item]) -> dict[str, float]:
    """Item id → difficulty in [0, 1] within its track (see the module docstring)."""
    groups: dict[tuple[str, str], list[Item]] = {}
    result: dict[str, float] = {}
    for item in items:
        if item.gold_type in FORMULAS:
            groups.setdefault((item.track, item.gold_type), []).append(item)
        else:
            result[item.id] = OTHER_DIFFICULTY
    raw_by_track: dict[str, list[tuple[str, float]]] = {}
    for (track, gold_type), members in sorted(groups.items()):
        features, weights = FORMULAS[gold_type]
        sums = weighted_sums(members, features, weights)
        raw_by_track.setdefault(track, []).extend((item.id, total) for item, total in zip(members, sums, strict=True))
    for pairs in raw_by_track.values():
        result.update(zip((item_id for item_id, _ in pairs), minmax([total for _, total in pairs]), strict=True))
    return result
