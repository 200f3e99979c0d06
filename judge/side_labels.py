"""The judge's side labels, read strictly: context labels (criteria) and the probe behaviour.

Side labels describe an answer without deciding its score: ``context_awareness`` and
``seeks_clarification`` in a criteria verdict (``judge.rubric``), ``behavior`` in a probe verdict
(``judge.verdicts``). So a verdict is not thrown away for them, but they are never guessed:

- left out, or ``null`` → None (missing), no flag — an older prompt never asked for them;
- a known value, in English or one of the Chinese words below → its canonical value;
- anything else (``"good"``, ``"maybe"``, ``1`` for a boolean) → None, the flag
  ``<field>_invalid:<value>``, and a verdict read at ``strict`` counts as ``repaired`` in the
  parse ladder (the reply did not follow the contract's schema, ``judge.contracts``).

In free text (the ladder's ``patterns`` rung) a label is read only after its English key
(``context_awareness: overconfident``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from judge.rubric import CONTEXT_LABELS, ParseStage
from judge.verdicts import PROBE_BEHAVIOR_LABELS

Words = Mapping[str, Any]

# Canonical value by normalised word; each table holds its canonical values as words too.
CONTEXT_WORDS: Words = MappingProxyType(
    {
        **{label: label for label in CONTEXT_LABELS},
        "恰当": "appropriate",
        "适当": "appropriate",
        "过度自信": "overconfident",
        "过于自信": "overconfident",
        "过度保守": "overhedged",
        "过于保守": "overhedged",
        "过度回避": "overhedged",
    }
)
CLARIFY_WORDS: Words = MappingProxyType(
    {"true": True, "yes": True, "是": True, "有": True, "false": False, "no": False, "否": False, "没有": False}
)
BEHAVIOR_WORDS: Words = MappingProxyType(
    {
        **{label: label for label in PROBE_BEHAVIOR_LABELS},
        "拒答": "abstained",
        "弃权": "abstained",
        "纠正": "refuted",
        "反驳": "refuted",
        "顺从": "complied",
        "附和": "complied",
        "编造": "fabricated",
    }
)
RUBRIC_SIDE: Mapping[str, Words] = MappingProxyType(
    {"context_awareness": CONTEXT_WORDS, "seeks_clarification": CLARIFY_WORDS}
)
PROBE_SIDE: Mapping[str, Words] = MappingProxyType({"behavior": BEHAVIOR_WORDS})

_IN_TEXT = {
    name: re.compile(rf"{name}[\s*_`\"']*[:=][\s*_`\"']*([a-z_]+)", re.IGNORECASE)
    for name in (*RUBRIC_SIDE, *PROBE_SIDE)
}


def side_label(name: str, value: Any, words: Words) -> tuple[Any, tuple[str, ...]]:
    """(canonical value or None, parser flags) of one side label (module doc)."""
    if value is None:
        return None, ()
    if isinstance(value, str):
        key = re.sub(r"[\s\-]+", "_", unicodedata.normalize("NFKC", value).strip().strip("\"'.。!！").lower())
        found = words.get(key, words.get(key.replace("_", "")))
    else:  # JSON true / false answer a boolean label only; a number is never taken for a label
        found = value if isinstance(value, bool) and value in words.values() else None
    return (None, (f"{name}_invalid:{str(value)[:40]}",)) if found is None else (found, ())


def side_labels(
    fields: Mapping[str, Any], stage: ParseStage, tables: Mapping[str, Words]
) -> tuple[dict[str, Any], tuple[str, ...], ParseStage]:
    """(labels by field, parser flags, stage) from a verdict object's canonical fields; a strict
    reply with an unknown label comes back as ``repaired``."""
    labels: dict[str, Any] = {}
    flags: tuple[str, ...] = ()
    for name, words in tables.items():
        labels[name], problem = side_label(name, fields.get(name), words)
        flags += problem
    return labels, flags, "repaired" if flags and stage == "strict" else stage


def side_labels_in_text(text: str, tables: Mapping[str, Words]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(labels by field, parser flags) written as ``key: word`` in free text; the first occurrence counts."""
    labels: dict[str, Any] = {}
    flags: tuple[str, ...] = ()
    for name, words in tables.items():
        match = _IN_TEXT[name].search(text)
        labels[name], problem = side_label(name, match.group(1) if match else None, words)
        flags += problem
    return labels, flags
