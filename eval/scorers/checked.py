"""Objective checks as scores, with the judge's verdict kept beside them.

An item that declares ``check`` (``eval.items.CHECKS``) is scored by running it: ``sql`` executes the
reference's and the answer's SQL on the same synthetic database (``eval.objective.sql.check``), ``api_call``
compares the call in the answer with the reference's (``eval.objective.api_call.check``). Why both views: the check
decides what is right — a judge cannot see that two SQL texts return the same rows — while the
judge's four dimensions still explain an answer and watch its safety. So the check's score is the
row's ``value`` / ``passed`` and the judge's sits beside it (see ``eval.items.scores``).

Score of a check that ran: value = passed = 1 on ``match``, 0 otherwise (``mismatch``, and for SQL
``model_sql_invalid`` / ``no_sql_found``, for calls ``no_call_found``: the answer offers nothing
usable, which is a wrong answer, not a missing one). Metrics: ``CHECK_METRICS[check]`` (1/0) and,
for calls, ``param_score`` (share of the reference's parameters the call got right). A check whose
reference cannot run (SQL ``reference_not_executable``, call ``reference_unparseable``) scores
nothing: the item falls back to the judge and the row names the outcome and its reason.

All functions are pure: an item and texts in, a Score out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from eval.items import Item
from eval.items.scores import CHECK_METRICS, JUDGE_PASSED_METRIC, JUDGE_VALUE_METRIC, Score
from eval.scorers.registry import JudgeContract, NeedsJudge, with_note

# Outcomes after which a check has nothing to compare against (the item's reference is at fault).
NOT_CHECKABLE = ("reference_not_executable", "reference_unparseable")


def run_check(item: Item, answer: str) -> Score | dict[str, Any]:
    """The check's Score, or — when the reference cannot run — ``{"kind", "outcome", "reason"}``."""
    if item.check is None:
        raise ValueError(f"{item.id}: declares no check")
    metric = CHECK_METRICS[item.check]
    question = item.question if item.question is not None else "\n".join(m["content"] for m in item.chat_messages())
    metrics: dict[str, float]
    # Imported here, not at the top: the SQL check brings sqlglot (half a second), which every
    # `import eval` would otherwise pay, checked items or not.
    if item.check == "sql":
        from eval.objective.sql.check import check_sql

        sql = check_sql(question, item.gold, answer)
        outcome, passed, evidence = sql.outcome, sql.passed, dict(sql.details)
        metrics = {metric: float(bool(passed))}
    else:
        from eval.objective.api_call.check import check_api_call

        call = check_api_call(question, item.gold, answer)
        outcome, passed, evidence = call.outcome, call.passed, call.to_dict()
        metrics = {metric: float(bool(passed)), "param_score": float(call.param_score or 0.0)}
    if outcome in NOT_CHECKABLE:
        notes = evidence.get("notes") or []
        reason = evidence.get("reason") or (notes[0] if notes else outcome)
        return {"kind": item.check, "outcome": outcome, "reason": reason}
    record = {
        "kind": item.check,
        "outcome": outcome,
        **{k: v for k, v in evidence.items() if k not in ("outcome", "passed")},
    }
    return Score(
        status="scored",
        value=float(bool(passed)),
        passed=bool(passed),
        metrics=metrics,
        details={"primary": "check", "check": record, "notes": []},
    )


def checked_or_judged(item: Item, answer: str, contract: JudgeContract) -> NeedsJudge:
    """What a reference item with a check asks for: the judge, with the check's score or the reason it has none."""
    result = run_check(item, answer)
    if isinstance(result, Score):
        return NeedsJudge(contract, objective=result)
    return NeedsJudge(contract, check_failed=result)


def fallback_note(failed: Mapping[str, Any]) -> str:
    return (
        f"the {failed['kind']} check could not run ({failed['outcome']}: {failed['reason']}); "
        "this item is scored by the judge"
    )


def beside_judge(objective: Score, judged: Score) -> Score:
    """The check's score as the primary, the judge's verdict beside it (``eval.items.scores`` module doc).

    A judge that gave no verdict (``judged`` is an infra_error) does not take the score away: the
    check still counts, and ``details["judge_error"]`` records the judge's failure.
    """
    if judged.status != "scored":
        details = {**objective.details, "judge_error": dict(judged.details)}
        return replace(objective, judge=judged.judge, details=details)
    beside = {JUDGE_VALUE_METRIC: float(judged.value or 0.0), JUDGE_PASSED_METRIC: float(bool(judged.passed))}
    details = {
        **judged.details,
        **objective.details,
        "notes": [*judged.details.get("notes", ()), *objective.details.get("notes", ())],
    }
    return replace(
        objective, metrics={**judged.metrics, **objective.metrics, **beside}, judge=judged.judge, details=details
    )


def judge_fallback(judged: Score, failed: Mapping[str, Any]) -> Score:
    """The judge's score of an item whose check could not run, saying so."""
    noted = with_note(judged, fallback_note(failed))
    return replace(noted, details={**noted.details, "primary": "judge", "check": dict(failed)})


def without_judge(needs: NeedsJudge, reason: str) -> Score:
    """What a judged answer scores when no judge is asked: its check's score, else ``unscorable``."""
    if needs.objective is not None:
        return needs.objective
    if needs.check_failed is not None:
        return Score(
            "unscorable",
            details={"reason": f"{fallback_note(needs.check_failed)}, but {reason}", "check": dict(needs.check_failed)},
        )
    return Score("unscorable", details={"reason": f"needs the LLM judge, but {reason}"})
