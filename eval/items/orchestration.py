"""Contamination-resistant orchestration items derived from criteria golds (``--orchestration``).

Specialty routing asks a model to send a question to the right specialist. The question text and
its expected ``system:topic`` domain already exist in criteria suites; what is new is the task,
so it cannot have been memorised. Each criteria item with a domain becomes one routing item whose
options are its own domain plus up to ``distractors`` other domains of the same suite, chosen and
ordered by a hash of the item id (deterministic, no RNG state).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from eval.items.item import Item, Source

ROUTING_TASK = "specialty_routing"
ROUTING_PROMPT = (
    "你是分诊助手。请为下面的问题选择最合适的专科，只回答一个选项中的专科代码（system:topic）。\n问题：{question}"
)
OPTION_LETTERS = "ABCDEFGHIJ"


def _rank(seed: str, value: str) -> str:
    return hashlib.sha256(f"{seed}|{value}".encode()).hexdigest()


def derive_routing_items(items: Sequence[Item], distractors: int = 5) -> list[Item]:
    """One routing item per criteria item that has a domain (see the module docstring)."""
    if not 1 <= distractors <= len(OPTION_LETTERS) - 1:
        raise ValueError(f"distractors must be between 1 and {len(OPTION_LETTERS) - 1}")
    criteria = [i for i in items if i.gold_type == "criteria" and i.domain and i.question and i.scorable]
    domains_by_suite: dict[str, set[str]] = {}
    for item in criteria:
        domains_by_suite.setdefault(item.suite, set()).add(item.domain)  # type: ignore[arg-type]
    derived = []
    for item in criteria:
        gold = item.domain
        assert gold is not None and item.question is not None
        others = sorted(domains_by_suite[item.suite] - {gold}, key=lambda d: _rank(item.id, d))[:distractors]
        if not others:
            continue  # a suite with one domain has nothing to route between
        choices = sorted([gold, *others], key=lambda d: _rank(item.id + "#order", d))
        derived.append(
            Item(
                id=Item.make_id(item.suite, ROUTING_TASK, item.local_id),
                suite=item.suite,
                track="orchestration",
                task=ROUTING_TASK,
                gold_type="routing",
                gold=gold,
                source=Source(item.source.path, item.source.line),
                question=ROUTING_PROMPT.format(question=item.question),
                options=tuple(zip(OPTION_LETTERS, choices, strict=False)),
                domain=gold,
                meta={"derived_from": item.id},
            )
        )
    return derived
