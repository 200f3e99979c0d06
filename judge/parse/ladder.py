"""The parse ladder: a judge's reply text → a verdict, or a ParseFailure saying why.

Rungs, in order, for every contract (each parser of this folder gives the two readers):

1. ``strict``   — the whole reply (trimmed) is one JSON value;
2. ``repaired`` — JSON after the repairs of ``judge.parse.repair`` (reasoning blocks and code
                  fences dropped, full-width punctuation and digits, trailing commas, curly or
                  single quotes), the first ``{...}`` that loads;
3. ``patterns`` — labelled values in free text, after NFKC (full-width → ASCII), by the
                  contract's own patterns (``judge.parse.rubric``, ``probe``, ``hallu``,
                  ``criteria_items``).

A rung that finds the verdict's object (a JSON object carrying one of the contract's keys) decides:
if a value in it is invalid — a score of 11, -1 or 7.5, an unknown label — the reply is rejected
there, and looser rungs are not tried (they could pick up some other number from the prose). Values
are never clamped. The caller re-asks once; a second failure is an ``infra_error`` score.

Side labels are the exception: ``context_awareness`` and ``seeks_clarification`` (criteria) and
``behavior`` (probe) do not decide the score, so a verdict is not thrown away for them. Missing or
unknown, they are None — an unknown value is flagged and makes a ``strict`` verdict ``repaired``
(``judge.side_labels``); a label is never guessed.

Keys are read by canonical field name: each parser declares the keys a judge may write for its
fields (:class:`FieldNames`; ``rationale`` and ``flags`` are shared). What each contract asks for,
field by field, is its JSON Schema (``judge.contracts``, built from the same label sets the parsers
check against); the ladder accepts that object and the looser shapes above.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from judge.parse.repair import json_candidates, strip_code_fences, strip_reasoning
from judge.rubric import RATIONALE_MAX_CHARS, ParseStage
from judge.verdicts import ParseFailure

V = TypeVar("V")
Aliases = Mapping[str, tuple[str, ...]]

# Fields more than one contract asks for, and the keys a judge may write for them.
SHARED_ALIASES: Aliases = {
    "rationale": ("rationale", "reason", "reasoning", "explanation", "理由", "评语", "说明"),
    "flags": ("flags", "flag", "问题"),
}


def nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


class FieldNames:
    """Canonical field → the keys a judge may write for it (NFKC, case, spaces as ``_`` ignored)."""

    def __init__(self, aliases: Aliases) -> None:
        self._by_key = {alias: name for name, names in aliases.items() for alias in names}
        if len(self._by_key) != sum(len(names) for names in aliases.values()):
            raise ValueError("a key is listed for two fields")

    def name(self, key: Any) -> str | None:
        """The canonical field ``key`` stands for, or None."""
        if not isinstance(key, str):
            return None
        return self._by_key.get(nfkc(key).strip().lower().replace(" ", "_"))

    def read(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """The object's values under canonical field names (the first alias given wins)."""
        out: dict[str, Any] = {}
        for key, value in obj.items():
            name = self.name(key)
            if name is not None and name not in out:
                out[name] = value
        return out


def ladder(
    reply: Any,
    read_object: Callable[[Any, ParseStage], V | ParseFailure | None],
    read_text: Callable[[str], V | ParseFailure | None],
    what: str,
) -> V | ParseFailure:
    """Climb the rungs (module doc): the first reader that finds the verdict's object or labels decides."""
    if not isinstance(reply, str):
        return ParseFailure(f"the judge reply is {type(reply).__name__}, not text", "strict")
    try:
        whole = json.loads(reply.strip())
    except (ValueError, RecursionError):
        whole = None
    if whole is not None:
        result = read_object(whole, "strict")
        if result is not None:
            return result
    for candidate in json_candidates(reply):
        result = read_object(candidate, "repaired")
        if result is not None:
            return result
    result = read_text(nfkc(strip_code_fences(strip_reasoning(reply))))
    if result is not None:
        return result
    return ParseFailure(f"no {what} found: no JSON object with its keys and no labelled values in the text", "patterns")


def as_text(value: Any) -> str:
    """A rationale or evidence value as text (JSON for a non-string), trimmed to ``RATIONALE_MAX_CHARS``."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text.strip()[:RATIONALE_MAX_CHARS]


def as_strings(value: Any) -> tuple[str, ...]:
    """A string or a list of strings as a tuple of non-empty strings; anything else as ()."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value.strip(),) if value.strip() else ()
    if isinstance(value, (list, tuple)):
        return tuple(item.strip() for item in value if isinstance(item, str) and item.strip())
    return ()
