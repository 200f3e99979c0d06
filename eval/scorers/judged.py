"""Gold types the LLM judge scores: the judge package builds the request for each contract.

``reference`` (the judge sees the reference answer), ``criteria`` (topics, required warnings,
forbidden statements) and ``probe`` (abstain on a non-existent entity / refute a false premise).
The contract each asks for is the one its declaration names (``eval.gold_types``). A reference
item with an objective check is also scored by it (``eval.scorers.checked``).

Before the judge, :func:`guard_answer` says whether an answer is worth a judge call at all; it is
a pure function of the item and the stored answer, so a resume or a re-score decides the same:

- ``empty_answer`` — nothing left once ``<think>`` reasoning, whitespace and any echoed copy of the
  prompt (the question, or a turn of the chat, of 8 characters or more) are removed;
- ``short_answer`` — less content than the gold type's ``min_answer_chars`` (200 for reference and
  criteria: the med-agent-verifier README counts an unusable answer as a full miss). A reference
  item never asks for more than its reference answer's own length, and an item with an objective
  check (SQL, an API call: a short answer is normal there) has no minimum. An answer cut at its
  token budget (``truncated``) is never short: the budget ended it, not the model, and a re-ask
  under the same budget would be cut again; it is judged, and its leaderboard cell counts it.

The scoring stage scores a guarded answer 0 on every dimension with the flag, without asking the
judge (``pool.score.guards``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass
from typing import Any

from eval.gold_types import spec_of
from eval.items import Item
from eval.scorers.answer_parsing import strip_reasoning
from eval.scorers.checked import checked_or_judged
from eval.scorers.registry import NeedsJudge, register


def needs_judge(item: Item) -> NeedsJudge:
    """Ask the judge under the contract declared for the item's gold type."""
    contract = spec_of(item.gold_type).judge_contract
    if contract is None:
        raise ValueError(f"{item.id}: gold type {item.gold_type!r} declares no judge contract (eval/gold_types.py)")
    return NeedsJudge(contract)


@register("reference")
def score_reference(item: Item, answer: str) -> NeedsJudge:
    return needs_judge(item) if item.check is None else checked_or_judged(item, answer, needs_judge(item).contract)


@register("criteria")
def score_criteria(item: Item, answer: str) -> NeedsJudge:
    return needs_judge(item)


@register("probe")
def score_probe(item: Item, answer: str) -> NeedsJudge:
    return needs_judge(item)


# --- guards before the judge ----------------------------------------------------------------------

EMPTY_ANSWER = "empty_answer"
SHORT_ANSWER = "short_answer"
GUARD_FLAGS: tuple[str, ...] = (EMPTY_ANSWER, SHORT_ANSWER)
# Prompt turns shorter than this are not removed as echoes: a one-word turn ("是") would eat the answer.
ECHO_MIN_CHARS = 8
_WHITESPACE = re.compile(r"\s+")


def _squeezed(text: str) -> str:
    """NFKC, lowercase, every whitespace character removed: what content is measured on."""
    return _WHITESPACE.sub("", unicodedata.normalize("NFKC", text).lower())


def answer_content(item: Item, answer: str) -> tuple[str, bool]:
    """(the answer's content, whether an echo of the prompt was removed): reasoning dropped,
    squeezed as :func:`_squeezed`, and every prompt turn of ``ECHO_MIN_CHARS`` or more cut out."""
    text = _squeezed(strip_reasoning(answer)[0])
    echoed = False
    prompt = {_squeezed(turn["content"]) for turn in item.chat_messages()} | {_squeezed(item.question or "")}
    turns = sorted(prompt, key=len, reverse=True)
    for turn in turns:  # longest first: a whole question goes before a turn inside it
        if len(turn) >= ECHO_MIN_CHARS and turn in text:
            text, echoed = text.replace(turn, ""), True
    return text, echoed


def min_answer_chars(item: Item) -> int:
    """The least content an answer to ``item`` needs to be judged (module doc); 0 = no minimum."""
    floor = spec_of(item.gold_type).min_answer_chars
    if not floor or item.check is not None:
        return 0
    if item.gold_type == "reference" and isinstance(item.gold, str):
        return min(floor, len(_squeezed(item.gold)))
    return floor


@dataclass(frozen=True)
class AnswerGuard:
    """Why an answer is not sent to the judge: ``flag`` is one of :data:`GUARD_FLAGS`."""

    flag: str
    content_chars: int
    min_chars: int
    echo_removed: bool = False

    def to_record(self) -> dict[str, Any]:
        return asdict(self)


def guard_answer(item: Item, answer: str, *, truncated: bool = False) -> AnswerGuard | None:
    """``empty_answer`` / ``short_answer`` for an answer not worth a judge call, else None;
    ``truncated``: the answer was cut at its token budget (never ``short_answer``, see the module doc)."""
    content, echoed = answer_content(item, answer)
    least = min_answer_chars(item)
    if not content:
        return AnswerGuard(EMPTY_ANSWER, 0, least, echoed)
    if len(content) < least and not truncated:
        return AnswerGuard(SHORT_ANSWER, len(content), least, echoed)
    return None
