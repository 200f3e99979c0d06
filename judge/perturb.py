"""A perturbed rubric request for re-judging (``pool.run --rejudge-sample N``).

A judge whose verdict moves when nothing but the presentation of the rubric moves is not
measuring the answer. The perturbation here lists the four rubric dimensions in reverse order
(grounding, safety, accuracy, coverage — renumbered) and asks for the JSON keys in that order;
every rule, the item and the fenced answer stay word for word. The parse ladder reads keys by
name, so the reply is parsed exactly as a first verdict is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from judge.contracts.framing import Message
from judge.rubric import DIMENSIONS

PERTURBATION = "dimensions_reversed"

_RUBRIC_HEADER = "【评分维度 / rubric】"
_NUMBERED = re.compile(r"^(\d+)\. ")
_JSON_DIMENSION = {name: re.compile(rf'"{name}": <[^>]*>') for name in DIMENSIONS}


def _reverse_rubric_block(text: str) -> str:
    """The numbered dimension list after the rubric header, in reverse order and renumbered."""
    start = text.index(_RUBRIC_HEADER)
    lines = text[start:].split("\n")
    entries: list[list[str]] = []
    end = 1
    for index, line in enumerate(lines[1:], 1):
        if _NUMBERED.match(line):
            entries.append([line])
        elif entries and line.strip():
            entries[-1].append(line)  # a dimension described on more than one line
        elif entries:
            break
        end = index + 1
    if len(entries) != len(DIMENSIONS):
        raise ValueError(
            f"expected {len(DIMENSIONS)} numbered rubric dimensions after {_RUBRIC_HEADER}, found {len(entries)}"
        )
    reordered = [
        _NUMBERED.sub(f"{number}. ", entry[0], count=1) + "".join("\n" + rest for rest in entry[1:])
        for number, entry in enumerate(reversed(entries), 1)
    ]
    return text[:start] + "\n".join([lines[0], *reordered, *lines[end:]])


def _reverse_json_keys(text: str) -> str:
    found = {name: pattern.search(text) for name, pattern in _JSON_DIMENSION.items()}
    if not all(found.values()):
        raise ValueError("the output format does not list all four dimension keys")
    spans = sorted((m.start(), m.end(), name) for name, m in found.items() if m is not None)
    pieces = [m.group(0) for m in (found[name] for name in reversed(DIMENSIONS)) if m is not None]
    out, cursor = [], 0
    for (begin, finish, _), piece in zip(spans, pieces, strict=False):
        out += [text[cursor:begin], piece]
        cursor = finish
    return "".join(out) + text[cursor:]


def reversed_dimensions(messages: Sequence[Message]) -> tuple[Message, ...]:
    """The rubric request with its dimensions described and requested in reverse order.

    Raises ValueError when the system message has no four-dimension rubric (a probe request).
    """
    system = next((m for m in messages if m["role"] == "system"), None)
    if system is None:
        raise ValueError("the judge request has no system message")
    changed = _reverse_json_keys(_reverse_rubric_block(system["content"]))
    return tuple({"role": m["role"], "content": changed} if m is system else dict(m) for m in messages)
