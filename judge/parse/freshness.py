"""The freshness verdict (``freshness`` contract): is a gold point still what the latest guideline says?

JSON: ``verdict`` — ``current`` / ``drifted`` / ``uncertain`` (or 仍有效 / 已过时 / 不确定, and a few
synonyms: ``outdated``, ``changed``, ``tightened`` are ``drifted``; ``unknown`` is ``uncertain``) —
plus ``current_guideline`` (the guideline the judge relies on, "name + year", ``unknown`` when it
names none) and ``note``. Free text (``patterns``): ``verdict: drifted`` / ``结论：已过时``, or a
bare one-word reply; a text that gives two verdicts rejects the reply.

A reply that gives no verdict is a :class:`~judge.verdicts.ParseFailure`, re-asked once by the
caller; one still unreadable is counted ``uncertain`` by the audit (``pool.freshness``), never
guessed into ``current`` or ``drifted``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from judge.parse.ladder import FieldNames, as_text, ladder, nfkc
from judge.rubric import ParseStage
from judge.verdicts import ParseFailure

FreshnessLabel = Literal["current", "drifted", "uncertain"]
FRESHNESS_LABELS: tuple[str, ...] = ("current", "drifted", "uncertain")
UNKNOWN_GUIDELINE = "unknown"

FIELDS = FieldNames(
    {
        "verdict": ("verdict", "freshness", "status", "结论", "判定", "判断"),
        "current_guideline": ("current_guideline", "guideline", "latest_guideline", "指南", "最新指南", "依据指南"),
        "note": ("note", "rationale", "reason", "explanation", "说明", "理由", "备注"),
    }
)
_WORDS = {
    **{label: label for label in FRESHNESS_LABELS},
    "still current": "current",
    "up to date": "current",
    "up-to-date": "current",
    "仍有效": "current",
    "仍然有效": "current",
    "有效": "current",
    "一致": "current",
    "outdated": "drifted",
    "changed": "drifted",
    "tightened": "drifted",
    "stale": "drifted",
    "已过时": "drifted",
    "过时": "drifted",
    "已变化": "drifted",
    "已更新": "drifted",
    "unknown": "uncertain",
    "unsure": "uncertain",
    "不确定": "uncertain",
    "不清楚": "uncertain",
}


@dataclass(frozen=True)
class FreshnessVerdict:
    """One judge's verdict on one gold point; ``current_guideline`` is ``unknown`` when it named none."""

    verdict: FreshnessLabel
    current_guideline: str = UNKNOWN_GUIDELINE
    note: str = ""
    parse_stage: ParseStage = "strict"

    def __post_init__(self) -> None:
        if self.verdict not in FRESHNESS_LABELS:
            raise ValueError(f"verdict must be one of {list(FRESHNESS_LABELS)}, got {self.verdict!r}")


def freshness_word(value: Any) -> str | None:
    """The label a verdict value stands for (NFKC, case and surrounding punctuation ignored), or None."""
    if not isinstance(value, str):
        return None
    return _WORDS.get(nfkc(value).strip().strip("\"'.。!！").strip().lower())


def _guideline(value: Any) -> str:
    text = as_text(value)
    return text if text and text.lower() not in ("none", "null", "n/a", "无", "不知道") else UNKNOWN_GUIDELINE


def _object(obj: Any, stage: ParseStage) -> FreshnessVerdict | ParseFailure | None:
    fields = FIELDS.read(obj) if isinstance(obj, dict) else {}
    if "verdict" not in fields:
        return None  # not this verdict's object: the ladder tries the next rung
    label = freshness_word(fields["verdict"])
    if label is None:
        return ParseFailure(f"verdict must be one of {list(FRESHNESS_LABELS)}, got {fields['verdict']!r}", stage)
    return FreshnessVerdict(label, _guideline(fields.get("current_guideline")), as_text(fields.get("note")), stage)  # type: ignore[arg-type]


_LABELLED = re.compile(
    r"(?:verdict|结论|判定|判断)[\s*_`\"']*[:=：][\s*_`\"']*(current|drifted|uncertain|已过时|过时|仍有效|不确定)",
    re.IGNORECASE,
)
_GUIDELINE = re.compile(r"current_guideline[\s*_`\"']*[:=：][\s*_`\"']*([^\n\"']+)", re.IGNORECASE)


def _text(text: str) -> FreshnessVerdict | ParseFailure | None:
    labels = {freshness_word(match.group(1)) for match in _LABELLED.finditer(text)}
    if not labels:
        bare = freshness_word(text)
        if bare is None:
            return None
        labels = {bare}
    if len(labels) > 1:
        return ParseFailure(f"the text gives more than one verdict: {sorted(str(x) for x in labels)}", "patterns")
    guideline = _GUIDELINE.search(text)
    return FreshnessVerdict(
        labels.pop(),  # type: ignore[arg-type]
        _guideline(guideline.group(1)) if guideline else UNKNOWN_GUIDELINE,
        parse_stage="patterns",
    )


def parse_freshness(reply: str) -> FreshnessVerdict | ParseFailure:
    """A freshness verdict (current / drifted / uncertain) from the judge's reply, or why not."""
    return ladder(reply, _object, _text, "freshness verdict")
