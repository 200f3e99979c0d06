"""Parsing model output: JSON objects, tool calls, schema checks, final answers (catalogue 17–20)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from eval._checks import require_mapping, require_str


def _balanced_span_end(text: str, start: int) -> int | None:
    """Index just past the ``}`` that closes the ``{`` at ``start``; braces in "strings" are ignored."""
    depth = 0
    in_string = False
    escaped = False
    for position in range(start, len(text)):
        char = text[position]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return position + 1
    return None


def extract_json(text: str) -> dict[str, Any] | None:
    """The first ``{...}`` span, tried from each ``{`` left to right, that json.loads to a dict; else None."""
    require_str("text", text)
    start = text.find("{")
    while start != -1:
        end = _balanced_span_end(text, start)
        if end is not None:
            try:
                value = json.loads(text[start:end])
            except (ValueError, RecursionError):
                value = None
            if isinstance(value, dict):
                return value
        start = text.find("{", start + 1)
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
