"""Gold types the LLM judge scores: the judge package builds the request for each contract.

``reference`` (the judge sees the reference answer), ``criteria`` (topics, required warnings,
forbidden statements) and ``probe`` (abstain on a non-existent entity / refute a false premise).
The contract each asks for is the one its declaration names (``eval.gold_types``). A reference
item with an objective check is also scored by it (``eval.scorers.checked``).
"""

from __future__ import annotations

from eval.gold_types import spec_of
from eval.items import Item
from eval.scorers.checked import checked_or_judged
from eval.scorers.registry import NeedsJudge, register


def needs_judge(item: Item) -> NeedsJudge:
    """Ask the judge under the contract declared for the item's gold type."""
    contract = spec_of(item.gold_type).judge_contract
    if contract is None:
        raise ValueError(f"{item.id}: gold type {item.gold_type!r} declares no judge contract (eval/gold_types.py)")
    return NeedsJudge(contract)


@register("reference")
def score_reference(item: Item, answer: str) -> NeedsJudge:
    return needs_judge(item) if item.check is None else checked_or_judged(item, answer, needs_judge(item).contract)


@register("criteria")
def score_criteria(item: Item, answer: str) -> NeedsJudge:
    return needs_judge(item)


@register("probe")
def score_probe(item: Item, answer: str) -> NeedsJudge:
    return needs_judge(item)
