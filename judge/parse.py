"""The parse ladder: a judge's reply text → a verdict, or a ParseFailure saying why.

Rungs, in order, for every contract (rubric, probe, claim list, criteria items):

1. ``strict``   — the whole reply (trimmed) is one JSON value;
2. ``repaired`` — JSON after the repairs of ``judge.repair`` (reasoning blocks and code fences
                  dropped, full-width punctuation and digits, trailing commas, curly or single
                  quotes), the first ``{...}`` that loads;
3. ``patterns`` — labelled values in free text, after NFKC (full-width → ASCII): for the rubric
                  ``coverage: 8`` / ``覆盖度：8分`` / ``准确性 7/10`` and ALL FOUR dimensions are
                  needed; for probes ``verdict: success`` / ``结论：失败`` or a bare one-word reply;
                  for claims one ``- claim — label`` line per claim; for criteria items one
                  ``T1: met`` / ``W2 ✗`` / ``N1：是`` line per criterion id.

A rung that finds the verdict's object (a JSON object carrying one of the contract's keys) decides:
if a value in it is invalid — a score of 11, -1 or 7.5, an unknown label — the reply is rejected
there, and looser rungs are not tried (they could pick up some other number from the prose). Values
are never clamped. The caller re-asks once; a second failure is an ``infra_error`` score.

Side labels are the exception: ``context_awareness`` and ``seeks_clarification`` (criteria) and
``behavior`` (probe) do not decide the score, so a verdict is not thrown away for them. Missing or
unknown, they are None — an unknown value is flagged and makes a ``strict`` verdict ``repaired``
(``judge.side_labels``); a label is never guessed.

What each contract asks for, field by field, is its JSON Schema (``judge.schemas``, built from the
same label sets this ladder checks against); the ladder accepts that object and the looser shapes
above.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from judge.repair import json_candidates, strip_code_fences, strip_reasoning
from judge.rubric import (
    DIMENSIONS,
    RATIONALE_MAX_CHARS,
    SCORE_MAX,
    SCORE_MIN,
    ParseStage,
    Verdict,
    check_dimension_score,
)
from judge.side_labels import PROBE_SIDE, RUBRIC_SIDE, side_labels, side_labels_in_text
from judge.verdicts import (
    CLAIM_LABELS,
    Claim,
    CriteriaItemsVerdict,
    CriterionMet,
    HalluVerdict,
    ParseFailure,
    ProbeVerdict,
)

Parsed = Verdict | ProbeVerdict | HalluVerdict | CriteriaItemsVerdict

_DIMENSION_ALIASES: Mapping[str, tuple[str, ...]] = {
    "coverage": ("coverage", "覆盖度", "覆盖性", "覆盖"),
    "accuracy": ("accuracy", "准确性", "准确度", "准确"),
    "safety": ("safety", "安全性", "安全"),
    "grounding": ("grounding", "溯源性", "溯源", "有据性"),
}
_FIELD_ALIASES: Mapping[str, tuple[str, ...]] = {
    **_DIMENSION_ALIASES,
    "rationale": ("rationale", "reason", "reasoning", "explanation", "理由", "评语", "说明"),
    "grounding_source": ("grounding_source", "groundingsource", "source", "依据来源", "主要依据", "来源"),
    "warnings_present": ("warnings_present", "present_warnings", "warnings", "已出现的警示", "出现的警示"),
    "flags": ("flags", "flag", "问题"),
    "verdict": ("verdict", "result", "judgement", "judgment", "结论", "判定", "判断", "结果"),
    "success": ("success",),
    "claims": ("claims", "claim_list", "声明"),
    "context_awareness": ("context_awareness", "contextawareness", "情境把握", "情境感知", "情境"),
    "seeks_clarification": ("seeks_clarification", "seeksclarification", "asks_clarification", "请求澄清", "询问澄清"),
    "behavior": ("behavior", "behaviour", "行为", "行为标签"),
}
_KEY_TO_FIELD = {alias: name for name, aliases in _FIELD_ALIASES.items() for alias in aliases}
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
_PROBE_WORDS = {"success": True, "成功": True, "failure": False, "fail": False, "失败": False}
_CLAIM_WORDS = {
    "supported": "supported",
    "unsupported": "unsupported",
    "not_sure": "not_sure",
    "not sure": "not_sure",
    "notsure": "not_sure",
    "支持": "supported",
    "有据": "supported",
    "不支持": "unsupported",
    "无据": "unsupported",
    "不确定": "not_sure",
    "无法确定": "not_sure",
}


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _field(key: Any) -> str | None:
    if not isinstance(key, str):
        return None
    return _KEY_TO_FIELD.get(_nfkc(key).strip().lower().replace(" ", "_"))


def _fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object's values under canonical field names (the first alias given wins)."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        name = _field(key)
        if name is not None and name not in out:
            out[name] = value
    return out


# --- the ladder -----------------------------------------------------------------------------------

ObjectReader = Callable[[Mapping[str, Any], ParseStage], "Parsed | ParseFailure | None"]
TextReader = Callable[[str], "Parsed | ParseFailure | None"]


def _ladder(reply: Any, read_object: ObjectReader, read_text: TextReader, what: str) -> Parsed | ParseFailure:
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
    result = read_text(_nfkc(strip_code_fences(strip_reasoning(reply))))
    if result is not None:
        return result
    return ParseFailure(f"no {what} found: no JSON object with its keys and no labelled values in the text", "patterns")


# --- rubric verdicts ------------------------------------------------------------------------------

_NUMBER_TEXT = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*(?:分|/\s*10|points?)?\s*", re.IGNORECASE)


def _as_score(name: str, value: Any) -> int:
    """A JSON value as a rubric score: ints, whole floats (8.0) and number strings ("8", "8分").

    ``{"score": n}`` (the seed's nested shape) is read as n. Anything else, out of range or not a
    whole number raises ValueError; nothing is rounded or clamped.
    """
    if isinstance(value, Mapping) and "score" in value:
        value = value["score"]
    if isinstance(value, str):
        match = _NUMBER_TEXT.fullmatch(_nfkc(value))
        if match is None:
            raise ValueError(f"{name} must be an integer {SCORE_MIN}..{SCORE_MAX}, got {value!r}")
        number = match.group(1)
        value = float(number) if "." in number else int(number)
    if isinstance(value, float) and not isinstance(value, bool):
        if not value.is_integer():
            raise ValueError(f"{name} must be a whole number {SCORE_MIN}..{SCORE_MAX}, got {value!r}")
        value = int(value)
    return check_dimension_score(name, value)


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text.strip()[:RATIONALE_MAX_CHARS]


def _as_strings(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value.strip(),) if value.strip() else ()
    if isinstance(value, (list, tuple)):
        return tuple(item.strip() for item in value if isinstance(item, str) and item.strip())
    return ()


def _grounding_source(value: Any) -> tuple[str | None, tuple[str, ...]]:
    if value is None:
        return None, ("grounding_source_missing",)
    key = _nfkc(str(value)).strip().lower()
    if key in _GROUNDING_ALIASES:
        return _GROUNDING_ALIASES[key], ()
    return None, (f"grounding_source_invalid:{str(value)[:40]}",)


def _rubric_object(obj: Any, stage: ParseStage) -> Verdict | ParseFailure | None:
    if not isinstance(obj, Mapping):
        return None
    fields = _fields(obj)
    if not any(name in fields for name in DIMENSIONS):
        nested = [value for value in obj.values() if isinstance(value, Mapping)]
        inner = next((value for value in nested if any(_field(key) in DIMENSIONS for key in value)), None)
        if inner is None:
            return None
        fields = {**_fields(obj), **_fields(inner)}
    missing = [name for name in DIMENSIONS if name not in fields]
    if missing:
        return ParseFailure(f"the verdict object lacks {', '.join(missing)}", stage)
    try:
        scores = {name: _as_score(name, fields[name]) for name in DIMENSIONS}
    except ValueError as problem:
        return ParseFailure(f"rejected score: {problem}", stage)
    rationale = _as_text(fields.get("rationale"))
    if not rationale:  # the seed's nested shape carries a rationale per dimension
        parts = [
            f"{name}: {_as_text(fields[name].get('rationale'))}"
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
        warnings_present=_as_strings(fields.get("warnings_present")),
        flags=_as_strings(fields.get("flags")) + source_flags + label_flags,
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
    return _ladder(reply, _rubric_object, _rubric_text, "rubric verdict")  # type: ignore[return-value]


# --- probe verdicts -------------------------------------------------------------------------------


def _probe_word(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _PROBE_WORDS.get(_nfkc(value).strip().strip("\"'.。!！").lower())
    return None


def _probe_object(obj: Any, stage: ParseStage) -> ProbeVerdict | ParseFailure | None:
    if not isinstance(obj, Mapping):
        return None
    fields = _fields(obj)
    key = "verdict" if "verdict" in fields else "success" if "success" in fields else None
    if key is None:
        return None
    success = _probe_word(fields[key])
    if success is None:
        return ParseFailure(f'{key} must be "success" or "failure" (成功/失败), got {fields[key]!r}', stage)
    labels, label_flags, stage = side_labels(fields, stage, PROBE_SIDE)
    return ProbeVerdict(
        success=success,
        rationale=_as_text(fields.get("rationale")),
        flags=_as_strings(fields.get("flags")) + label_flags,
        parse_stage=stage,
        **labels,
    )


_PROBE_LABELLED = re.compile(
    r"(?:verdict|result|结论|判定|判断|结果)[\s*_`\"']*[:=][\s*_`\"']*(success|failure|fail|成功|失败)", re.IGNORECASE
)


def _probe_text(text: str) -> ProbeVerdict | ParseFailure | None:
    words = {_PROBE_WORDS[match.group(1).lower()] for match in _PROBE_LABELLED.finditer(text)}
    if not words:
        bare = _probe_word(text)
        if bare is None:
            return None
        words = {bare}
    if len(words) > 1:
        return ParseFailure("the text gives both success and failure", "patterns")
    labels, label_flags = side_labels_in_text(text, PROBE_SIDE)
    return ProbeVerdict(
        success=words.pop(), flags=("parsed_from_text",) + label_flags, parse_stage="patterns", **labels
    )


def parse_probe(reply: str) -> ProbeVerdict | ParseFailure:
    """A probe verdict (success / failure, 成功 / 失败) from the judge's reply, or why not."""
    return _ladder(reply, _probe_object, _probe_text, "probe verdict")  # type: ignore[return-value]


# --- claim lists (--hallu) ------------------------------------------------------------------------


def _claim_label(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    return _CLAIM_WORDS.get(_nfkc(value).strip().lower().replace("-", "_"))


def _claims_object(obj: Any, stage: ParseStage) -> HalluVerdict | ParseFailure | None:
    if isinstance(obj, list):
        entries: Any = obj
    elif isinstance(obj, Mapping) and "claims" in _fields(obj):
        entries = _fields(obj)["claims"]
    else:
        return None
    if not isinstance(entries, list):
        return ParseFailure(f"claims must be a list, got {type(entries).__name__}", stage)
    claims = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            return ParseFailure(f"claims[{index}] must be an object with claim and label", stage)
        text = next((entry[k] for k in ("claim", "text", "声明") if isinstance(entry.get(k), str)), "")
        raw = next((entry[k] for k in ("label", "verdict", "标签", "判定") if k in entry), None)
        label = _claim_label(raw)
        if label is None:
            return ParseFailure(f"claims[{index}] label must be one of {list(CLAIM_LABELS)}, got {raw!r}", stage)
        claims.append(Claim(text=text.strip(), label=label))  # type: ignore[arg-type]
    return HalluVerdict(claims=tuple(claims), parse_stage=stage)


_CLAIM_LINE = re.compile(
    r"^[ \t]*(?:[-*•]|\d+[.)、])[ \t]*(.+?)[ \t]*[|:—–-]+[ \t]*[\[(]?"
    r"(supported|unsupported|not[_ ]sure|不支持|支持|无法确定|不确定)[\])]?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)


def _claims_text(text: str) -> HalluVerdict | None:
    claims = tuple(
        Claim(text=match.group(1), label=_claim_label(match.group(2))) for match in _CLAIM_LINE.finditer(text)
    )  # type: ignore[arg-type]
    return HalluVerdict(claims=claims, parse_stage="patterns") if claims else None


def parse_claims(reply: str) -> HalluVerdict | ParseFailure:
    """A claim list (supported / unsupported / not_sure per atomic claim) from the judge's reply."""
    return _ladder(reply, _claims_object, _claims_text, "claim list")  # type: ignore[return-value]


# --- criteria items -------------------------------------------------------------------------------

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
    key = re.sub(r"\s+", "", _nfkc(value)).upper()
    return key if _CRITERION_ID.fullmatch(key) else None


def _met(value: Any) -> bool | None:
    """True/False from a bool, 0/1 or a word (true, yes, met, 是, 满足, ✓ …); None otherwise."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        return _MET_WORDS.get(re.sub(r"\s+", " ", _nfkc(value).strip().strip("\"'.。!！").lower()))
    return None


def _entry_value(entry: Mapping[str, Any], field: str) -> Any:
    lowered = {_nfkc(k).strip().lower() if isinstance(k, str) else k: v for k, v in entry.items()}
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
        judged.setdefault(criterion_id, CriterionMet(criterion_id, met, _as_text(raw_evidence)))
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
        {_nfkc(k).strip().lower(): v for k, v in obj.items() if isinstance(k, str)} if isinstance(obj, Mapping) else {}
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
    return _criteria_verdict(found, ids, stage, _as_strings(lowered.get("flags")))


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
    return _ladder(
        reply,
        lambda obj, stage: _criteria_items_object(obj, wanted, stage),
        lambda text: _criteria_items_text(text, wanted),
        "criteria items verdict",
    )  # type: ignore[return-value]
