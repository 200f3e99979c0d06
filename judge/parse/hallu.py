"""The claim list (``hallu`` contract, ``--hallu``) from a judge's reply.

JSON: ``{"claims": [{"claim", "label"}]}`` or a bare list of such entries (``text`` / ``声明`` for
the claim, ``verdict`` / ``标签`` / ``判定`` for the label); a label outside supported /
unsupported / not_sure (or 支持 / 不支持 / 不确定 …) rejects the reply. Free text (``patterns``):
one ``- claim — label`` line per claim.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from judge.parse.ladder import FieldNames, ladder, nfkc
from judge.rubric import ParseStage
from judge.verdicts import CLAIM_LABELS, Claim, HalluVerdict, ParseFailure

FIELDS = FieldNames({"claims": ("claims", "claim_list", "声明")})
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


def _claim_label(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    return _CLAIM_WORDS.get(nfkc(value).strip().lower().replace("-", "_"))


def _claims_object(obj: Any, stage: ParseStage) -> HalluVerdict | ParseFailure | None:
    if isinstance(obj, list):
        entries: Any = obj
    elif isinstance(obj, Mapping) and "claims" in FIELDS.read(obj):
        entries = FIELDS.read(obj)["claims"]
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
    return ladder(reply, _claims_object, _claims_text, "claim list")
