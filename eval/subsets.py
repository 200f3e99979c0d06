"""Nested, deterministic subsets: ``--subset mini|medium|large``.

Order every item once, then take a prefix, so mini ⊂ medium ⊂ large. The order is a two-level
round robin: across tasks (sorted by (track, task)), and within a task across its domains, so
the first pass over tasks covers every task; inside a (track, task, domain) bucket the longest
questions come first (a cheap difficulty heuristic: longer cases carry more findings to weigh),
ties by id.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import zip_longest
from typing import TypeVar

from eval.items import Item

SUBSET_SIZES = {"mini": 50, "medium": 200, "large": 1000}
T = TypeVar("T")


def _round_robin(groups: Sequence[Sequence[T]]) -> list[T]:
    sentinel = object()
    return [x for layer in zip_longest(*groups, fillvalue=sentinel) for x in layer if x is not sentinel]  # type: ignore[misc]


def _question_length(item: Item) -> int:
    if item.question is not None:
        return len(item.question)
    return sum(len(m["content"]) for m in item.messages or ())


def subset_order(items: Iterable[Item]) -> list[Item]:
    by_task: dict[tuple[str, str], dict[str, list[Item]]] = {}
    for item in items:
        by_task.setdefault((item.track, item.task), {}).setdefault(item.domain or "", []).append(item)
    per_task = []
    for key in sorted(by_task):
        buckets = [sorted(bucket, key=lambda i: (-_question_length(i), i.id)) for _, bucket in sorted(by_task[key].items())]
        per_task.append(_round_robin(buckets))
    return _round_robin(per_task)


def named_subset(items: Iterable[Item], name: str) -> list[Item]:
    if name not in SUBSET_SIZES:
        raise ValueError(f"unknown subset {name!r}; use one of {', '.join(SUBSET_SIZES)} or a file of item ids")
    return subset_order(items)[: SUBSET_SIZES[name]]
