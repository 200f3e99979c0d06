"""One registry of scorers, keyed by gold type, and the single entry point :func:`score_answer`.

A scorer is ``scorer(item, answer_text) -> Score | NeedsJudge``, registered with
``@register("gold_type")`` for a type declared in ``eval.gold_types``; a new item type is one
declaration line there plus one scorer here. ``score_answer`` handles what every scorer would
otherwise repeat, in this order:

1. the gold type must have a scorer (else :class:`UnknownGoldTypeError`, naming the registered ones);
2. an unscorable item (``item.scorable`` False) → ``Score(status="unscorable")``;
3. run status ``infra_error`` (no answer was obtained) → ``Score(status="infra_error")``, never 0;
4. status ``ok`` or ``error`` (answered badly: empty or truncated) is a real answer and is scored
   normally: a missing or empty answer scores 0, a judged type still goes to the judge (with its
   objective check's score, when it declares one: ``NeedsJudge.objective``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from eval.gold_types import GOLD_TYPE_SPECS, GOLD_TYPES, JudgeContract
from eval.items import Item
from eval.items.scores import PASS_THRESHOLD, Score

AnswerStatus = Literal["ok", "error", "infra_error"]
ANSWER_STATUSES: tuple[str, ...] = ("ok", "error", "infra_error")


@dataclass(frozen=True)
class NeedsJudge:
    """This answer is scored by the LLM judge under ``contract`` (the judge package builds the request).

    An item with an objective check (``Item.check``) still asks for the judge — its verdict explains
    and watches safety — but ``objective`` is the score that ranks it; without a judge that score
    stands alone. ``check_failed`` says why a declared check gave no score (its reference does not
    run), so the judge's verdict is the score and the row says so (``eval.scorers.checked``).
    """

    contract: JudgeContract
    objective: Score | None = None
    check_failed: Mapping[str, Any] | None = None


Scorer = Callable[[Item, str], "Score | NeedsJudge"]
SCORERS: dict[str, Scorer] = {}


class UnknownGoldTypeError(ValueError):
    """No scorer is registered for an item's gold type."""


def register(gold_type: str) -> Callable[[Scorer], Scorer]:
    """Decorator: make ``scorer`` the one scorer for ``gold_type``. Registering a type twice is an
    error (two scorers for one type would make results depend on import order), and so is a type
    not declared in ``eval.gold_types`` (its family, gold check and judge contract would be unknown)."""

    def decorate(scorer: Scorer) -> Scorer:
        if gold_type not in GOLD_TYPE_SPECS:
            raise ValueError(
                f"gold type {gold_type!r} is not declared; declared: {', '.join(GOLD_TYPES)}. "
                "Declare it in eval/gold_types.py (one GoldTypeSpec line) first."
            )
        if gold_type in SCORERS:
            raise ValueError(f"gold type {gold_type!r} already has a scorer ({SCORERS[gold_type].__qualname__})")
        SCORERS[gold_type] = scorer
        return scorer

    return decorate


def missing_scorer_message(gold_type: str) -> str:
    """Why ``gold_type`` cannot be scored, and where its scorer goes."""
    spec = GOLD_TYPE_SPECS.get(gold_type)
    family = f" (family {spec.family})" if spec else ""
    return (
        f"no scorer for gold type {gold_type!r}{family}; registered: {', '.join(sorted(SCORERS))}. "
        f"Add one with @register({gold_type!r}) in a module of eval/scorers/ (every module there is "
        "imported), e.g. the module of its family"
    )


def scorer_for(gold_type: str) -> Scorer:
    try:
        return SCORERS[gold_type]
    except KeyError:
        raise UnknownGoldTypeError(missing_scorer_message(gold_type)) from None


def score_answer(item: Item, answer_text: str | None, status: str) -> Score | NeedsJudge:
    """Score one answer to ``item``. ``status`` is the answer's run status (see the module doc)."""
    if status not in ANSWER_STATUSES:
        raise ValueError(f"answer status must be one of {list(ANSWER_STATUSES)}, got {status!r} (item {item.id})")
    scorer = scorer_for(item.gold_type)
    if not item.scorable:
        return Score(status="unscorable", details={"reason": item.skip_reason})
    if status == "infra_error":
        return Score(status="infra_error", details={"reason": "no answer was obtained (infra_error)"})
    result = scorer(item, answer_text or "")
    if status == "error":
        note = "answer status 'error' (empty or truncated): scored as given"
        if isinstance(result, Score):
            result = with_note(result, note)
        elif result.objective is not None:
            result = replace(result, objective=with_note(result.objective, note))
    return result


def with_note(score: Score, note: str) -> Score:
    """``score`` with ``note`` appended to ``details["notes"]``."""
    return replace(score, details={**score.details, "notes": [*score.details.get("notes", ()), note]})


def deterministic_score(
    value: float,
    parsed: Any,
    notes: Iterable[str],
    *,
    passed: bool | None = None,
    metrics: Mapping[str, float] | None = None,
    **details: Any,
) -> Score:
    """A judge-free Score: ``value`` in [0, 1]; passed defaults to value ≥ PASS_THRESHOLD; details
    always carry the parsed prediction and the parse notes."""
    value = min(max(float(value), 0.0), 1.0)
    return Score(
        status="scored",
        value=value,
        passed=value >= PASS_THRESHOLD if passed is None else passed,
        metrics=dict(metrics or {}),
        details={"parsed": parsed, "notes": list(notes), **details},
    )
