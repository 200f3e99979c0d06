"""Prompt building: template slots, few-shot selection, conversation truncation (catalogue 15, 16, 25)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from eval._checks import require_int, require_mapping, require_sequence, require_str, require_str_sequence

_SLOT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def fill_template(template: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """Replace each ``{name}`` slot found in ``values`` by str(value); other slots and braces stay as text.

    Returns {"text": filled text, "missing": unfilled slot names, each once, in order of first appearance}.
    Replacement is a single pass, so a value that itself contains ``{slot}`` is not expanded again.
    """
    require_str("template", template)
    require_mapping("values", values)
    missing: dict[str, None] = {}

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in values:
            return str(values[name])
        missing.setdefault(name, None)
        return match.group(0)

    return {"text": _SLOT.sub(substitute, template), "missing": list(missing)}


def select_examples(query: str, pool: list[str], k: int) -> list[int]:
    """Indices of up to k pool examples sharing > 0 distinct lowercased words with the query.

    Highest overlap first, ties by lower pool index.
    """
    query_words = set(require_str("query", query).lower().split())
    require_str_sequence("pool", pool)
    require_int("k", k, minimum=0)
    scored = []
    for index, example in enumerate(pool):
        overlap = len(query_words & set(example.lower().split()))
        if overlap > 0:
            scored.append((-overlap, index))
    scored.sort()
    return [index for _, index in scored[:k]]


def truncate_conversation(messages: list[dict[str, str]], budget: int) -> list[dict[str, str]]:
    """Keep every system message, then the newest others while Σ kept words ≤ budget; original order.

    Tokens are whitespace-split words. The walk from newest to oldest stops at the first message
    that does not fit, so the kept history is always a contiguous recent tail.
    """
    require_sequence("messages", messages)
    require_int("budget", budget)
    sizes = []
    for index, message in enumerate(messages):
        require_mapping(f"messages[{index}]", message)
        if "role" not in message or "content" not in message:
            raise ValueError(f"messages[{index}] needs 'role' and 'content' keys")
        sizes.append(len(require_str(f"messages[{index}]['content']", message["content"]).split()))
    keep = [message["role"] == "system" for message in messages]
    total = sum(size for size, kept in zip(sizes, keep, strict=True) if kept)
    for index in range(len(messages) - 1, -1, -1):
        if keep[index]:
            continue
        if total + sizes[index] > budget:
            break
        total += sizes[index]
        keep[index] = True
    return [message for message, kept in zip(messages, keep, strict=True) if kept]
