"""Reading orchestration answers: the specialty a routing answer picked, and whether a tool-decision
answer called the tool or answered directly.

Routing slugs are ``system:topic`` with underscores in multi-word parts
(``infectious:skin_soft_tissue``), so a parser that stops at the first word misreads them. Here every
option slug is matched whole, tolerating spaces or hyphens for underscores, any case and a
full-width colon, and the last explicit answer wins.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from eval.metrics.text.parsing import extract_json, parse_tool_call
from eval.scorers.answer_parsing import (
    Parsed,
    after_last_marker,
    clean_answer,
    fold,
    parse_choice,
    strip_reasoning,
)

# ---------------------------------------------------------------------------------------------
# Routing

_ANY_SLUG = re.compile(r"(?<![A-Za-z0-9_-])([a-z][a-z0-9_-]*:[a-z0-9_-]*[a-z0-9])(?![A-Za-z0-9_-])", re.IGNORECASE)
_NOT_SLUGS = {"answer", "http", "https", "final", "correct"}


def slug_pattern(slug: str) -> re.Pattern[str]:
    """A tolerant pattern for one ``system:topic`` slug: any case, spaces around the colon, and
    ``_`` written as ``_``, ``-`` or a space; never part of a longer slug."""
    system, _, topic = slug.partition(":")

    def part(text: str) -> str:
        return "[_\\s-]".join(re.escape(word) for word in text.split("_"))

    return re.compile(rf"(?<![A-Za-z0-9_-]){part(system)}\s*[:/]\s*{part(topic)}(?![A-Za-z0-9_-])", re.IGNORECASE)


def _slug_mentions(text: str, slugs: Sequence[str] | None) -> list[tuple[int, int, str]]:
    """(start, end, slug) of every slug mention, in order; a mention inside a longer one is dropped."""
    found: list[tuple[int, int, str]] = []
    if slugs:
        for slug in slugs:
            found.extend((m.start(), m.end(), slug) for m in slug_pattern(slug).finditer(text))
    else:
        for m in _ANY_SLUG.finditer(text):
            if m.group(1).split(":")[0].lower() not in _NOT_SLUGS:
                found.append((m.start(), m.end(), m.group(1).lower()))
    found.sort()
    return [f for f in found if not any(o != f and o[0] <= f[0] and f[1] <= o[1] for o in found)]


def parse_routing(text: str, options: Sequence[tuple[str, str]] | None) -> Parsed:
    """The specialty slug a routing answer picked: a slug (from the options when there are any) or an
    option letter. Inside the last explicit answer the first slug named is the answer; without a
    marker the last slug named in the whole answer is."""
    slugs = [slug for _, slug in options] if options else None
    explicit = after_last_marker(text)
    if explicit:
        mentions = _slug_mentions(explicit.split("\n", 1)[0], slugs) or _slug_mentions(explicit, slugs)
        if mentions:
            return Parsed(mentions[0][2], ("explicit answer marker", "slug named"))
    mentions = _slug_mentions(text, slugs)
    if mentions:
        named = sorted({slug for *_, slug in mentions})
        notes = ["no answer marker: last slug named"] if not explicit else ["slug named outside the explicit answer"]
        if len(named) > 1:
            notes.append(f"several slugs named {named}: the last wins")
        return Parsed(mentions[-1][2], tuple(notes))
    if options:
        letter = parse_choice(text, options, multi=False)
        if letter.value is not None:
            slug = dict(options)[letter.value]
            return Parsed(slug, (*letter.notes, f"option {letter.value} → {slug}"))
        return Parsed(
            None,
            (*letter.notes, "no specialty slug or option letter found"),
            ambiguous=letter.ambiguous,
            candidates=letter.candidates,
        )
    return Parsed(None, ("no system:topic slug found",))


# ---------------------------------------------------------------------------------------------
# Tool decision

_TYPE_WORDS = r"(?:string|str|int|integer|number|float|double|bool|boolean|list|array|object|dict|date)"
_API_NAME = re.compile(r"API\s*描述\s*:\s*([A-Za-z_]\w*)")
_SIGNATURE = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)?\s*\)")
_TYPED_PARAM = re.compile(rf"(?<![\w.])([A-Za-z_]\w*)\s*\(\s*{_TYPE_WORDS}\b", re.IGNORECASE)
_CALL_KEYS = {
    "name",
    "tool",
    "tool_name",
    "function",
    "function_call",
    "tool_call",
    "api",
    "api_name",
    "arguments",
    "parameters",
    "args",
}
_TOOL_FENCE = re.compile(r"```\s*(?:tool|tool_call|tool_code|function|function_call|functions)\b", re.IGNORECASE)
_TOOL_TAG = re.compile(r"<\s*(?:tool_call|function_call|tool)\b", re.IGNORECASE)


def tool_vocabulary(instructions: str) -> tuple[set[str], set[str]]:
    """(tool names, parameter names) declared in an item's prompt: ``API 描述：Name（…`` headers,
    ``name(a, b)`` signatures, and ``param (string, …)`` parameter lists."""
    folded = fold(instructions)
    names = set(_API_NAME.findall(folded))
    params = {p.group(1) for p in _TYPED_PARAM.finditer(folded)}
    for name, arguments in _SIGNATURE.findall(folded):
        if name not in params:
            names.add(name)
            params.update(a.strip() for a in (arguments or "").split(",") if a.strip())
    return names, params - names


_OPEN_PAREN = re.compile(r"\s*\(")


def called_by_name(name: str, text: str) -> bool:
    """Whether ``name`` appears followed by ``(`` and not as the tail of a longer name: the regex
    ``(?<![\\w.])NAME\\s*\\(``, without compiling one pattern per tool name (a suite declares
    hundreds, and Python's regex cache holds 512 patterns in all)."""
    start = text.find(name)
    while start >= 0:
        before = text[start - 1] if start else ""
        if not (before.isalnum() or before in ("_", ".")) and _OPEN_PAREN.match(text, start + len(name)):
            return True
        start = text.find(name, start + 1)
    return False


def parse_tool_decision(text: str, instructions: str) -> Parsed:
    """ "call" when the answer emits a tool call, "direct" when it answers in prose, None when empty.

    A call is any of: a ``<tool_call>`` tag or a ```tool fence; a line that
    :func:`eval.parse_tool_call` reads as ``name(key=value, …)``; a JSON object naming a tool
    (``name``/``tool``/``function``/``arguments`` keys) or carrying the declared parameters; or a
    declared tool's name followed by ``(``.
    """
    raw, think_notes = strip_reasoning(text)
    cleaned, _ = clean_answer(raw)
    if not cleaned.strip():
        return Parsed(None, (*think_notes, "empty answer: neither a call nor a direct answer"))
    names, params = tool_vocabulary(instructions)
    if _TOOL_TAG.search(raw) or _TOOL_FENCE.search(raw):
        return Parsed("call", (*think_notes, "tool-call tag or ```tool block"))
    for line in (cleaned, *cleaned.split("\n")):
        call = parse_tool_call(line.strip().strip("`").strip())
        if call is not None:
            known = "declared tool" if call["name"] in names else "undeclared name"
            return Parsed("call", (*think_notes, f"call expression {call['name']}(…) ({known})"))
    value = extract_json(cleaned)
    if value is not None:
        keys = set(value)
        if keys & _CALL_KEYS or keys & params or keys & names:
            return Parsed("call", (*think_notes, f"JSON call object with keys {sorted(keys)[:6]}"))
    for name in sorted(names, key=len, reverse=True):
        if called_by_name(name, cleaned):
            return Parsed("call", (*think_notes, f"declared tool {name} followed by '('"))
    mentioned = sorted(name for name in names if name in cleaned)
    note = f"names {mentioned} without a call expression" if mentioned else "no tool call found"
    return Parsed("direct", (*think_notes, f"{note}: a direct answer"))
