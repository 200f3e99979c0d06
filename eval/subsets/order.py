"""The ranking the tiers are prefixes of: hard coverage seeds, then a round robin over buckets.

Following the med-agent-verifier README's mini-bench (hardest and most orthogonal first):

1. Coverage seeds (unless ``cover=False``, the CLI's ``--no-cover``): the hardest item of every
   reference task (the MedBench abilities), hardest first — so even the smallest tier holds every
   ability.
2. The other items go into (track, task, domain) buckets, each sorted hardest first; buckets are
   ordered by their hardest remaining member and swept round robin, one item per bucket per pass —
   every ability and specialty is laid out once before any is visited twice.

Ties fall to the item id, and bucket ties to the bucket key, so the order depends on the data only.
The tiers are prefixes — mini 30 ⊂ medium 100 ⊂ large (all) — so a smaller tier is always inside a
larger one. The orchestration track (probes, tool decisions, derived routing items) is not ranked:
those are frozen sets of their own, sent whole with ``--orchestration`` (see :func:`tier_candidates`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import zip_longest
from types import MappingProxyType

from eval.items import Item
from eval.subsets.heuristic import difficulties

TIER_SIZES: Mapping[str, int | None] = MappingProxyType({"mini": 30, "medium": 100, "large": None})  # None: all
ORCHESTRATION_TRACK = "orchestration"
Bucket = tuple[str, str, str]


def tier_candidates(items: Iterable[Item]) -> list[Item]:
    """The items a tier ranks: scorable and not on the orchestration track (whose sets run whole)."""
    return [item for item in items if item.scorable and item.track != ORCHESTRATION_TRACK]


def _round_robin(groups: Sequence[Sequence[Item]]) -> list[Item]:
    return [item for layer in zip_longest(*groups) for item in layer if item is not None]


def subset_order(items: Iterable[Item], *, cover: bool = True, difficulty: Mapping[str, float] | None = None) -> list[Item]:
    """Every item once, in tier order (module docstring); ``difficulty`` defaults to the heuristic's."""
    items = list(items)
    hardness = difficulty if difficulty is not None else difficulties(items)

    def hardest_first(item: Item) -> tuple[float, str]:
        return (-hardness[item.id], item.id)

    seeds: list[Item] = []
    if cover:
        by_task: dict[tuple[str, str], list[Item]] = {}
        for item in items:
            if item.gold_type == "reference":
                by_task.setdefault((item.track, item.task), []).append(item)
        seeds = sorted((min(group, key=hardest_first) for group in by_task.values()), key=hardest_first)
    seeded = {item.id for item in seeds}
    buckets: dict[Bucket, list[Item]] = {}
    for item in items:
        if item.id not in seeded:
            buckets.setdefault((item.track, item.task, item.domain or ""), []).append(item)
    ordered = sorted(((key, sorted(members, key=hardest_first)) for key, members in buckets.items()),
                     key=lambda entry: (-hardness[entry[1][0].id], entry[0]))
    return seeds + _round_robin([members for _, members in ordered])


def tier_size(name: str) -> int | None:
    """The tier's size (None: every item); ValueError naming the tiers for another name."""
    if name not in TIER_SIZES:
        raise ValueError(f"unknown subset {name!r}; use one of {', '.join(TIER_SIZES)} or a file of item ids")
    return TIER_SIZES[name]


def named_subset(items: Iterable[Item], name: str, *, cover: bool = True) -> list[Item]:
    """The tier ``name`` of ``items``, computed now: a prefix of :func:`subset_order`."""
    size = tier_size(name)
    order = subset_order(items, cover=cover)
    return order if size is None else order[:size]
