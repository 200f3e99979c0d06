"""Text repairs for judge replies that are almost JSON (the "repaired" rung of the parse ladder).

Repairs, each applied only outside JSON strings so a rationale's own punctuation is kept:

- reasoning blocks ``<think>…</think>`` are dropped (a draft inside could hold other numbers);
- markdown code fences (lines of ``` with an optional language) are dropped;
- full-width structure ``｛｝［］：，`` and digits ``０-９`` become ASCII;
- a comma before ``}`` or ``]`` (trailing comma) is dropped;
- optionally, curly or full-width quotes ``“”＂`` used as string delimiters become ``"``
  (an ASCII ``"`` inside such a string is escaped);
- optionally, when the text holds no double quote of any kind, ``'`` becomes ``"`` (a Python-style
  dict); with a double quote present the swap could break a string, so it is not tried.

The first ``{...}`` that loads is taken (``eval.metrics.text.parsing.extract_json``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from eval.metrics.text.parsing import extract_json

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_CODE_FENCE_LINE = re.compile(r"^[ \t]*```[\w-]*[ \t]*$", re.MULTILINE)
_FULLWIDTH = {"｛": "{", "｝": "}", "［": "[", "］": "]", "：": ":", "，": ",", "－": "-"}
_FULLWIDTH.update({chr(0xFF10 + digit): str(digit) for digit in range(10)})
_CURLY_QUOTES = frozenset("“”＂")
_ANY_DOUBLE_QUOTE = frozenset('"“”＂')


def strip_reasoning(text: str) -> str:
    """The reply without closed ``<think>…</think>`` blocks."""
    return _THINK_BLOCK.sub("", text)


def strip_code_fences(text: str) -> str:
    return _CODE_FENCE_LINE.sub("", text)


def _next_structural(text: str, start: int) -> str:
    """The next non-whitespace character from ``start``, mapped to ASCII; '' at the end."""
    for position in range(start, len(text)):
        if not text[position].isspace():
            return _FULLWIDTH.get(text[position], text[position])
    return ""


def normalise_json_text(text: str, *, curly_quotes: bool) -> str:
    """Full-width structure to ASCII and trailing commas dropped, outside strings (see module doc)."""
    out: list[str] = []
    closer: str | None = None  # None outside a string; '"' or "curly" inside one
    escaped = False
    for position, char in enumerate(text):
        if closer is not None:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif closer == '"' and char == '"':
                closer = None
            elif closer == "curly" and char in _CURLY_QUOTES:
                closer, char = None, '"'
            elif closer == "curly" and char == '"':
                char = '\\"'
            out.append(char)
            continue
        if char == '"':
            closer = '"'
        elif curly_quotes and char in _CURLY_QUOTES:
            closer, char = "curly", '"'
        else:
            char = _FULLWIDTH.get(char, char)
            if char == "," and _next_structural(text, position + 1) in ("}", "]"):
                continue
        out.append(char)
    return "".join(out)


def json_candidates(reply: str) -> Iterator[dict[str, Any]]:
    """JSON objects found in ``reply`` after the repairs, least invasive first, without repeats."""
    base = strip_code_fences(strip_reasoning(reply))
    variants = [normalise_json_text(base, curly_quotes=False), normalise_json_text(base, curly_quotes=True)]
    if not any(char in _ANY_DOUBLE_QUOTE for char in base):
        variants.append(normalise_json_text(base.replace("'", '"'), curly_quotes=False))
    seen: list[dict[str, Any]] = []
    for variant in variants:
        found = extract_json(variant)
        if found is not None and found not in seen:
            seen.append(found)
            yield found
