"""The rubric verdict (``reference`` and ``criteria`` contracts) from a judge's reply.

JSON: the four dimensions (``coverage`` … or 覆盖度 / 准确性 / 安全性 / 溯源性), each an integer
0..10 — ``8``, ``8.0``, ``"8"``, ``"8分"`` and ``{"score": 8}`` are read as 8; ``7.5``, ``11`` and
``-1`` reject the reply — possibly nested one level (``{"scores": {...}}``), plus rationale,
grounding source, the warnings found, flags and the criteria contract's context labels.
Free text (``patterns``): ``coverage: 8`` / ``覆盖度：8分`` / ``准确性 7/10``, and ALL FOUR dimensions are
needed; a dimension given twice with different values rejects the reply.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from judge.parse.ladder import SHARED_ALIASES, FieldNames, as_strings, as_text, ladder, nfkc
from judge.rubric import (
    DIMENSIONS,
    RATIONALE_MAX_CHARS,
    SCORE_MAX,
    SCORE_MIN,
    ParseStage,
    Verdict,
    check_dimension_score,
)
from judge.side_labels import RUBRIC_SIDE, side_labels, side_labels_in_text
from judge.verdicts import ParseFailure

_DIMENSION_ALIASES: Mapping[str, tuple[str, ...]] = {
    "coverage": ("coverage", "覆盖度", "覆盖性", "覆盖"),
    "accuracy": ("accuracy", "准确性", "准确度", "准确"),
    "safety": ("safety", "安全性", "安全"),
    "grounding": ("grounding", "溯源性", "溯源", "有据性"),
}
FIELDS = FieldNames(
    {
        **_DIMENSION_ALIASES,
        **SHARED_ALIASES,
        "grounding_source": ("grounding_source", "groundingsource", "source", "依据来源", "主要依据", "来源"),
        "warnings_present": ("warnings_present", "present_warnings", "warnings", "已出现的警示", "出现的警示"),
        "context_awareness": ("context_awareness", "contextawareness", "情境把握", "情境感知", "情境"),
        "seeks_clarification": (
            "seeks_clarification",
            "seeksclarification",
            "asks_clarification",
            "请求澄清",
            "询问澄清",
        ),
    }
)
_GROUNDING_ALIASES = {
    "book": "book",
    "textbook": "book",
    "教材": "book",
    "教科书": "book",
    "guideline": "guideline",
    "guidelines": "guideline",
    "指南": "guideline",
    "临床指南": "guideline",
    "unsupported": "unsupported",
    "none": "unsupported",
    "无据": "unsupported",
    "无依据": "unsupported",
}

_NUMBER_TEXT = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*(?:分|/\s*10|points?)?\s*", re.IGNORECASE)


def _as_score(name: str, value: Any) -> int:
    """A JSON value as a rubric score: ints, whole floats (8.0) and number strings ("8", "8分").

    ``{"score": n}`` (a nested shape some judges write) is read as n. Anything else, out of range
    or not a whole number raises ValueError; nothing is rounded or clamped.
    """
    if isinstance(value, Mapping) and "score" in value:
        value = value["score"]
    if isinstance(value, str):
        match = _NUMBER_TEXT.fullmatch(nfkc(value))
        if match is None:
            raise ValueError(f"{name} must be an integer {SCORE_MIN}..{SCORE_MAX}, got {value!r}")
        number = match.group(1)
        value = float(number) if "." in number else int(number)
    if isinstance(value, float) and not isinstance(value, bool):
        if not value.is_integer():
            raise ValueError(f"{name} must be a whole number {SCORE_MIN}..{SCORE_MAX}, got {value!r}")
        value = int(value)
    return check_dimension_score(name, value)


def _grounding_source(value: Any) -> tuple[str | None, tuple[str, ...]]:
    if value is None:
        return None, ("grounding_source_missing",)
    key = nfkc(str(value)).strip().lower()
    if key in _GROUNDING_ALIASES:
        return _GROUNDING_ALIASES[key], ()
    return None, (f"grounding_source_invalid:{str(value)[:40]}",)


def _rubric_object(obj: Any, stage: ParseStage) -> Verdict | ParseFailure | None:
    if not isinstance(obj, Mapping):
        return None
    fields = FIELDS.read(obj)
    if not any(name in fields for name in DIMENSIONS):
        nested = [value for value in obj.values() if isinstance(value, Mapping)]
        inner = next((value for value in nested if any(FIELDS.name(key) in DIMENSIONS for key in value)), None)
        if inner is None:
            return None
        fields = {**FIELDS.read(obj), **FIELDS.read(inner)}
    missing = [name for name in DIMENSIONS if name not in fields]
    if missing:
        return ParseFailure(f"the verdict object lacks {', '.join(missing)}", stage)
    try:
        scores = {name: _as_score(name, fields[name]) for name in DIMENSIONS}
    except ValueError as problem:
        return ParseFailure(f"rejected score: {problem}", stage)
    rationale = as_text(fields.get("rationale"))
    if not rationale:  # the nested shape carries a rationale per dimension
        parts = [
            f"{name}: {as_text(fields[name].get('rationale'))}"
            for name in DIMENSIONS
            if isinstance(fields[name], Mapping) and fields[name].get("rationale")
        ]
        rationale = "; ".join(parts)[:RATIONALE_MAX_CHARS]
    source, source_flags = _grounding_source(fields.get("grounding_source"))
    labels, label_flags, stage = side_labels(fields, stage, RUBRIC_SIDE)
    return Verdict(
        **scores,
        rationale=rationale,
        grounding_source=source,  # type: ignore[arg-type]
        warnings_present=as_strings(fields.get("warnings_present")),
        flags=as_strings(fields.get("flags")) + source_flags + label_flags,
        parse_stage=stage,
        **labels,
    )


_LABEL_GAP = r"[\s*_`\"'#]*"
_ALIAS_NOTE = r"(?:[(（\[【][^)）\]】\n]{0,24}[)）\]】])?"
_SCORE_VALUE = r"(-?\d+(?:\.\d+)?)(?![\d.])(?!\s*(?:[-~～—–至到]|or|或)\s*\d)"


def _dimension_pattern(aliases: tuple[str, ...]) -> re.Pattern[str]:
    names = "|".join(re.escape(alias) for alias in sorted(aliases, key=len, reverse=True))
    return re.compile(
        rf"(?<![a-z])(?:{names})(?![a-z]){_LABEL_GAP}{_ALIAS_NOTE}{_LABEL_GAP}(?:得分|分数|评分|score)?"
        rf"{_LABEL_GAP}[:=]?{_LABEL_GAP}{_SCORE_VALUE}",
        re.IGNORECASE,
    )


_DIMENSION_PATTERNS = {name: _dimension_pattern(aliases) for name, aliases in _DIMENSION_ALIASES.items()}
_GROUNDING_SOURCE_TEXT = re.compile(
    r"grounding[_ ]source[\s*_`\"']*[:=][\s*_`\"']*(book|guideline|unsupported)", re.IGNORECASE
)


def _rubric_text(text: str) -> Verdict | ParseFailure | None:
    found: dict[str, str] = {}
    for name, pattern in _DIMENSION_PATTERNS.items():
        values = list(dict.fromkeys(match.group(1) for match in pattern.finditer(text)))
        if len(values) > 1:
            return ParseFailure(
                f"{name} is given more than once with different values ({', '.join(values)})", "patterns"
            )
        if values:
            found[name] = values[0]
    if not found:
        return None
    missing = [name for name in DIMENSIONS if name not in found]
    if missing:
        return ParseFailure(
            f"the text gives {', '.join(found)} but not {', '.join(missing)} (all four are needed)", "patterns"
        )
    try:
        scores = {name: _as_score(name, found[name]) for name in DIMENSIONS}
    except ValueError as problem:
        return ParseFailure(f"rejected score: {problem}", "patterns")
    source_match = _GROUNDING_SOURCE_TEXT.search(text)
    source = source_match.group(1).lower() if source_match else None
    labels, label_flags = side_labels_in_text(text, RUBRIC_SIDE)
    flags = ("parsed_from_text",) + (() if source else ("grounding_source_missing",)) + label_flags
    return Verdict(**scores, grounding_source=source, flags=flags, parse_stage="patterns", **labels)  # type: ignore[arg-type]


def parse_rubric(reply: str) -> Verdict | ParseFailure:
    """A rubric verdict (reference or criteria contract) from the judge's reply, or why not."""
    return ladder(reply, _rubric_object, _rubric_text, "rubric verdict")
