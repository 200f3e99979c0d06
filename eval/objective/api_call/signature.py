"""Read the API a question offers: its name and parameters (type, required or optional, default, enum).

Questions describe one API in prose, e.g. ``API 描述：RequestICUBed（ICU床位申请）描述：… 输入参数：
patient_id (string，必填)：… urgency_level (string，可选)：…，默认为 "routine"。… 输出：{…}``.
A parameter is ``name (type[，必填|可选|选填|非必填|required|optional][，默认为 v])：description``;
entries follow each other with or without a separator. The signature is what lets the call
checker tell a hallucinated key from an optional one and compare ``"10"`` with ``10`` by type.

Nested fields of an ``object`` (or ``list`` of objects) parameter are kept as its ``properties``.
An entry belongs to the open container when it is indented deeper than the container (two or more
spaces, or a ``-`` bullet), or, in a description that marks required/optional elsewhere, when it
carries no such marker itself (``vital_signs (object，必填)：包含：heart_rate (number): …``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from eval._checks import require_str

TYPE_WORDS: dict[str, str] = {
    "string": "string",
    "str": "string",
    "text": "string",
    "字符串": "string",
    "integer": "integer",
    "int": "integer",
    "long": "integer",
    "整数": "integer",
    "整型": "integer",
    "number": "number",
    "float": "number",
    "double": "number",
    "decimal": "number",
    "数值": "number",
    "数字": "number",
    "boolean": "boolean",
    "bool": "boolean",
    "布尔": "boolean",
    "布尔值": "boolean",
    "list": "array",
    "array": "array",
    "数组": "array",
    "列表": "array",
    "object": "object",
    "dict": "object",
    "map": "object",
    "json": "object",
    "对象": "object",
}
NUMERIC_TYPES = frozenset({"integer", "number"})

_OPTIONAL_MARK = re.compile(r"非必填|非必须|可选|选填|optional|not\s+required", re.IGNORECASE)
_REQUIRED_MARK = re.compile(r"必填|必须|必需|required|mandatory", re.IGNORECASE)
_NAME = re.compile(
    r"(?:API\s*(?:描述|名称|名)|函数名|接口名|接口名称|API\s*name|function\s*name)\s*[：:]\s*`?([A-Za-z_][\w.]*)",
    re.IGNORECASE,
)
_CAMEL = re.compile(r"(?<![\w.])([A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+)(?![\w.])")
_PARAMS_START = re.compile(r"输入参数|请求参数|参数列表|参数说明|Parameters|Arguments|Args", re.IGNORECASE)
_PARAMS_END = re.compile(
    r"输出\s*[：:]|返回(?:值|结果)?\s*[：:]|Output\s*:|Returns?\s*:|用户问题|用户提问", re.IGNORECASE
)
_ENTRY = re.compile(
    r"(?P<lead>[ \t\-*•]*)(?<![A-Za-z0-9_])(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"\s*[（(](?P<spec>[^（()）\n]{1,120})[）)]\s*[：:]"
)
_QUOTED_CODE = re.compile(r"[\"“”'‘’]([A-Za-z][A-Za-z0-9_\-]*)[\"“”'‘’]")
_DEFAULT = re.compile(
    r"(?:默认值?(?:为|是)?|defaults?(?:\s+(?:is|to|value))?)\s*[：:=]?\s*"
    r"(?P<v>\"[^\"]*\"|“[^”]*”|'[^']*'|‘[^’]*’|\[[^\]]*\]|true|false|null|True|False|None|-?\d+(?:\.\d+)?)",
    re.IGNORECASE,
)
_QUOTES = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"})


@dataclass(frozen=True)
class ApiParam:
    """One declared parameter. ``types`` is a union (``number/string`` → ("number", "string"));
    empty when the type word is unknown. ``required`` is None when the text says neither.
    ``enum`` holds the code-like values the description quotes ("routine", "urgent"): their
    presence makes the value enum-like, compared case-insensitively. ``properties`` are nested
    fields of an object (or of each object in a list)."""

    name: str
    types: tuple[str, ...] = ()
    required: bool | None = None
    description: str = ""
    has_default: bool = False
    default: Any = None
    enum: tuple[str, ...] = ()
    properties: tuple[ApiParam, ...] = ()


@dataclass(frozen=True)
class ApiSignature:
    """The API a question offers. ``name`` is None when the question names none."""

    name: str | None
    params: tuple[ApiParam, ...]

    def param(self, name: str) -> ApiParam | None:
        return next((p for p in self.params if p.name == name), None)

    @property
    def param_names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.params)

    @property
    def enum_values(self) -> frozenset[str]:
        return frozenset(v for p in self.params for v in (*p.enum, *(e for q in p.properties for e in q.enum)))


def _types(spec_tokens: list[str]) -> tuple[str, ...]:
    found: list[str] = []
    for token in spec_tokens:
        for part in re.split(r"[/|]", token):
            word = re.sub(r"[\[<].*$", "", part.strip()).lower()  # list[string] → list
            kind = TYPE_WORDS.get(word)
            if kind and kind not in found:
                found.append(kind)
    return tuple(found)


def _requirement(spec: str) -> bool | None:
    if _OPTIONAL_MARK.search(spec):
        return False
    return True if _REQUIRED_MARK.search(spec) else None


def _default(text: str) -> tuple[bool, Any]:
    match = _DEFAULT.search(text)
    if match is None:
        return False, None
    raw = match.group("v").translate(_QUOTES)
    if raw[0] in "\"'":
        return True, raw[1:-1]
    if raw[0] == "[":
        try:
            return True, json.loads(raw.replace("'", '"'))
        except ValueError:
            return False, None
    literals = {"true": True, "false": False, "null": None, "none": None}
    if raw.lower() in literals:
        return True, literals[raw.lower()]
    return True, float(raw) if "." in raw else int(raw)


def _depth(lead: str) -> int:
    """Indentation of an entry: spaces and bullet characters before its name, a tab counting 4."""
    return len(lead.replace("\t", "    "))


def _param_region(question: str) -> tuple[int, int]:
    """(begin, end) of the parameter list: after "输入参数" (or the start) up to "输出：" / "用户问题"."""
    start = _PARAMS_START.search(question)
    begin = start.end() if start else 0
    end = _PARAMS_END.search(question, begin)
    return begin, end.start() if end else len(question)


@dataclass
class _Entry:
    name: str
    spec: str
    depth: int
    body_start: int
    body_end: int = 0


def _entries(region: str) -> list[_Entry]:
    entries: list[_Entry] = []
    for match in _ENTRY.finditer(region):
        spec = match.group("spec")
        tokens = [t for t in re.split(r"[，,、;；\s]+", spec) if t]
        if not _types(tokens) and _requirement(spec) is None:
            continue  # "ISO 8601 (YYYY-MM-DD)：" and other parentheses that declare nothing
        if entries:
            entries[-1].body_end = match.start()
        entries.append(_Entry(match.group("name"), spec, _depth(match.group("lead")), match.end()))
    if entries:
        entries[-1].body_end = len(region)
    return entries


def _param(entry: _Entry, region: str, properties: tuple[ApiParam, ...] = ()) -> ApiParam:
    description = region[entry.body_start : entry.body_end].strip()
    tokens = [t for t in re.split(r"[，,、;；\s]+", entry.spec) if t]
    has_default, default = _default(entry.spec)
    if not has_default:
        has_default, default = _default(description)
    enum = tuple(dict.fromkeys(_QUOTED_CODE.findall(description)))
    return ApiParam(
        entry.name, _types(tokens), _requirement(entry.spec), description, has_default, default, enum, properties
    )


def parse_api_signature(question: str) -> ApiSignature | None:
    """The signature described in ``question``; None when it declares no parameter and names no API."""
    require_str("question", question)
    named = _NAME.search(question)
    begin, end = _param_region(question)
    region = question[begin:end]
    if named:
        name: str | None = named.group(1)
    else:
        camel = _CAMEL.search(question[:begin] or question)
        name = camel.group(1) if camel else None
    entries = _entries(region)
    marked = any(_requirement(e.spec) is not None for e in entries)
    params: list[ApiParam] = []
    container: _Entry | None = None
    nested: list[_Entry] = []

    def close() -> None:
        if container is not None:
            props = tuple(_param(e, region) for e in nested)
            params.append(_param(container, region, props))

    for entry in entries:
        unmarked = marked and _requirement(entry.spec) is None
        if container is not None and (entry.depth > container.depth + 1 or unmarked):
            nested.append(entry)
            continue
        close()
        container, nested = None, []
        kinds = _types([t for t in re.split(r"[，,、;；\s]+", entry.spec) if t])
        if "object" in kinds or "array" in kinds:
            container = entry
        else:
            params.append(_param(entry, region))
    close()
    if not params and name is None:
        return None
    unique = {p.name: p for p in reversed(params)}  # a repeated name keeps its first declaration
    return ApiSignature(name, tuple(p for p in params if unique[p.name] is p))
