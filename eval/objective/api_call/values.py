"""Type-aware canonical forms of API argument values, so that equal meanings compare equal.

Two values match when their canonical forms are equal. The form depends on the declared type
(``eval.objective.api_call.signature.ApiParam``):

- numeric (integer/number): 10, 10.0 and "10" (also full-width "１０") → the same Decimal;
- boolean: true, "true", "True", "是", "yes" → True; false, "false", "否", "no" → False;
- string: NFKC, Chinese quotes → ASCII, whitespace runs → one space, trimmed; case-folded when the
  parameter is enum-like (its description quotes code values); a number given for a string is its
  decimal text (10234 ≡ "10234");
- any string that reads as a date or date-time: "2024-05-24" ≡ "2024/05/24" ≡ "2024年5月24日";
  a time "T15:30" ≡ " 15:30:00"; an offset "Z" ≡ "+00:00", "+0800" ≡ "+08:00"; a time with an
  offset never equals one without (they name different instants);
- list: the multiset of its items' forms (order ignored, repeats counted);
- object: its keys with their values' forms, nested fields typed by ``properties`` when declared.

Undeclared values (no signature) keep their JSON type: "10" and 10 differ there. Forms are tagged
tuples so that a number never equals a boolean or a string.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import unicodedata
from decimal import Decimal, InvalidOperation
from typing import Any

from eval.objective.api_call.signature import NUMERIC_TYPES, ApiParam

# Applied after NFKC (which already maps full-width ，：（）［］｛｝ and digits to ASCII).
PUNCTUATION_TABLE = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "「": '"', "」": '"', "、": ","})
TRUE_WORDS = frozenset({"true", "yes", "y", "是", "真", "对"})
FALSE_WORDS = frozenset({"false", "no", "n", "否", "假"})
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_DATE = re.compile(
    r"(?P<y>\d{4})\s*[-/.年]\s*(?P<m>\d{1,2})\s*[-/.月]\s*(?P<d>\d{1,2})\s*日?"
    r"(?:(?:\s*T\s*|\s+)(?P<H>\d{1,2})\s*[:：时]\s*(?P<M>\d{2})(?:\s*[:：分]\s*(?P<S>\d{2})(?:\.(?P<f>\d+))?)?\s*秒?"
    r"\s*(?P<tz>Z|[+-]\d{2}:?\d{2})?)?"
)
_PLACEHOLDER = re.compile(
    r"^\s*(?:<[^<>]*>|【[^】]*】|\[[^\]]*\])\s*$|待补充|待确认|待您|待定|请提供|请补充|未提供|TBD|TODO|placeholder|\?\?\?",
    re.IGNORECASE,
)


def normalise_text(text: str) -> str:
    """NFKC, then Chinese quotes and 、 to ASCII, whitespace runs to one space, trimmed."""
    return " ".join(unicodedata.normalize("NFKC", text).translate(PUNCTUATION_TABLE).split())


def is_placeholder(value: Any) -> bool:
    """A string that stands for a value still to be supplied: "<待补充>", "【待补充：工号】", "待您确认"."""
    return isinstance(value, str) and _PLACEHOLDER.search(unicodedata.normalize("NFKC", value)) is not None


def _date_form(text: str) -> tuple[str, str] | None:
    match = _DATE.fullmatch(text)
    if match is None:
        return None
    try:
        day = dt.date(int(match["y"]), int(match["m"]), int(match["d"]))
    except ValueError:
        return None
    if match["H"] is None:
        return ("date", day.isoformat())
    hour, minute, second = int(match["H"]), int(match["M"]), int(match["S"] or 0)
    if hour > 23 or minute > 59 or second > 59:
        return None
    fraction = (match["f"] or "").rstrip("0")
    offset = match["tz"] or ""
    if offset == "Z":
        offset = "+00:00"
    elif offset and ":" not in offset:
        offset = f"{offset[:3]}:{offset[3:]}"
    stamp = f"{day.isoformat()}T{hour:02d}:{minute:02d}:{second:02d}" + (f".{fraction}" if fraction else "")
    return ("datetime", stamp + offset)


def _number_form(value: float | str) -> tuple[str, Any] | None:
    if isinstance(value, float) and not math.isfinite(value):
        return ("nonfinite", repr(value))
    text = normalise_text(value) if isinstance(value, str) else repr(value)
    if isinstance(value, str) and not _NUMBER.fullmatch(text):
        return None
    try:
        number = Decimal(text)
    except InvalidOperation:
        return None
    # normalize() gives 10, 10.0 and 1E+1 one representation (lists sort by it); -0 is 0
    return ("number", number.normalize() if number else Decimal(0))


def _text_form(text: str, enum_like: bool) -> tuple[str, str]:
    clean = normalise_text(text)
    date = _date_form(clean)
    if date is not None:
        return date
    return ("string", clean.casefold() if enum_like else clean)


def _item_param(param: ApiParam | None) -> ApiParam | None:
    """What each item of a list parameter is: its declared object properties and enum, untyped otherwise."""
    if param is None:
        return None
    return ApiParam(
        f"{param.name}[]", ("object",) if param.properties else (), enum=param.enum, properties=param.properties
    )


def canonical(value: Any, param: ApiParam | None = None) -> tuple[Any, ...]:
    """The comparison form of ``value`` under ``param``'s declared type (see the module docstring)."""
    types = param.types if param else ()
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, (int, float)):
        if "string" in types and not NUMERIC_TYPES & set(types):
            return _text_form(repr(value) if isinstance(value, float) else str(value), False)
        return _number_form(value) or ("number", value)
    if isinstance(value, str):
        if "boolean" in types:
            word = normalise_text(value).casefold()
            if word in TRUE_WORDS or word in FALSE_WORDS:
                return ("boolean", word in TRUE_WORDS)
        if NUMERIC_TYPES & set(types):
            number = _number_form(value)
            if number is not None:
                return number
        return _text_form(value, bool(param and param.enum))
    if isinstance(value, (list, tuple)):
        item = _item_param(param)
        return ("list", tuple(sorted((canonical(v, item) for v in value), key=repr)))
    if isinstance(value, dict):
        props = {p.name: p for p in param.properties} if param else {}
        return (
            "object",
            tuple(sorted(((str(k), canonical(v, props.get(str(k)))) for k, v in value.items()), key=repr)),
        )
    return ("other", repr(value))


def values_match(reference: Any, got: Any, param: ApiParam | None = None) -> bool:
    """True when ``got`` means the same as ``reference`` under ``param``'s declared type."""
    return canonical(reference, param) == canonical(got, param)


def json_kind(value: Any) -> str:
    """The JSON type name of a parsed value, to record when a match needed a type coercion."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return (
        "array" if isinstance(value, (list, tuple)) else "object" if isinstance(value, dict) else type(value).__name__
    )
