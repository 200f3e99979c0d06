"""Parsing model output: JSON objects, tool calls, schema checks, final answers (catalogue 17–20)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from eval._checks import require_mapping, require_str

_BRACE_SCAN_TOKEN = re.compile(r'[{}"\\]')
_OUTSIDE, _IN_STRING, _ESCAPED = 0, 1, 2
_JSON_DECODER = json.JSONDecoder()


def _merge_open_starts(kept: list[list[int]], merged: list[list[int]]) -> list[list[int]]:
    """Two stacks of open starts whose scans now read the text alike, aligned at their tops (depth 1).

    A group holds the starts at one depth; the smaller stack and, per depth, the smaller group are
    folded into the larger, so every start is moved O(log n) times over a whole scan.
    """
    if len(kept) < len(merged):
        kept, merged = merged, kept
    for depth in range(1, len(merged) + 1):
        big, small = kept[-depth], merged[-depth]
        if len(big) < len(small):
            big, small = small, big
            kept[-depth] = big
        big.extend(small)
    return kept


def _balanced_span_ends(text: str) -> dict[int, int]:
    """{s: e} for every ``{`` at s whose own scan closes: e is just past the ``}`` that brings the
    count of ``{`` minus ``}`` back to 0, braces inside "strings" ignored (backslash escapes the next
    character); a ``{`` that never closes is absent.

    Each start scans with its own idea of what is inside a string (a ``{`` inside an earlier start's
    string begins outside one), but a scan is only ever outside a string, inside one, or just past a
    backslash inside one. Starts are therefore kept in at most three groups by that state, each a
    stack of open starts by depth; groups that reach the same state read the rest of the text alike
    and are merged. One pass over the ``{ } " \\`` characters: O(n log n) at worst, O(n) in practice.
    """
    ends: dict[int, int] = {}
    open_by_state: dict[int, list[list[int]]] = {}
    escaped_position = -1  # the character a scan in the _ESCAPED state skips

    def settle(state: int, stack: list[list[int]], into: dict[int, list[list[int]]]) -> None:
        if stack:  # a scan with no open start has nothing left to find
            into[state] = _merge_open_starts(into[state], stack) if state in into else stack

    for token in _BRACE_SCAN_TOKEN.finditer(text):
        position, char = token.start(), token.group()
        if _ESCAPED in open_by_state and escaped_position < position:
            # the escaped character was an ordinary one, between tokens
            settle(_IN_STRING, open_by_state.pop(_ESCAPED), open_by_state)
        following: dict[int, list[list[int]]] = {}
        for state, stack in open_by_state.items():
            if state == _ESCAPED:  # this character is the escaped one
                settle(_IN_STRING, stack, following)
            elif state == _IN_STRING:
                if char == '"':
                    settle(_OUTSIDE, stack, following)
                elif char == "\\":
                    escaped_position = position + 1
                    settle(_ESCAPED, stack, following)
                else:
                    settle(_IN_STRING, stack, following)
            else:
                if char == "{":
                    stack.append([position])
                elif char == "}":
                    for start in stack.pop():
                        ends[start] = position + 1
                settle(_IN_STRING if char == '"' else _OUTSIDE, stack, following)
        if char == "{" and _OUTSIDE not in open_by_state:
            settle(_OUTSIDE, [[position]], following)  # every start scans from outside a string
        open_by_state = following
    return ends


FAILED_DECODE_BUDGET_PER_CHAR = 16


def extract_json(text: str) -> dict[str, Any] | None:
    """The first ``{...}`` span, tried from each ``{`` left to right, that json.loads to a dict; else None.

    A span runs from a ``{`` to the ``}`` that brings the count of ``{`` minus ``}`` back to 0,
    ignoring braces inside "strings" (a backslash escapes the next character); a ``{`` with no such
    ``}`` is not tried. The spans come from one pass (``_balanced_span_ends``), not one scan per
    ``{``, so text full of unmatched ``{`` costs linear time. Each span is decoded in place with
    ``JSONDecoder.raw_decode(text, start)``, which accepts exactly when ``json.loads(span)`` would: a
    valid object read from the start closes at the span's end, and the decoder never reads past
    it. A span nested too deep for the decoder (RecursionError) counts as not loading.

    Bound on untrusted text: each failed decode is charged the characters it read, from its start
    to where the decoder stopped (its whole span for a RecursionError or other ValueError). Once
    the charges pass FAILED_DECODE_BUDGET_PER_CHAR × len(text), no further span is tried and the
    answer is None, so decoding work stays linear. Reaching it takes more than 16 failed decodes
    that each read much of the text (almost-valid objects nested in one another, such as
    ``'{"a": ' * 5000 + '}' * 5000``); ordinary replies fail a few characters in.
    """
    require_str("text", text)
    ends = _balanced_span_ends(text)
    budget = FAILED_DECODE_BUDGET_PER_CHAR * len(text)
    for start in sorted(ends):
        if budget < 0:
            return None
        try:
            value, _ = _JSON_DECODER.raw_decode(text, start)
        except json.JSONDecodeError as error:
            budget -= error.pos - start + 1
            continue
        except (ValueError, RecursionError):
            budget -= ends[start] - start
            continue
        if isinstance(value, dict):
            return value
    return None


_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_CALL = re.compile(rf"({_NAME})\((.*)\)", re.DOTALL)
_ARGUMENT = re.compile(
    rf"""\s*({_NAME})\s*=\s*(?:
        "((?:[^"\\]|\\.)*)"      # double-quoted string; a backslash escapes the next character
      | (-?\d+\.\d+)(?![\w.])    # float such as 0.5 or -1.25
      | (-?\d+)(?![\w.])         # int such as 3 or -2
      | (True|False|None)(?!\w)  # Python constants
    )\s*""",
    re.VERBOSE | re.DOTALL,
)
_ESCAPED_CHAR = re.compile(r"\\(.)", re.DOTALL)
_CONSTANTS = {"True": True, "False": False, "None": None}


def parse_tool_call(text: str) -> dict[str, Any] | None:
    """Parse ``name(key=value, ...)`` into {"name", "args"}; None when malformed.

    Grammar: name and keys are letters/digits/_ not starting with a digit; no space before ``(``;
    arguments are comma-separated ``key=value`` pairs with optional spaces around keys, ``=`` and
    commas, no trailing comma; a value is a double-quoted string (backslash escapes the next
    character), an int, a float, True, False or None. A repeated key is malformed.
    """
    require_str("text", text)
    call = _CALL.fullmatch(text.strip())
    if call is None:
        return None
    name, body = call.group(1), call.group(2)
    args: dict[str, Any] = {}
    if body.strip() == "":
        return {"name": name, "args": args}
    position = 0
    while True:
        match = _ARGUMENT.match(body, position)
        if match is None:
            return None
        key, string_value, float_value, int_value, constant = match.groups()
        if key in args:
            return None
        if string_value is not None:
            args[key] = _ESCAPED_CHAR.sub(r"\1", string_value)
        elif float_value is not None:
            args[key] = float(float_value)
        elif int_value is not None:
            args[key] = int(int_value)
        else:
            args[key] = _CONSTANTS[constant]
        position = match.end()
        if position == len(body):
            return {"name": name, "args": args}
        if body[position] != ",":
            return None
        position += 1  # a comma must be followed by another pair: a trailing comma fails the next match


_SCHEMA_TYPES = {
    "str": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "list": lambda v: isinstance(v, list),
}


def validate_output(text: str, schema: Mapping[str, str]) -> list[str]:
    """Problems of a JSON reply against {field: type}: "missing: f" / "wrong type: f" in schema order,
    then "extra: f" in object order; ["invalid json"] or ["not an object"] when it cannot be checked.
    """
    require_str("text", text)
    require_mapping("schema", schema)
    for field, type_name in schema.items():
        if type_name not in _SCHEMA_TYPES:
            raise ValueError(f"schema[{field!r}] must be one of {sorted(_SCHEMA_TYPES)}, got {type_name!r}")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return ["invalid json"]
    if not isinstance(value, dict):
        return ["not an object"]
    problems = []
    for field, type_name in schema.items():
        if field not in value:
            problems.append(f"missing: {field}")
        elif not _SCHEMA_TYPES[type_name](value[field]):
            problems.append(f"wrong type: {field}")
    problems.extend(f"extra: {field}" for field in value if field not in schema)
    return problems


def final_answer(text: str) -> str:
    """Text after the last "Answer:" up to the next newline, stripped; else the last non-blank line."""
    require_str("text", text)
    marker = text.rfind("Answer:")
    if marker != -1:
        rest = text[marker + len("Answer:") :]
        newline = rest.find("\n")
        return (rest if newline == -1 else rest[:newline]).strip()
    for line in reversed(text.split("\n")):
        if line.strip():
            return line.strip()
    return ""
