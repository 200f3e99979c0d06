"""The probe verdict (``probe`` contract) from a judge's reply.

JSON: ``verdict`` (or ``success``) — success / failure, 成功 / 失败, or a boolean — plus rationale,
flags and the ``behavior`` side label. Free text (``patterns``): ``verdict: success`` /
``结论：失败``, or a bare one-word reply; a text that says both rejects the reply.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from judge.parse.ladder import SHARED_ALIASES, FieldNames, as_strings, as_text, ladder, nfkc
from judge.rubric import ParseStage
from judge.side_labels import PROBE_SIDE, side_labels, side_labels_in_text
from judge.verdicts import ParseFailure, ProbeVerdict

FIELDS = FieldNames(
    {
        **SHARED_ALIASES,
        "verdict": ("verdict", "result", "judgement", "judgment", "结论", "判定", "判断", "结果"),
        "success": ("success",),
        "behavior": ("behavior", "behaviour", "行为", "行为标签"),
    }
)
_PROBE_WORDS = {"success": True, "成功": True, "failure": False, "fail": False, "失败": False}


def _probe_word(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _PROBE_WORDS.get(nfkc(value).strip().strip("\"'.。!！").lower())
    return None


def _probe_object(obj: Any, stage: ParseStage) -> ProbeVerdict | ParseFailure | None:
    if not isinstance(obj, Mapping):
        return None
    fields = FIELDS.read(obj)
    key = "verdict" if "verdict" in fields else "success" if "success" in fields else None
    if key is None:
        return None
    success = _probe_word(fields[key])
    if success is None:
        return ParseFailure(f'{key} must be "success" or "failure" (成功/失败), got {fields[key]!r}', stage)
    labels, label_flags, stage = side_labels(fields, stage, PROBE_SIDE)
    return ProbeVerdict(
        success=success,
        rationale=as_text(fields.get("rationale")),
        flags=as_strings(fields.get("flags")) + label_flags,
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
    return ladder(reply, _probe_object, _probe_text, "probe verdict")
