"""Criterion-by-criterion grading of criteria items (``criteria_grading: both | items`` in the pool).

Beside the four-dimension verdict, every judge (each panel member) grades each ``expected_topics``,
``must_warn`` and ``must_not`` entry of a criteria answer as met / not met with the quoted evidence
(``criteria_items`` contract, stage ``judge:…:criteria_items``, one re-ask for an unparseable reply,
as any verdict). A panel's verdict on a criterion follows the pool's ``panel_rule`` over the members
that gave one (``judge.panel.combine_votes``, as in the criteria calibration: under ``majority`` a tie
is not met / not said; under ``reliability`` each member's weight comes from its votes on every
criterion of the run). ``judge.contracts.criteria_items`` turns the verdicts into a score and a pass.

The row keeps both: ``metrics.items_score`` / ``items_passed`` and ``details.criteria_items``
beside the holistic verdict; with ``items`` the row ranks by the points (value and passed are the
points'), and the holistic verdict moves to ``metrics.holistic_value`` / ``holistic_passed``.
No criterion verdict from any judge: the row stays holistic and says ``criteria_items: "no verdict"``.

A judge that asks for token logprobs (``judge_scores: weighted``) also gives each criterion's P(met)
(``judge.weighting``): ``details.criteria_items.items[i].p_met``, a panel's being the mean over the
members that gave one; absent where no member's ``met`` position could be read. Each member's vote on
a criterion with a P(met) is then P(met) ≥ that judge's cut — the threshold its criteria calibration
chose, else 0.5 (``pool.score.p_met_cut``) — before ``panel_rule`` combines the votes; the points, score
and pass follow those votes, and the row keeps the written ones beside them (``items[i].met_written``,
``written: {score, passed}``, ``p_met_cut: {judge: {value, calibration}}``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from eval.items.scores import Score
from judge.contracts.criteria_items import criteria_ids, criteria_items_judge_prompt, score_criteria_items
from judge.contracts.framing import question_text
from judge.contracts.table import reask_prompt
from judge.panel import combine_votes
from judge.parse import parse_criteria_items
from judge.verdicts import CriteriaItemsVerdict, CriterionMet, ParseFailure
from judge.weighting import weigh_criteria_items
from pool.score.identity import JudgeSetup
from pool.score.p_met_cut import cut_verdict, p_met_cut
from pool.score.rounds import JudgeRounds, answer_for_judge
from pool.store.outcome import Result, Unit

CONTRACT = "criteria_items"
Key = tuple[str, str]


def _messages(stage: JudgeRounds, answer: Result) -> tuple[dict[str, str], ...]:
    gold = stage.items[answer.item_id].gold
    return criteria_items_judge_prompt(
        question_text(stage.items[answer.item_id]),
        gold["expected_topics"],
        gold.get("must_warn", ()),
        gold.get("must_not", ()),
        answer_for_judge(answer.text),
    )


def _p_met(judge: JudgeSetup, row: Result) -> dict[str, float]:
    """P(met) per criterion id of ``row``'s verdict, when ``judge`` asked for token logprobs."""
    if judge.top_logprobs is None or not isinstance(row.extra, dict):
        return {}
    return weigh_criteria_items(row.text, row.extra.get("logprobs"))


async def _member_verdicts(
    stage: JudgeRounds, judge: JudgeSetup, answers: Sequence[Result], p_met: dict[Key, dict[str, float]] | None = None
) -> dict[Key, CriteriaItemsVerdict]:
    """``judge``'s criterion verdicts on every answer, with one re-ask for an unparseable reply; each
    verdict's P(met) per criterion goes into ``p_met`` when given (:func:`_p_met`)."""
    first = [
        (Unit(a.model, a.item_id, judge.stage(stage.items[a.item_id], contract=CONTRACT)), _messages(stage, a))
        for a in answers
    ]
    await stage.judge_round(first, setup=judge)
    out: dict[Key, CriteriaItemsVerdict] = {}
    again = []
    for answer, (unit, messages) in zip(answers, first, strict=True):
        ids = [cid for cid, _, _ in criteria_ids(stage.items[answer.item_id].gold)]
        row = stage.store.get_result(stage.run_id, unit)
        if row is None or row.status == "infra_error":
            continue
        parsed = parse_criteria_items(row.text, ids)
        if isinstance(parsed, ParseFailure):
            again.append(
                (
                    Unit(answer.model, answer.item_id, judge.stage(stage.items[answer.item_id], True, CONTRACT)),
                    reask_prompt(CONTRACT, messages, row.text, parsed.reason),
                )
            )
        else:
            out[(answer.model, answer.item_id)] = parsed
            if p_met is not None:
                p_met[(answer.model, answer.item_id)] = _p_met(judge, row)
    await stage.judge_round(again, setup=judge)
    for unit, _ in again:
        row = stage.store.get_result(stage.run_id, unit)
        if row is not None and row.status != "infra_error":
            parsed = parse_criteria_items(row.text, [cid for cid, _, _ in criteria_ids(stage.items[unit.item_id].gold)])
            if not isinstance(parsed, ParseFailure):
                out[(unit.model, unit.item_id)] = parsed
                if p_met is not None:
                    p_met[(unit.model, unit.item_id)] = _p_met(judge, row)
    return out


def panel_criteria_verdicts(
    ids: Sequence[Sequence[str]], verdicts: Sequence[Sequence[CriteriaItemsVerdict | None]], rule: str = "majority"
) -> list[CriteriaItemsVerdict | None]:
    """The panel's verdict on every answer from its members' (``verdicts[answer][member]``; ``ids[answer]``
    the answer's criterion ids): per criterion ``judge.panel.combine_votes`` of the members that
    answered it under the pool's ``panel_rule`` — the function the criteria calibration uses, so under
    ``reliability`` each member's reliability comes from its votes on every criterion of the run. A
    criterion no member answered is missing; an answer no member judged is None."""
    rows = [(a, cid) for a, answer_ids in enumerate(ids) for cid in answer_ids]
    members = max((len(v) for v in verdicts), default=0)
    votes = np.full((len(rows), members), np.nan)
    for r, (a, cid) in enumerate(rows):
        for m, verdict in enumerate(verdicts[a]):
            met = None if verdict is None else verdict.met_by_id().get(cid)
            if met is not None:
                votes[r, m] = float(met)
    combined, _ = combine_votes(votes, rule)
    passed = dict(zip(rows, combined, strict=True))
    out: list[CriteriaItemsVerdict | None] = []
    for a, answer_ids in enumerate(ids):
        given = [v for v in verdicts[a] if v is not None]
        if not given:
            out.append(None)
            continue
        items, missing = [], []
        for cid in answer_ids:
            met = passed[(a, cid)]
            if met is None:
                missing.append(cid)
                continue
            evidence = (i.evidence for v in given for i in v.items if i.id == cid and i.met == met and i.evidence)
            items.append(CriterionMet(cid, met, next(evidence, "")))
        stages = [v.parse_stage for v in given]
        out.append(
            CriteriaItemsVerdict(
                tuple(items),
                parse_stage=max(stages, key=("strict", "repaired", "patterns").index),
                missing=tuple(missing),
            )
        )
    return out


def with_items(score: Score, graded: dict[str, Any] | None, mode: str) -> Score:
    """The holistic score with the criterion grading beside it, or ranking by it (``mode == "items"``)."""
    if graded is None:
        return replace(score, details={**score.details, "criteria_items": "no verdict"})
    metrics = {**score.metrics, "items_score": float(graded["score"]), "items_passed": 1.0 if graded["passed"] else 0.0}
    details = {**score.details, "criteria_items": graded}
    if mode != "items":
        return replace(score, metrics=metrics, details=details)
    metrics.update(holistic_value=score.value, holistic_passed=None if score.passed is None else float(score.passed))
    return replace(
        score,
        value=float(graded["score"]),
        passed=bool(graded["passed"]),
        metrics=metrics,
        details={**details, "ranked_by": "criteria_items"},
    )


async def grade_criteria_items(
    stage: JudgeRounds, answers: Sequence[Result], scores: dict[Key, Score], mode: str, panel_rule: str = "majority"
) -> None:
    """Every scored criteria answer graded criterion by criterion by every judge, a panel's votes combined
    under ``panel_rule`` (:func:`panel_criteria_verdicts`); merged into ``scores``."""
    wanted = [
        a
        for a in answers
        if stage.items[a.item_id].gold_type == "criteria" and scores[(a.model, a.item_id)].status == "scored"
    ]
    if not wanted:
        return
    p_met: list[dict[Key, dict[str, float]]] = [{} for _ in stage.panel]
    by_member = [await _member_verdicts(stage, judge, wanted, p) for judge, p in zip(stage.panel, p_met, strict=True)]
    keys = [(a.model, a.item_id) for a in wanted]
    ids = [[cid for cid, _, _ in criteria_ids(stage.items[a.item_id].gold)] for a in wanted]
    # A weighing judge votes P(met) ≥ its calibrated cut (pool.score.p_met_cut); the written votes are kept.
    weighing = any(p for member in p_met for p in member.values())
    cuts = [p_met_cut(judge, stage.items[wanted[0].item_id]) for judge in stage.panel] if weighing else []
    cut_members = (
        [
            {key: cut_verdict(v, p.get(key, {}), c.value) for key, v in member.items()}
            for member, p, c in zip(by_member, p_met, cuts, strict=True)
        ]
        if weighing
        else by_member
    )
    verdicts = panel_criteria_verdicts(ids, [[member.get(key) for member in cut_members] for key in keys], panel_rule)
    written = (
        panel_criteria_verdicts(ids, [[member.get(key) for member in by_member] for key in keys], panel_rule)
        if weighing
        else verdicts
    )
    for key, verdict, argmax in zip(keys, verdicts, written, strict=True):
        gold = stage.items[key[1]].gold
        graded = (
            None if verdict is None else {**score_criteria_items(gold, verdict), "parse_stage": verdict.parse_stage}
        )
        if graded is not None:
            _add_p_met(graded, [member.get(key, {}) for member in p_met])
            if weighing and argmax is not None:
                _add_written(graded, score_criteria_items(gold, argmax))
                graded["p_met_cut"] = {j.model.name: c.to_record() for j, c in zip(stage.panel, cuts, strict=True)}
        scores[key] = with_items(scores[key], graded, mode)


def _add_written(graded: dict[str, Any], argmax: dict[str, Any]) -> None:
    """Beside the weighted grading, the one from the written met / not met: ``met_written`` per criterion
    and the ``written`` score and pass (``pool.score.p_met_cut``)."""
    written = {row["id"]: row["met"] for row in argmax["items"]}
    for row in graded["items"]:
        row["met_written"] = written.get(row["id"])
    graded["written"] = {"score": argmax["score"], "passed": argmax["passed"]}


def _add_p_met(graded: dict[str, Any], by_member: Sequence[dict[str, float]]) -> None:
    """Each graded criterion's ``p_met``: the mean of the members' P(met) that were read (module doc)."""
    for row in graded["items"]:
        given = [member[row["id"]] for member in by_member if row["id"] in member]
        if given:
            row["p_met"] = round(sum(given) / len(given), 4)
