"""Gold types the LLM judge scores: the judge package builds the request for each contract.

``reference`` (the judge sees the reference answer), ``criteria`` (topics, required warnings,
forbidden statements) and ``probe`` (abstain on a non-existent entity / refute a false premise).
A reference item with an objective check is also scored by it (``eval.scorers.checked``).
"""

from __future__ import annotations

from eval.items import Item
from eval.scorers.checked import checked_or_judged
from eval.scorers.registry import NeedsJudge, register


@register("reference")
def score_reference(item: Item, answer: str) -> NeedsJudge:
    return NeedsJudge("reference") if item.check is None else checked_or_judged(item, answer, "reference")


@register("criteria")
def score_criteria(item: Item, answer: str) -> NeedsJudge:
    return NeedsJudge("criteria")


@register("probe")
def score_probe(item: Item, answer: str) -> NeedsJudge:
    return NeedsJudge("probe")
