"""Gold types the LLM judge scores: the judge package builds the request for each contract.

``reference`` (the judge sees the reference answer), ``criteria`` (topics, required warnings,
forbidden statements) and ``probe`` (abstain on a non-existent entity / refute a false premise).
"""

from __future__ import annotations

from eval.items import Item
from eval.scorers.registry import NeedsJudge, register


@register("reference")
def score_reference(item: Item, answer: str) -> NeedsJudge:
    return NeedsJudge("reference")


@register("criteria")
def score_criteria(item: Item, answer: str) -> NeedsJudge:
    return NeedsJudge("criteria")


@register("probe")
def score_probe(item: Item, answer: str) -> NeedsJudge:
    return NeedsJudge("probe")
