"""Orchestration scorers, judge-free: specialty routing and tool decision (both accuracy 0/1)."""

from __future__ import annotations

from eval.items import Item
from eval.items.scores import Score
from eval.scorers.answer_parsing import clean_answer
from eval.scorers.orchestration_parsing import parse_routing, parse_tool_decision
from eval.scorers.registry import deterministic_score, register


@register("routing")
def score_routing(item: Item, answer: str) -> Score:
    """value = 1 when the slug picked (by slug or option letter) is the gold slug (case-insensitive)."""
    text, notes = clean_answer(answer)
    parsed = parse_routing(text, item.options)
    value = float(parsed.value is not None and parsed.value.lower() == item.gold.lower())
    return deterministic_score(
        value, parsed.value, (*notes, *parsed.notes), passed=bool(value), metrics={"accuracy": value}
    )


@register("tool_decision")
def score_tool_decision(item: Item, answer: str) -> Score:
    """value = 1 when the action taken ("call" or "direct") is the gold one; scored symmetrically,
    so calling when not needed costs as much as not calling when needed. An empty answer is neither."""
    instructions = "\n".join(message["content"] for message in item.chat_messages())
    parsed = parse_tool_decision(answer, instructions)
    value = float(parsed.value == item.gold)
    return deterministic_score(value, parsed.value, parsed.notes, passed=bool(value), metrics={"accuracy": value})
