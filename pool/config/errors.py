"""Turn pydantic validation errors into ``file:line: field: what is wrong; what to do`` lines.

Pydantic's messages are written for Python callers ("Input should be a valid dictionary or
instance of Model"); a person editing YAML needs the line, the key path as written in the file,
and a hint. Values of ``api_key_env`` are never echoed: they may be a pasted key.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails
from yaml.nodes import Node, ScalarNode

from pool.config.schema import BACKEND_CLASSES, Defaults, Judge, Model, PoolFile
from pool.config.yaml_lines import format_path, locate
from runners.settings import ANSWER_CHARS_RANGE, MAX_CONCURRENCY, MAX_TIMEOUT_S, RESPONSE_BYTES_RANGE

_SECRET_KEYS = frozenset({"api_key", "apikey", "key", "token", "api_token", "secret", "password"})
# The backend types, as the runners declare them: "openai (any OpenAI-compatible server or API), ..."
_BACKEND_TYPES = ", ".join(f"{name} ({cls.summary})" if cls.summary else name for name, cls in BACKEND_CLASSES.items())


@dataclass(frozen=True)
class Issue:
    """One problem in a pool file; ``str()`` gives the line a person reads."""

    file: str
    line: int | None
    field: str
    message: str
    column: int | None = None

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}" + (f":{self.column}" if self.column else "")
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


def issues_from_errors(errors: Sequence[ErrorDetails], root: Node, file: str) -> list[Issue]:
    """One :class:`Issue` per distinct (line, field, message), sorted by line."""
    seen: dict[tuple[int, str, str], Issue] = {}
    for error in errors:
        loc = tuple(error["loc"])
        if error["type"] == "too_short" and any(
            tuple(other["loc"][: len(loc)]) == loc and other is not error for other in errors
        ):
            continue  # pydantic adds "too short" when the only items failed; noise
        if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
            loc += ("type",)
        line, path, node = locate(root, loc)
        raw = node.value if isinstance(node, ScalarNode) else None
        field = format_path(path)
        issue = Issue(file, line, field, _message(error, loc, path, raw))
        seen.setdefault((line, field, issue.message), issue)
    return sorted(seen.values(), key=lambda i: (i.line or 0, i.field))


def _message(error: ErrorDetails, loc: tuple[Any, ...], path: tuple[Any, ...], raw: str | None) -> str:
    kind, value = error["type"], error.get("input")
    shown = "" if _may_hold_secret(path, value, raw) else f", got {describe(value, raw)}"
    last = path[-1] if path else ""
    if kind == "finite_number":
        return f"must be a finite number{shown}; {_RANGE_HINTS.get(str(last), 'write a number')}"
    if kind in _RANGE_ERRORS:
        hint = _RANGE_HINTS.get(str(last))
        return f"{error['msg']}{shown}" + (f"; {hint}" if hint else "")
    if kind == "too_short":
        return "must not be empty; add at least one entry"
    if kind == "missing":
        return f"required field '{last}' is missing; add it"
    if kind == "extra_forbidden":
        return _unknown_key_message(str(last), loc)
    if kind == "union_tag_invalid":
        return f"unknown backend type '{error['ctx']['tag']}'; use one of: {_BACKEND_TYPES}"
    if kind == "union_tag_not_found":
        return f"required field 'type' is missing; use one of: {_BACKEND_TYPES}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"expected a mapping (indented key: value lines){shown}"
    if kind in ("list_type", "tuple_type"):
        return f"expected a list ([a, b] or '- item' lines){shown}"
    if kind == "string_type":
        return f"expected text{shown}; put the value in quotes"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"expected a whole number{shown}"
    if kind in ("float_type", "float_parsing"):
        return f"expected a number{shown}"
    if kind == "value_error":
        return str(error["msg"]).removeprefix("Value error, ")
    if kind == "pool_reference":
        return str(error["msg"])
    if kind == "string_pattern_mismatch" and path[:1] == ("backends",):
        return "backend names use letters, digits and . _ - (starting with a letter or digit)"
    return f"{error['msg']}{shown}"


_RANGE_ERRORS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"})
_RANGE_HINTS = {
    "timeout_s": f"give the seconds one attempt may take: above 0, at most {MAX_TIMEOUT_S}",
    "max_concurrency": f"give the parallel requests this backend gets: 1 to {MAX_CONCURRENCY}",
    "max_response_bytes": "give the cap on one response body in bytes: {} (1 KiB) to {} (1 GiB)".format(
        *RESPONSE_BYTES_RANGE
    ),
    "max_answer_chars": "give the cap on one answer in characters: {} to {}".format(*ANSWER_CHARS_RANGE),
    "requests_per_minute": "give a rate above 0, or leave the key out for no rate limit",
    "temperature": "use a value from 0 to 2",
    "top_p": "use a value above 0 and at most 1",
}


def _may_hold_secret(path: tuple[Any, ...], value: Any, raw: str | None) -> bool:
    """Values never echoed: api_key_env (often the pasted key) and anything with an '@'
    (a URL's user:password@)."""
    return "api_key_env" in path or any(isinstance(v, str) and "@" in v for v in (value, raw))


def _unknown_key_message(key: str, loc: tuple[Any, ...]) -> str:
    block = _block_at(loc)
    allowed = list(block.model_fields) if block else []
    message = f"unknown key '{key}'"
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    if close:
        message += f"; did you mean '{close[0]}'?"
    if key.lower() in _SECRET_KEYS:
        message += (
            "; keys never go in the pool file: export the key in an environment "
            "variable and set api_key_env: VAR_NAME on the backend"
        )
    elif block is Defaults and key in Model.model_fields:
        message += "; it cannot be a default, set it on each model"
    elif loc[:1] == ("backends",) and len(loc) >= 4:
        owners = [t for t, cls in BACKEND_CLASSES.items() if key in cls.model_fields]
        if key == "base_url" and loc[2] == "llamacpp":
            message += (
                "; llamacpp servers get their URL at run time: remove it (use type: "
                "openai for a server you run yourself)"
            )
        elif owners:
            message += f"; '{key}' is only for {' and '.join(owners)} backends"
    if allowed and not close:
        message += f"; allowed keys: {', '.join(allowed)}"
    return message


def _block_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """Which schema block a loc ending in an unknown key points into."""
    if len(loc) == 1:
        return PoolFile
    if loc[0] == "backends" and len(loc) >= 4:
        return BACKEND_CLASSES.get(str(loc[2]))
    blocks: dict[str, type[BaseModel]] = {"models": Model, "defaults": Defaults, "judge": Judge, "judges": Judge}
    return blocks.get(str(loc[0]))


def describe(value: Any, raw: str | None = None) -> str:
    """A short, YAML-flavoured description of a value for 'got ...'.

    ``raw`` is the scalar as written; shown when YAML turned it into something else
    (``12:30`` is the integer 750 in YAML 1.1).
    """
    if raw is not None and not isinstance(value, str) and raw.lower() != str(value).lower():
        return f"{raw!r}, which YAML reads as {describe(value)}"
    if value is None:
        return "nothing (empty value)"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return f"text {text!r}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__
