"""From an item and a candidate answer to judge messages, and from the judge's reply to a Score.

The judge is a model role, called by the pool scheduler like any other request; this module only
builds messages and turns replies into ``eval.items.scores.Score`` (pure: no I/O, no HTTP). The flow:

    messages = judge_messages(item, answer)            → scheduler → reply
    parsed   = parse_reply(item, reply)
    if ParseFailure: messages2 = reask_messages(item, answer, reply, parsed.reason) → reply2
                     parsed = parse_reply(item, reply2)
    score    = judged_score(item, answer, parsed, judge)              # a verdict
             | unparseable_score(judge, parsed, reply2)               # still a ParseFailure

Every step goes through the item's contract — the one its gold type names (``eval.gold_types``) —
as declared in ``judge.contracts`` (how a rubric, probe or claim verdict scores is documented
there). An unparseable verdict is an ``infra_error`` score — excluded from every mean and counted
per judge — never a zero and never a model failure (a verdict the judge could not give says
nothing about the model). Every Score carries the ``JudgeIdentity`` (model, backend, prompt
version).
"""

from __future__ import annotations

from typing import Any

from eval.gold_types import GOLD_TYPE_SPECS, JUDGED_GOLD_TYPES
from eval.items import Item
from eval.items.scores import JudgeIdentity, Score
from judge.contracts.framing import Message
from judge.contracts.spec import Contract
from judge.contracts.table import contract_spec
from judge.rubric import Verdict
from judge.verdicts import CriteriaItemsVerdict, HalluVerdict, ParseFailure, ProbeVerdict

# An unparseable reply is kept in the score's details up to this many characters.
RAW_REPLY_MAX_CHARS = 4000


def needs_judge(item: Item) -> bool:
    """Whether the item is scored by the LLM judge: its gold type declares a judge contract."""
    return GOLD_TYPE_SPECS[item.gold_type].judged


def contract_for(item: Item) -> Contract:
    """The judge contract the item's gold type declares (``eval.gold_types``)."""
    contract = GOLD_TYPE_SPECS[item.gold_type].judge_contract
    if contract is None:
        raise ValueError(
            f"{item.id}: gold type {item.gold_type!r} is scored without the judge; "
            f"judged types: {', '.join(JUDGED_GOLD_TYPES)}"
        )
    return contract


def judge_messages(item: Item, answer_text: str) -> tuple[Message, ...]:
    """The judge request for this item's contract: a system and a user message."""
    return contract_spec(contract_for(item)).build(item, answer_text)


def hallu_messages(item: Item, answer_text: str) -> tuple[Message, ...]:
    """The claim-level hallucination request (``--hallu``); a reference or criteria gold is the evidence."""
    return contract_spec("hallu").build(item, answer_text)


def reask_messages(
    item: Item, answer_text: str, bad_reply: str, reason: str | None = None, *, contract: Contract | None = None
) -> tuple[Message, ...]:
    """The one follow-up after an unparseable reply: the request, the reply, "only the JSON object".

    ``contract`` (e.g. ``"hallu"``) re-asks that contract's request; otherwise the item's own.
    """
    spec = contract_spec(contract or contract_for(item))
    return spec.reask(spec.build(item, answer_text), bad_reply, reason)


def parse_reply(
    item: Item, reply_text: str, *, contract: Contract | None = None
) -> Verdict | ProbeVerdict | HalluVerdict | CriteriaItemsVerdict | ParseFailure:
    """The judge's reply through the parser of the item's contract (or of ``contract``, e.g. ``"hallu"``)."""
    return contract_spec(contract or contract_for(item)).parse(item, reply_text)


def judged_score(item: Item, answer_text: str, parsed: Any, judge: JudgeIdentity, *, reasked: bool = False) -> Score:
    """The Score of a parsed verdict under the item's contract; ``reasked`` records that a re-ask was needed."""
    if not isinstance(judge, JudgeIdentity):
        raise TypeError(f"judge must be an eval.items.scores.JudgeIdentity, got {type(judge).__name__}")
    if isinstance(parsed, ParseFailure):
        raise TypeError(
            "a ParseFailure has no score: re-ask once, then use unparseable_score(judge, failure, raw_reply)"
        )
    contract = contract_for(item)
    spec = contract_spec(contract)
    if spec.score is None or not isinstance(parsed, spec.verdict):
        raise ValueError(f"{item.id}: a {type(parsed).__name__} does not answer the {contract} contract")
    return spec.score(item, answer_text, parsed, judge, reasked)


def unparseable_score(judge: JudgeIdentity, reason: str | ParseFailure, raw_reply: str) -> Score:
    """The judge gave no parseable verdict even after the re-ask: an ``infra_error`` score.

    Excluded from every mean and counted per judge (the Score carries the identity); the reason and
    the reply (first 4,000 characters) are kept for audit.
    """
    if not isinstance(judge, JudgeIdentity):
        raise TypeError(f"judge must be an eval.items.scores.JudgeIdentity, got {type(judge).__name__}")
    details: dict[str, Any] = {"error": "judge_no_verdict"}
    if isinstance(reason, ParseFailure):
        details.update(reason=reason.reason, stage_reached=reason.stage_reached)
    else:
        details["reason"] = str(reason)
    raw = raw_reply if isinstance(raw_reply, str) else repr(raw_reply)
    details["raw_reply"] = raw[:RAW_REPLY_MAX_CHARS]
    if len(raw) > RAW_REPLY_MAX_CHARS:
        details["raw_reply_truncated"] = True
    return Score(status="infra_error", value=None, passed=None, judge=judge, details=details)
