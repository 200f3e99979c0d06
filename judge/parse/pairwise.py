"""The pairwise verdict (``pairwise`` contract) from a judge's reply: which of two answers is better.

JSON: ``winner`` (or ``better`` / ``verdict`` / 胜者 / 结论) — ``A``, ``B`` or ``tie`` (also 平局, 相当,
"answer A", 回答A), plus a rationale. Free text (``patterns``): ``winner: A`` / ``胜者：B``, or a bare
one-word reply; a text that names two different winners rejects the reply.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from judge.parse.ladder import SHARED_ALIASES, FieldNames, as_text, ladder, nfkc
from judge.rubric import ParseStage
from judge.verdicts import ParseFailure

Winner = Literal["A", "B", "tie"]
WINNERS: tuple[Winner, ...] = ("A", "B", "tie")
FIELDS = FieldNames(
    {
        **SHARED_ALIASES,
        "winner": ("winner", "better", "verdict", "preferred", "胜者", "更好", "结论", "判定"),
    }
)
_WORDS: dict[str, Winner] = {
    "a": "A",
    "b": "B",
    "tie": "tie",
    "draw": "tie",
    "equal": "tie",
    "平局": "tie",
    "相当": "tie",
    "一样": "tie",
}
_PREFIX = re.compile(r"^(?:answer|response|回答|答案)[\s_]*")


@dataclass(frozen=True)
class PairwiseVerdict:
    """The judge's word on one ordered pair: the answer shown as ``A`` or as ``B`` is better, or a tie."""

    winner: Winner
    rationale: str = ""
    parse_stage: ParseStage = "strict"


def winner_word(value: Any) -> Winner | None:
    """``A`` / ``B`` / ``tie`` from what a judge wrote for the winner, or None."""
    if not isinstance(value, str):
        return None
    word = _PREFIX.sub("", nfkc(value).strip().strip("\"'.。!！*`").strip().lower())
    return _WORDS.get(word)


def _object(obj: Any, stage: ParseStage) -> PairwiseVerdict | ParseFailure | None:
    if not isinstance(obj, Mapping):
        return None
    fields = FIELDS.read(obj)
    if "winner" not in fields:
        return None  # not this verdict's object: the ladder tries the next rung
    winner = winner_word(fields["winner"])
    if winner is None:
        return ParseFailure(f'winner must be "A", "B" or "tie", got {fields["winner"]!r}', stage)
    return PairwiseVerdict(winner, as_text(fields.get("rationale")), stage)


_LABELLED = re.compile(
    r"(?:winner|better|verdict|胜者|更好|结论|判定)[\s*_`\"']*[:=：][\s*_`\"']*"
    r"((?:answer|回答|答案)?\s*[AB](?![A-Za-z])|tie|draw|平局|相当)",
    re.IGNORECASE,
)


def _text(text: str) -> PairwiseVerdict | ParseFailure | None:
    words = {w for w in (winner_word(m.group(1)) for m in _LABELLED.finditer(text)) if w is not None}
    if not words:
        bare = winner_word(text)
        return None if bare is None else PairwiseVerdict(bare, parse_stage="patterns")
    if len(words) > 1:
        return ParseFailure(f"the text names more than one winner: {sorted(words)}", "patterns")
    return PairwiseVerdict(words.pop(), parse_stage="patterns")


def parse_pairwise(reply: str) -> PairwiseVerdict | ParseFailure:
    """A pairwise verdict (A / B / tie) from the judge's reply, or why not."""
    return ladder(reply, _object, _text, "pairwise verdict")
