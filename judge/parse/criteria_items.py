"""Per-criterion judgements (``criteria_items`` contract) from a judge's reply.

JSON: ``{"items": [{"id", "met", "evidence"}]}``, a bare list of such entries, or ids as keys
(``{"T1": true, "N1": {"met": "no"}}``); ``met`` may be a boolean, 0 / 1 or a word (yes / no,
是 / 否, 满足 / 未满足, ✓ / ✗). Free text (``patterns``): one ``T1: met`` / ``W2 ✗`` / ``N1：是`` line
per criterion id. Ids not asked are set aside, asked ids left out are ``missing``; one id judged
both met and not met, or an unreadable ``met``, rejects the reply.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from judge.parse.ladder import as_strings, as_text, ladder, nfkc
from judge.rubric import ParseStage
from judge.verdicts import CriteriaItemsVerdict, CriterionMet, ParseFailure

_MET_WORDS = {
    "true": True,
    "yes": True,
    "met": True,
    "是": True,
    "满足": True,
    "已满足": True,
    "✓": True,
    "✔": True,
    "false": False,
    "no": False,
    "not met": False,
    "not_met": False,
    "unmet": False,
    "否": False,
    "未满足": False,
    "不满足": False,
    "✗": False,
    "✘": False,
    "×": False,
}
_ITEM_KEYS = {
    "id": ("id", "criterion", "criterion_id", "编号"),
    "met": ("met", "是否满足", "满足", "result"),
    "evidence": ("evidence", "quote", "证据", "依据"),
}
_ITEMS_KEYS = ("items", "criteria", "results", "条目")
_CRITERION_ID = re.compile(r"[TWN][1-9]\d*")


def _criterion_id(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    key = re.sub(r"\s+", "", nfkc(value)).upper()
    return key if _CRITERION_ID.fullmatch(key) else None


def _met(value: Any) -> bool | None:
    """True/False from a bool, 0/1 or a word (true, yes, met, 是, 满足, ✓ …); None otherwise."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        return _MET_WORDS.get(re.sub(r"\s+", " ", nfkc(value).strip().strip("\"'.。!！").lower()))
    return None


def _entry_value(entry: Mapping[str, Any], field: str) -> Any:
    lowered = {nfkc(k).strip().lower() if isinstance(k, str) else k: v for k, v in entry.items()}
    return next((lowered[k] for k in _ITEM_KEYS[field] if k in lowered), None)


def _criteria_verdict(
    found: list[tuple[str, Any, Any]], ids: Sequence[str], stage: ParseStage, flags: tuple[str, ...] = ()
) -> CriteriaItemsVerdict | ParseFailure:
    """The verdict from ``(id, met value, evidence)`` triples; unknown ids set aside, known ones checked."""
    asked = set(ids)
    judged: dict[str, CriterionMet] = {}
    unknown: list[str] = []
    for criterion_id, raw_met, raw_evidence in found:
        if criterion_id not in asked:
            unknown += [criterion_id] if criterion_id not in unknown else []
            continue
        met = _met(raw_met)
        if met is None:
            return ParseFailure(
                f"{criterion_id}: met must be true or false (yes/no, 是/否, 满足/未满足), got {raw_met!r}", stage
            )
        if criterion_id in judged and judged[criterion_id].met != met:
            return ParseFailure(f"{criterion_id} is judged both met and not met", stage)
        judged.setdefault(criterion_id, CriterionMet(criterion_id, met, as_text(raw_evidence)))
    if not judged:
        return ParseFailure(
            f"the verdict answers none of the asked ids ({', '.join(ids)})"
            + (f"; it names {', '.join(unknown)}" if unknown else ""),
            stage,
        )
    return CriteriaItemsVerdict(
        items=tuple(judged[i] for i in ids if i in judged),
        parse_stage=stage,
        missing=tuple(i for i in ids if i not in judged),
        unknown=tuple(unknown),
        flags=flags,
    )


def _criteria_items_object(
    obj: Any, ids: Sequence[str], stage: ParseStage
) -> CriteriaItemsVerdict | ParseFailure | None:
    """``{"items": [{"id", "met", "evidence"}]}``, a bare list of such entries, or ``{"T1": true, ...}``."""
    lowered = (
        {nfkc(k).strip().lower(): v for k, v in obj.items() if isinstance(k, str)} if isinstance(obj, Mapping) else {}
    )
    key = next((k for k in _ITEMS_KEYS if k in lowered), None)
    entries = lowered[key] if key is not None else obj
    found: list[tuple[str, Any, Any]] = []
    if isinstance(entries, Mapping):  # ids as keys; other keys (flags, rationale) are not judgements
        for name, value in entries.items():
            criterion_id, inner = _criterion_id(name), value if isinstance(value, Mapping) else {"met": value}
            if criterion_id is not None:
                found.append((criterion_id, _entry_value(inner, "met"), _entry_value(inner, "evidence")))
        if not found and key is None:
            return None
    elif isinstance(entries, list):
        for index, entry in enumerate(entries):
            raw_id = _entry_value(entry, "id") if isinstance(entry, Mapping) else None
            if not isinstance(raw_id, str) or not raw_id.strip():
                if key is None:
                    return None  # a bare list that is not a list of judgements
                return ParseFailure(f"items[{index}] must be an object with an id such as T1, W1 or N1", stage)
            found.append(
                (_criterion_id(raw_id) or raw_id.strip(), _entry_value(entry, "met"), _entry_value(entry, "evidence"))
            )
    else:
        return None if key is None else ParseFailure(f"items must be a list, got {type(entries).__name__}", stage)
    return _criteria_verdict(found, ids, stage, as_strings(lowered.get("flags")))


_MET_WORD_PATTERN = "|".join(re.escape(w) for w in sorted(_MET_WORDS, key=len, reverse=True))
_CRITERION_LINE = re.compile(
    rf"^[ \t>*#\-•]*(?:\d+[.)、][ \t]*)?[*_`]*([TWN][1-9]\d*)(?![\d.])[*_`]*[ \t]*(?:[(\[【][^)\]】\n]{{0,40}}[)\]】])?"
    rf"[ \t]*[:=|\-—–]*[ \t]*[*_`\[(【]*[ \t]*({_MET_WORD_PATTERN})(?![a-z])[*_`\])】]*[ \t]*(.*)$",
    re.IGNORECASE | re.MULTILINE,
)
_EVIDENCE_LABEL = re.compile(r"^[\s:=|\-—–,;，；]*(?:evidence|证据|依据)?[\s:=]*", re.IGNORECASE)


def _criteria_items_text(text: str, ids: Sequence[str]) -> CriteriaItemsVerdict | ParseFailure | None:
    found = [
        (match.group(1).upper(), match.group(2), _EVIDENCE_LABEL.sub("", match.group(3)).strip().strip("\"“”「」'"))
        for match in _CRITERION_LINE.finditer(text)
    ]
    return _criteria_verdict(found, ids, "patterns", ("parsed_from_text",)) if found else None


def parse_criteria_items(reply: str, ids: Sequence[str]) -> CriteriaItemsVerdict | ParseFailure:
    """Per-criterion judgements for the asked ``ids`` (``T1``, ``W1``, ``N1`` …) from the judge's reply.

    Ids not asked are set aside in ``unknown``; asked ids the reply leaves out are ``missing``; a
    reply that answers none of the asked ids is a ParseFailure (re-asked like any other).
    """
    wanted = tuple(ids)
    if not wanted or any(_criterion_id(i) != i for i in wanted):
        raise ValueError(f"ids must be criterion ids such as T1, W1, N1, got {list(wanted)}")
    return ladder(
        reply,
        lambda obj, stage: _criteria_items_object(obj, wanted, stage),
        lambda text: _criteria_items_text(text, wanted),
        "criteria items verdict",
    )
