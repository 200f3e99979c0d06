"""Find the one function call an answer makes: its name and its arguments, never by running code.

Forms read, in each code fence and in each stretch of prose between fences:

- ``Name(key=value, ...)`` and ``Name({...})``: parsed with ``ast`` and read node by node (string,
  number, true/false/null in JSON or Python spelling, lists, dicts); nothing is evaluated;
- a JSON object (``eval.metrics.text.parsing.extract_json``) that wraps the call: OpenAI ``tool_calls`` /
  ``function_call`` (``arguments`` as a dict or a JSON string), ``{"name"|"api"|"function"|"action": N,
  "arguments"|"parameters"|"params"|"args": {...}}``, or ``{"N": {...}}``;
- a bare arguments object, named by the nearest mention before it: the signature's name anywhere,
  or an identifier in backticks, in bold, after 调用 / call / API / 接口, or at the end of an HTTP
  path (``POST /api/x/N``). With no mention the name is the signature's (``name_source="implied"``:
  a question offers one API, and a bare object under "API 调用" calls it).

An answer often shows a simulated response after the call. With a signature, a bare object counts
as a call only if at least half of its keys are declared parameters (a response's keys are the
API's outputs), and the call kept is the one that best fits the signature: the declared name
first, then the most declared keys, the fewest undeclared ones, the earliest. Without a
signature the first named call wins, else the first object.

The text is read as written first; only when that finds no call is it read again with full-width
and Chinese punctuation (NFKC, “”‘’ and 、) normalised and trailing commas dropped, since those
rewrites could change a correct string value.
"""

from __future__ import annotations

import ast
import bisect
import json
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from eval._checks import require_str
from eval.metrics.text.parsing import extract_json
from eval.objective.api_call.signature import ApiSignature
from eval.objective.api_call.values import PUNCTUATION_TABLE

CallForm = str  # "python" | "tool_calls" | "wrapper" | "keyed" | "json"

MAX_CALL_STARTS = 64  # ``Name(`` occurrences tried per stretch of text
PARSE_BUDGET_PER_CHAR = 16  # characters handed to ast.parse, per character of the stretch
MAX_MENTION_SKIPS = 64  # mentions passed over (an argument's own key or value) when naming a bare object
_FENCE = re.compile(r"[ \t>]*(?:```|~~~)")
_CALL_START = re.compile(r"(?<![A-Za-z0-9_.$])([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)[ \t]*\(")
_NAME_KEYS = ("name", "api", "function", "action", "operation", "api_name", "function_name", "tool", "tool_name")
_ARGS_KEYS = ("arguments", "parameters", "params", "args", "input")
_IDENT = r"[A-Za-z_][A-Za-z0-9_.]*"
_MENTION = re.compile(
    rf"`(?P<tick>{_IDENT})`"
    rf"|\*\*(?P<bold>{_IDENT})\*\*"
    rf"|(?:调用|(?<![A-Za-z0-9_])(?:call|invoke|API|function|tool)(?![A-Za-z0-9_])|接口|函数)"
    rf"\s*[：:]?\s*[`*]*\s*(?P<verb>{_IDENT})"
    rf"|(?:POST|GET|PUT|PATCH|DELETE)\s+(?:\S*/)?(?P<http>{_IDENT})"
    rf"|(?P<before>{_IDENT})[`*]*\s*(?:接口|调用)",
    re.IGNORECASE,
)
_STOPWORDS = frozenset(
    {"api", "json", "http", "https", "post", "get", "put", "patch", "delete", "url", "true", "false", "null", "none"}
)
_LITERAL_NAMES = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}


@dataclass(frozen=True)
class FoundCall:
    """A call read from text. ``name_source``: "call" (written with the call), "text" (mentioned
    before a bare object), "implied" (the signature's; none written), "none" (no name known).
    ``args`` is the parsed arguments object; treat it as read-only."""

    name: str | None
    args: dict[str, Any]
    form: CallForm
    name_source: str
    position: int


class _NotLiteral(Exception):
    pass


def _literal(node: ast.AST) -> Any:
    """A JSON-like value from an ast node: constants, true/false/null names, ±numbers, lists, dicts."""
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (str, int, float, bool))
        or (isinstance(node, ast.Constant) and node.value is None)
    ):
        return node.value
    if isinstance(node, ast.Name) and node.id in _LITERAL_NAMES:
        return _LITERAL_NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _literal(node.operand)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                raise _NotLiteral
            out[key.value] = _literal(value)
        return out
    raise _NotLiteral


def _call_args(node: ast.AST) -> dict[str, Any] | None:
    """Arguments of ``N(k=v, ...)``, ``N({...})`` or ``N()``; None for any other shape."""
    if not isinstance(node, ast.Call):
        return None
    try:
        if not node.args and all(k.arg is not None for k in node.keywords):
            return {str(k.arg): _literal(k.value) for k in node.keywords}
        if len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Dict):
            return _literal(node.args[0])
    except _NotLiteral:
        return None
    return None


def _python_calls(stretch: str) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(offset, name, args) of each ``Name(...)`` in ``stretch`` whose arguments are literals.

    A call's extent is the shortest ``Name( … )`` that ast parses; the characters handed to the
    parser are bounded by PARSE_BUDGET_PER_CHAR × len(stretch), so text full of "(" stays cheap."""
    budget = PARSE_BUDGET_PER_CHAR * len(stretch) + 4096
    for count, match in enumerate(_CALL_START.finditer(stretch)):
        if count >= MAX_CALL_STARTS or budget <= 0:
            return
        close = stretch.find(")", match.end())
        while close != -1 and budget > 0:
            source = stretch[match.start() : close + 1]
            budget -= len(source)
            try:
                node = ast.parse(source, mode="eval").body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                close = stretch.find(")", close + 1)
                continue
            args = _call_args(node)
            if args is not None:
                yield match.start(), match.group(1), args
            break


def _segments(text: str) -> list[tuple[int, str, bool]]:
    """(offset, content, is_code) for each code fence and each stretch of prose around them."""
    pieces: list[tuple[int, str, bool]] = []
    start, offset, inside = 0, 0, False
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            pieces.append((start, text[start:offset], inside))
            start, inside = offset + len(line), not inside
        offset += len(line)
    pieces.append((start, text[start:], inside))
    return [p for p in pieces if p[1].strip()]


def _decode_args(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except (ValueError, RecursionError):
            decoded = extract_json(value)
        return decoded if isinstance(decoded, dict) else None
    return None


def _same_name(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and a.strip().casefold() == b.strip().casefold()


def _unwrap(obj: dict[str, Any], signature: ApiSignature | None) -> list[tuple[str | None, dict[str, Any], CallForm]]:
    """The call(s) a JSON object holds: (name, args, form); a bare object is (None, obj, "json")."""
    params = signature.param_names if signature else frozenset()
    calls = obj.get("tool_calls")
    if isinstance(calls, list):
        found = [c for item in calls if isinstance(item, dict) for c in _unwrap(item, signature) if c[2] != "json"]
        if found:
            return found
    for key in ("function_call", "tool_call", "function"):
        inner = obj.get(key)
        if isinstance(inner, dict) and isinstance(inner.get("name"), str):
            args = _decode_args(inner.get("arguments", inner.get("parameters", {})))
            if args is not None:
                return [(inner["name"], args, "tool_calls")]
    for name_key in (k for k in _NAME_KEYS if isinstance(obj.get(k), str) and k not in params):
        for args_key in (k for k in _ARGS_KEYS if k in obj and k not in params):
            args = _decode_args(obj[args_key])
            if args is not None:
                return [(obj[name_key], args, "wrapper")]
        if signature and _same_name(obj[name_key], signature.name):  # {"name": N, "k": v, ...} flattened
            rest = {k: v for k, v in obj.items() if k not in (name_key, "type", "id")}
            return [(obj[name_key], rest, "wrapper")]
    if len(obj) == 1:
        ((key, value),) = obj.items()
        keyed = (
            _same_name(key, signature.name) or bool(set(value) & params)
            if signature
            else any(c.isupper() for c in key[1:])  # CamelCase, not a nested snake_case field
        )
        if isinstance(value, dict) and re.fullmatch(_IDENT, key) and key not in params and keyed:
            return [(key, value, "keyed")]
    return [(None, obj, "json")]


def _looks_like_function(name: str) -> bool:
    """CamelCase, snake_case or dotted: a lowercase letter and an inner capital, "_" or "."."""
    return (
        len(name) >= 3
        and any(c.islower() for c in name)
        and (any(c.isupper() for c in name[1:]) or "_" in name or "." in name)
    )


def _mentions(text: str, signature: ApiSignature | None) -> list[tuple[int, str]]:
    """(position, name) of every function name mentioned in ``text`` (see the module docstring),
    in order; names the signature uses for parameters or enum values are left out."""
    excluded = set(_STOPWORDS)
    if signature:
        excluded |= {n.casefold() for n in signature.param_names} | {v.casefold() for v in signature.enum_values}
    found: list[tuple[int, str]] = []
    for match in _MENTION.finditer(text):
        group = next(g for g in ("tick", "bold", "verb", "http", "before") if match.group(g) is not None)
        name = match.group(group)
        if name.casefold() not in excluded and _looks_like_function(name):
            found.append((match.start(group), name))
    if signature and signature.name:
        pattern = rf"(?<![A-Za-z0-9_]){re.escape(signature.name)}(?![A-Za-z0-9_])"
        found += [(m.start(), m.group()) for m in re.finditer(pattern, text, re.IGNORECASE)]
    return sorted(found)


def _mentioned_name(mentions: list[tuple[int, str]], before: int, args: dict[str, Any]) -> str | None:
    """The last mention before offset ``before`` that is not one of ``args``' keys or string values;
    at most MAX_MENTION_SKIPS such mentions are skipped."""
    excluded = {v.casefold() for v in args.values() if isinstance(v, str)} | {k.casefold() for k in args}
    index = bisect.bisect_left(mentions, (before, ""))
    for _, name in reversed(mentions[max(0, index - MAX_MENTION_SKIPS) : index]):
        if name.casefold() not in excluded:
            return name
    return None


def _python_dict(stretch: str) -> dict[str, Any] | None:
    """A code block that is one Python dict literal ({'k': 'v'}), which JSON cannot read."""
    text = stretch.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        value = _literal(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, RecursionError, MemoryError, _NotLiteral):
        return None
    return value if isinstance(value, dict) else None


def _candidates(text: str, signature: ApiSignature | None) -> Iterator[FoundCall]:
    mentions = _mentions(text, signature)
    for offset, stretch, is_code in _segments(text):
        seen: list[dict[str, Any]] = []
        for at, name, args in _python_calls(stretch):
            seen.append(args)
            yield FoundCall(name, args, "python", "call", offset + at)
        obj = extract_json(stretch) or (_python_dict(stretch) if is_code else None)
        if obj is None:
            continue
        at = offset + max(stretch.find("{"), 0)
        for name, args, form in _unwrap(obj, signature):
            if args in seen:
                continue  # the object inside Name({...}) is that call's arguments, not another call
            if form != "json":
                yield FoundCall(name, args, form, "call", at)
                continue
            mentioned = _mentioned_name(mentions, at, args)
            if mentioned is not None:
                yield FoundCall(mentioned, args, form, "text", at)
            elif signature and signature.name:
                yield FoundCall(signature.name, args, form, "implied", at)
            else:
                yield FoundCall(None, args, form, "none", at)


def _choose(candidates: list[FoundCall], signature: ApiSignature | None) -> FoundCall | None:
    if signature is None or not signature.params:
        usable = [c for c in candidates if c.args or c.form != "json"]
        named = [c for c in usable if c.form != "json"]
        return (named or usable or [None])[0]
    params = signature.param_names
    usable = []
    for call in candidates:
        declared = len(set(call.args) & params)
        if call.form == "json" and (not call.args or 2 * declared < len(call.args)):
            continue  # not a call: a response, an example, a table as JSON
        if call.form != "json" and not call.args and not _same_name(call.name, signature.name):
            continue  # an empty ``f()`` mentioned in prose
        usable.append(call)
    if not usable:
        return None

    def fit(call: FoundCall) -> tuple[bool, int, int, int]:
        declared = len(set(call.args) & params)
        return (_same_name(call.name, signature.name), declared, declared - len(call.args), -call.position)

    return max(usable, key=fit)


def normalise_punctuation(text: str) -> str:
    """NFKC (full-width ，：（）｛｝ and digits to ASCII), “”‘’「」 and 、 to ASCII, trailing commas
    dropped."""
    text = unicodedata.normalize("NFKC", text).translate(PUNCTUATION_TABLE)
    return re.sub(r",(\s*[}\])])", r"\1", text)


def find_api_call(text: str, signature: ApiSignature | None = None) -> FoundCall | None:
    """The call ``text`` makes (see the module docstring), or None when it makes none."""
    require_str("text", text)
    variants = [text]
    normalised = normalise_punctuation(text)
    if normalised != text:
        variants.append(normalised)
    for variant in variants:
        chosen = _choose(list(_candidates(variant, signature)), signature)
        if chosen is not None:
            return chosen
    return None
