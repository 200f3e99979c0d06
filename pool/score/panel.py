"""A judge panel's verdict per answer: every member's score, aggregated under the pool's rule.

Each member judges every answer through the run's scheduler like a single judge (its own stages,
so it resumes, caches and re-asks on its own); this module turns the members' scores into one
``Score`` per answer with ``judge.panel`` (rules: majority, mean, reliability). The panel score's
judge identity is ``panel:<member names>`` whose setup holds the rule and every member's identity
key, so verdicts of a changed panel are never paired with tonight's. ``details["panel"]`` keeps
each member's verdict (total, dimensions, pass) or why it has none, the votes, the tie flag and,
under ``reliability``, each member's estimated accuracy. The side labels (context awareness,
seeks clarification, probe behaviour) are the members' majority (``judge.panel.panel_side_labels``);
the other details (rationale, warnings, parse stage) are those of the first member with a verdict.
No member verdict at all: an ``infra_error`` score, as for a single judge.

Members whose verdicts are probability-weighted (``judge.weighting``, ``details.score_variant:
weighted``) vote with their weighted dimensions and pass, so the panel rule combines weighted values
as it combines plain ones; the panel's ``details.score_variant`` is ``weighted`` when every voting
member's was, ``argmax`` when none was, ``mixed`` otherwise (each member's record says its own).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from eval.items import Item
from eval.items.scores import JudgeIdentity, Score
from judge import DIMENSIONS, contract_for, prompt_version, unparseable_score
from judge.panel import MemberVerdict, Reliability, aggregate, estimate_reliability, panel_side_labels
from judge.weighting import score_dims
from pool.score.identity import JudgeSetup
from pool.store.outcome import Result

Key = tuple[str, str]


def panel_identity(members: Sequence[JudgeSetup], rule: str, item: Item) -> JudgeIdentity:
    """Who judged as a panel: the rule and every member's full identity (by its key)."""
    return JudgeIdentity.of(
        "panel:" + ",".join(m.model.name for m in members),
        "panel",
        prompt_version(contract_for(item)),
        {
            "rule": rule,
            "members": [m.identity(item).key() for m in members],
            "member_names": [m.model.name for m in members],
            "member_model_ids": [m.model.model for m in members],
            "member_ggufs": [m.model.gguf or "" for m in members],
        },
    )


def member_verdict(score: Score | None) -> MemberVerdict:
    """A member's score as a vote: no verdict when the judge gave none (dead, unparseable)."""
    if score is None or score.status != "scored" or score.passed is None:
        return MemberVerdict(passed=None)
    return MemberVerdict(passed=bool(score.passed), dims=score_dims(score))


def _member_record(setup: JudgeSetup, item: Item, score: Score | None) -> dict[str, Any]:
    record: dict[str, Any] = {"name": setup.model.name, "key": setup.identity(item).key()}
    if score is None or score.status != "scored":
        record["error"] = "no verdict" if score is None else str(score.details.get("reason", "no verdict"))
        return record
    record.update(passed=score.passed, value=score.value)
    for key in ("score_variant", "weighted"):
        if key in score.details:
            record[key] = score.details[key]
    if "total" in score.metrics:
        record.update(
            total=score.metrics["total"], scores={d: score.metrics[d] for d in DIMENSIONS if d in score.metrics}
        )
    return record


def panel_reliability(answers: Sequence[Result], by_member: Sequence[Mapping[Key, Score]]) -> Reliability:
    """Each member's reliability estimated from the panel's pass/fail votes on every judged answer."""
    votes = np.full((len(answers), len(by_member)), np.nan)
    for row, answer in enumerate(answers):
        for column, scores in enumerate(by_member):
            verdict = member_verdict(scores.get((answer.model, answer.item_id)))
            if verdict.passed is not None:
                votes[row, column] = float(verdict.passed)
    if np.isnan(votes).all():  # nobody gave a verdict: every answer is an infra error anyway
        even = (0.5,) * len(by_member)
        return Reliability(
            sensitivity=even, specificity=even, prevalence=0.5, accuracy=even, items=0, iterations=0, converged=True
        )
    return estimate_reliability(votes)


def panel_scores(
    members: Sequence[JudgeSetup],
    rule: str,
    items: Mapping[str, Item],
    answers: Sequence[Result],
    by_member: Sequence[Mapping[Key, Score]],
) -> dict[Key, Score]:
    """The panel's score of every answer from its members' scores (same order as ``members``)."""
    reliability = None
    if rule == "reliability":
        reliability = panel_reliability(answers, by_member)
    out: dict[Key, Score] = {}
    for answer in answers:
        key, item = (answer.model, answer.item_id), items[answer.item_id]
        identity = panel_identity(members, rule, item)
        member_scores = [scores.get(key) for scores in by_member]
        verdict = aggregate([member_verdict(s) for s in member_scores], rule, reliability)
        block: dict[str, Any] = {
            "rule": rule,
            "votes": verdict.votes,
            "missing": verdict.missing,
            "tie": verdict.tie,
            "members": [_member_record(m, item, s) for m, s in zip(members, member_scores, strict=True)],
        }
        if reliability is not None:
            block["estimated_accuracy"] = {
                m.model.name: round(a, 4) for m, a in zip(members, reliability.accuracy, strict=True)
            }
        if verdict.passed is None:
            reasons = "; ".join(f"{r['name']}: {r.get('error', '')}" for r in block["members"])
            out[key] = replace(
                unparseable_score(identity, f"no panel member gave a verdict ({reasons})", ""),
                details={"error": "judge_no_verdict", "reason": "no panel member gave a verdict", "panel": block},
            )
            continue
        voted = [s for s in member_scores if s is not None and s.status == "scored" and s.passed is not None]
        lead = voted[0]
        metrics: dict[str, float] = (
            dict(lead.metrics)
            if verdict.dims is None
            else {**{d: round(v, 4) for d, v in verdict.dims.items()}, "total": round(sum(verdict.dims.values()), 4)}
        )
        if verdict.dims is None and "success" in metrics:
            metrics["success"] = 1.0 if verdict.passed else 0.0
        details = {**lead.details, **panel_side_labels([s.details for s in voted]), "panel": block}
        for own in ("weighted", "argmax", "score_variant"):  # the lead's own; the panel's variant is set below
            details.pop(own, None)
        variants = {s.details.get("score_variant") for s in voted}
        if variants != {None}:
            details["score_variant"] = variants.pop() if len(variants) == 1 else "mixed"
        out[key] = Score(
            status="scored",
            value=verdict.value,
            passed=verdict.passed,
            metrics=metrics,
            judge=identity,
            details=details,
        )
    return out
