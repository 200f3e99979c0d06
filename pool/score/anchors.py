"""Judge drift across nights: ``--anchor-sample N`` re-asks the judge, never from the cache.

A hosted judge can change behind the same name, and a cached verdict hides it. Each night, N fixed
rubric answers (the first N by sha256(model, item), so the same items every night) are judged
again on the unchanged prompt (stage ``judge:…:anchor``) with the response cache switched off for
that round, so the judge itself answers. The fresh verdict is compared with the run's own verdict for that answer;
when that verdict came from the cache it is an earlier night's, and the pair measures drift:

    pass agreement = share of anchors whose pass/fail is the same;  mean |Δ total| on the /40 scale.

Only pairs whose primary verdict was cached count as "previous" (``compared``); with a
deterministic judge, unchanged, every such pair agrees. ``routing.nights.compare`` warns in
``compare.md`` when the agreement drops below :data:`ANCHOR_AGREEMENT_FLOOR`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from judge import ParseFailure, judge_messages, judged_score, parse_reply
from pool.score.rounds import JudgeRounds, answer_for_judge, weighed
from pool.store.outcome import Result, Unit

ANCHOR_SUFFIX = ":anchor"
ANCHOR_AGREEMENT_FLOOR = 0.9


def anchor_sample(answers: Sequence[Result], n: int) -> list[Result]:
    """The same answers every night and on every resume, spread over the models: the first ``n`` by
    sha256(model, item id). The ``--rejudge-sample`` draws its sample the same way."""
    return sorted(answers, key=lambda a: hashlib.sha256(f"{a.model}\x1f{a.item_id}".encode()).hexdigest())[:n]


async def judge_anchors(
    stage: JudgeRounds, answers: Sequence[Result], scores: dict[tuple[str, str], Any], n: int
) -> dict[str, Any]:
    """Judge the anchor sample afresh; put ``details["anchor"]`` on each score and return the tally."""
    assert stage.judge is not None
    sample = anchor_sample(stage.scored_rubric_answers(answers, scores), n)
    rounds = [
        (
            Unit(a.model, a.item_id, stage.judge.stage(stage.items[a.item_id]) + ANCHOR_SUFFIX),
            judge_messages(stage.items[a.item_id], answer_for_judge(a.text)),
        )
        for a in sample
    ]
    await stage.judge_round(rounds, fresh=True)  # asked afresh: the cache is neither read nor written
    pairs = []
    for answer, (unit, _) in zip(sample, rounds, strict=True):
        item, key = stage.items[answer.item_id], (answer.model, answer.item_id)
        row = stage.store.get_result(stage.run_id, unit)
        primary = stage.store.get_result(stage.run_id, Unit(answer.model, answer.item_id, stage.judge.stage(item)))
        parsed = parse_reply(item, row.text) if row is not None and row.status != "infra_error" else None
        fresh: dict[str, Any] = {"primary_cached": bool(primary is not None and primary.cached)}
        if parsed is None or isinstance(parsed, ParseFailure):
            fresh["error"] = "no verdict" if parsed is not None else "judge call failed"
        else:
            again = weighed(stage.judge, item, judged_score(item, answer.text, parsed, stage.judge.identity(item)), row)
            score = scores[key]
            fresh.update(
                total=again.metrics["total"],
                passed=again.passed,
                agrees=again.passed == score.passed,
                total_diff=again.metrics["total"] - score.metrics["total"],
            )
            pairs.append(fresh)
        scores[key] = replace(scores[key], details={**scores[key].details, "anchor": fresh})
    return anchor_tally(pairs, asked=len(sample))


def anchor_tally(pairs: Sequence[dict[str, Any]], asked: int) -> dict[str, Any]:
    """Agreement of fresh anchor verdicts with the run's verdicts, over all pairs and over the
    pairs whose verdict came from an earlier night (``previous``)."""

    def agreement(subset: Sequence[dict[str, Any]]) -> dict[str, Any]:
        if not subset:
            return {"n": 0, "pass_agreement": None, "mean_abs_total_diff": None}
        return {
            "n": len(subset),
            "pass_agreement": round(sum(p["agrees"] for p in subset) / len(subset), 4),
            "mean_abs_total_diff": round(sum(abs(p["total_diff"]) for p in subset) / len(subset), 3),
        }

    previous = [p for p in pairs if p["primary_cached"]]
    tally = {
        "asked": asked,
        "verdicts": len(pairs),
        "all": agreement(pairs),
        "previous": agreement(previous),
        "floor": ANCHOR_AGREEMENT_FLOOR,
    }
    rate = tally["previous"]["pass_agreement"]
    tally["drift_warning"] = rate is not None and rate < ANCHOR_AGREEMENT_FLOOR
    return tally
