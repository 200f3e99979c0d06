"""``python -m pool.calibrate --pool FILE --set criteria``: how well each judge of the pool grades criteria.

The set is built from the criteria items of ``--suite`` (the first ``--items`` N of them):
``--per-item`` synthetic answers per item whose truth is known by construction
(``judge.calibration.criteria_set``: every criterion's text is in the answer or not). Every judge of
the pool — the one ``judge:`` or each member of a ``judges:`` panel — is set up as a run sets it
up (``pool.calibrate.judging.open_judge``) and sent every answer twice, with one re-ask for an
unparseable reply:

- ``criteria_items`` (per criterion: met / not met, for ``N`` ids said / not said) → per kind
  (topic, warning, forbidden) precision, recall, F1, counts and coverage
  (``criteria_item_metrics``);
- ``criteria`` (the holistic four-dimension verdict) → Spearman ρ of its coverage dimension
  against the true coverage (``holistic_coverage_rank``); its other fields are not used.

A pool with more than one judge is also calibrated as a panel: its verdict on a criterion is
``judge.panel.combine_votes`` over the members' met / not met under the pool's ``panel_rule`` (for
``reliability``, each member's reliability is estimated with ``estimate_reliability`` from the
members' own votes on every criterion of the set; the function a run's criterion grading uses),
and its holistic coverage is the median of the members' coverage scores (members without a verdict left out);
weighted, its P(met) is the members' mean P(met) and its expected coverage their median.

Each judge, and the panel, is one entry of the calibration store (``judge.calibration.store``)
under its identity — ``pool.calibrate.judging.judge_identity`` plus the ``criteria_items`` prompt version
and ``"set_kind": "criteria"``; the panel's is ``panel:<members>``, its rule and each member's key
— so a criteria calibration never shares a file with a claim calibration, and drift is judged on
the per-kind F1 and the holistic ρ of the same set.

Exit codes, as the claim calibration: 0 stored; 1 some judge calls failed (nothing stored, for
any judge: run again, answered requests come from the response cache); 2 bad input; 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from eval.items import Item
from judge.calibration.criteria_set import (
    CriteriaCalibrationAnswer,
    CriteriaCalibrationSet,
    criteria_calibration_set,
    criteria_item_metrics,
    holistic_coverage_rank,
)
from judge.calibration.probabilities import weighted_criteria_metrics
from judge.calibration.store import (
    CRITERIA_SET_KIND,
    THRESHOLD_KEY,
    CalibrationStoreError,
    judge_key,
)
from judge.contracts.criteria_items import KINDS, criteria_ids, kind_of
from judge.contracts.framing import Message
from judge.contracts.spec import Contract
from judge.contracts.table import contract_spec, prompt_version
from judge.panel import Reliability, combine_votes
from judge.verdicts import CriteriaItemsVerdict
from judge.weighting import weigh_criteria_items, weigh_rubric
from pool.calibrate.criteria_text import render_criteria_text
from pool.calibrate.judging import (
    CANDIDATE,
    EXIT_INPUT,
    REPLY_KEPT_CHARS,
    JudgeAsk,
    JudgeReply,
    failed_calls_exit,
    judge_identity,
    open_judge,
    record_unless_failed,
    run_judging,
)
from pool.config import Model, PoolConfig, PoolConfigError, load_pool
from pool.execute.response_cache import ResponseCache
from pool.items_source import DataError, load_run_items
from pool.score.identity import JudgeSetup
from pool.store.outcome import Unit

# ``--set criteria``: the word that asks for this calibration, and its defaults.
CRITERIA_SET = "criteria"
REPO = Path(__file__).resolve().parents[2]
DEFAULT_SUITE = REPO.parent / "shared" / "data" / "book-gold" / "internists.yaml"
DEFAULT_ITEMS, DEFAULT_PER_ITEM, DEFAULT_SEED = 20, 3, 0
# The holistic contract first, then the per-criterion one: consecutive requests share a system prompt.
CONTRACTS: tuple[Contract, ...] = ("criteria", "criteria_items")
# The contract a run names in its stage: none for the item's own (holistic) verdict, as pool.score does.
RUN_STAGE_CONTRACT: dict[str, str | None] = {"criteria": None, "criteria_items": "criteria_items"}


@dataclass(frozen=True)
class CriteriaInputs:
    """What a criteria calibration is run on: the pool, its judges and the set built from the suite."""

    config: PoolConfig
    judges: tuple[Model, ...]
    suite: Path
    items: dict[str, Item]  # the calibrated items by id, in suite order
    calibration_set: CriteriaCalibrationSet
    per_item: int
    seed: int


@dataclass(frozen=True)
class JudgeCriteria:
    """One judge's (or the panel's) verdicts on every answer of the set, in set order."""

    name: str
    identity: dict[str, Any]
    met: list[dict[str, bool] | None]  # criteria_items: {criterion id: met / said}; None without a verdict
    coverage: list[float | None]  # the holistic coverage dimension; None without a verdict
    reasons: list[dict[str, str]]  # contract → why there is no verdict
    replies: list[dict[str, str]]  # contract → the reply read (kept for answers it got wrong)
    failed: list[str]  # answer ids with a failed call: the calibration is not stored
    counts: dict[str, int]
    reliability: Reliability | None = None  # a panel under the reliability rule
    # Weighed from the replies' token logprobs (judge.weighting), None where absent: P(met) per criterion
    # the verdict judged, and the holistic coverage's expected value.
    p_met: list[dict[str, float] | None] = field(default_factory=list)
    weighted_coverage: list[float | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        # built without the weighted side (no logprobs asked): none for every answer
        for name in ("p_met", "weighted_coverage"):
            if not getattr(self, name):
                object.__setattr__(self, name, [None] * len(self.met))


def load_criteria_items(suite: Path, given: bool) -> list[Item]:
    """The scorable criteria items of ``suite``, in file order, read by the run's loaders."""
    if not suite.is_file():
        where = (
            "--suite" if given else "the default suite (../shared/data/book-gold/internists.yaml beside the repository)"
        )
        raise ValueError(f"{suite}: not found ({where}); pass --suite PATH to a file of criteria items")
    try:
        loaded = load_run_items([str(suite)])
    except DataError as exc:
        raise ValueError(str(exc)) from None
    items = [item for item in loaded.scorable_items if item.gold_type == "criteria"]
    if not items:
        raise ValueError(
            f"{suite}: no scorable criteria items (questions with expected_topics / must_warn / must_not); "
            "pass --suite PATH to a criteria suite such as the book-gold YAML"
        )
    return items


def criteria_inputs(args: argparse.Namespace) -> CriteriaInputs:
    """The pool, its judges and the set, or ValueError / PoolConfigError saying what is wrong."""
    count = DEFAULT_ITEMS if args.items is None else args.items
    per_item = DEFAULT_PER_ITEM if args.per_item is None else args.per_item
    seed = DEFAULT_SEED if args.seed is None else args.seed
    if count < 1 or per_item < 1:
        raise ValueError(f"--items and --per-item must be at least 1, got {count} and {per_item}")
    suite = Path(args.suite).expanduser() if args.suite else DEFAULT_SUITE
    items = load_criteria_items(suite, given=args.suite is not None)[:count]
    config = load_pool(args.pool)
    judges = config.judge_models()
    if not judges:
        raise ValueError(
            f"{args.pool}: the pool has no judge: or judges: block; add one (see the shipped model_pool.yaml)"
        )
    calibration_set = criteria_calibration_set(items, per_item, None, seed)
    return CriteriaInputs(config, judges, suite, {item.id: item for item in items}, calibration_set, per_item, seed)


def criteria_identity(config: PoolConfig, setup: JudgeSetup) -> dict[str, Any]:
    """The judge's claim-calibration identity plus the ``criteria_items`` prompt version and the set kind."""
    identity = judge_identity(config, setup)
    return {
        **identity,
        "prompt_versions": {**identity["prompt_versions"], **{c: prompt_version(c) for c in CONTRACTS}},
        "set_kind": CRITERIA_SET_KIND,
    }


def criteria_messages(contract: Contract, item: Item, answer: str) -> tuple[Message, ...]:
    """The request a run sends for ``contract`` on this item's criteria, with ``answer`` as the candidate's."""
    return contract_spec(contract).build(item, answer)


def _parser(contract: Contract, item: Item) -> Callable[[str], Any]:
    spec = contract_spec(contract)
    return lambda reply: spec.parse(item, reply)


def _wrong(answer: CriteriaCalibrationAnswer, met: Mapping[str, bool] | None) -> bool:
    return met is None or any(met.get(criterion_id) != true for criterion_id, true in answer.truth.items())


async def judge_criteria(
    config: PoolConfig,
    judges: Sequence[Model],
    items: Mapping[str, Item],
    answers: Sequence[CriteriaCalibrationAnswer],
    work_dir: Path,
    cache: ResponseCache | None,
) -> list[JudgeCriteria]:
    """Every judge's verdicts on every answer, judge by judge (each on its own session and run store)."""
    out: list[JudgeCriteria] = []
    for index, judge in enumerate(judges, 1):
        folder = work_dir / f"judge-{index}"
        folder.mkdir()
        async with open_judge(config, judge, folder, cache) as calls:
            setup = calls.setup
            asks = [
                JudgeAsk(
                    Unit(CANDIDATE, answer.id, setup.stage(item, contract=RUN_STAGE_CONTRACT[contract])),
                    Unit(CANDIDATE, answer.id, setup.stage(item, reask=True, contract=RUN_STAGE_CONTRACT[contract])),
                    contract,
                    criteria_messages(contract, item, answer.text),
                    _parser(contract, item),
                    item,
                )
                for contract in CONTRACTS
                for answer in answers
                for item in (items[answer.item_id],)
            ]
            replies = await calls.ask(asks)
            counts = calls.counts()
            identity = criteria_identity(config, setup)
        by_contract = {
            contract: replies[n * len(answers) : (n + 1) * len(answers)] for n, contract in enumerate(CONTRACTS)
        }
        out.append(_verdicts(judge.name, identity, answers, by_contract, counts))
    return out


def _verdicts(
    name: str,
    identity: dict[str, Any],
    answers: Sequence[CriteriaCalibrationAnswer],
    by_contract: Mapping[str, Sequence[JudgeReply]],
    counts: dict[str, int],
) -> JudgeCriteria:
    met: list[dict[str, bool] | None] = []
    coverage: list[float | None] = []
    p_met: list[dict[str, float] | None] = []
    weighted: list[float | None] = []
    reasons: list[dict[str, str]] = []
    replies: list[dict[str, str]] = []
    failed: list[str] = []
    for answer, holistic, per_item in zip(answers, by_contract["criteria"], by_contract["criteria_items"], strict=True):
        verdict = per_item.verdict
        met.append(verdict.met_by_id() if isinstance(verdict, CriteriaItemsVerdict) else None)
        coverage.append(float(holistic.verdict.coverage) if holistic.verdict is not None else None)
        p_met.append(_p_met(per_item))
        weighted.append(_weighted_coverage(holistic))
        pair = {"criteria": holistic, "criteria_items": per_item}
        reasons.append({c: r.reason for c, r in pair.items() if r.verdict is None})
        kept = {
            c: r.text[:REPLY_KEPT_CHARS]
            for c, r in pair.items()
            if r.text and (r.verdict is None or (c == "criteria_items" and _wrong(answer, met[-1])))
        }
        replies.append(kept)
        if holistic.failed or per_item.failed:
            failed.append(answer.id)
    return JudgeCriteria(name, identity, met, coverage, reasons, replies, failed, counts, None, p_met, weighted)


def _p_met(reply: JudgeReply) -> dict[str, float] | None:
    """P(met) of each criterion the parsed verdict judged, from the reply's logprobs; None without any."""
    if not isinstance(reply.verdict, CriteriaItemsVerdict) or reply.logprobs is None:
        return None
    judged = reply.verdict.met_by_id()
    row = {cid: p for cid, p in weigh_criteria_items(reply.text, reply.logprobs).items() if cid in judged}
    return row or None


def _weighted_coverage(reply: JudgeReply) -> float | None:
    """The holistic verdict's expected coverage score, from the reply's logprobs; None without it."""
    if reply.verdict is None or reply.logprobs is None:
        return None
    weighted = weigh_rubric(reply.text, reply.logprobs)
    return None if weighted is None else weighted.get("coverage")


def panel_criteria(
    members: Sequence[JudgeCriteria], rule: str, items: Mapping[str, Item], answers: Sequence[CriteriaCalibrationAnswer]
) -> JudgeCriteria:
    """The panel's verdicts: per criterion ``combine_votes`` of the members' met / not met under ``rule``;
    holistic coverage the median of the members' (module doc)."""
    rows = [
        (index, criterion_id)
        for index, answer in enumerate(answers)
        for criterion_id, _, _ in criteria_ids(items[answer.item_id].gold)
    ]
    votes = np.array(
        [
            [np.nan if m.met[i] is None or cid not in m.met[i] else float(m.met[i][cid]) for m in members]
            for i, cid in rows
        ],
        dtype=float,
    ).reshape(len(rows), len(members))
    verdicts, reliability = combine_votes(votes, rule)
    met: list[dict[str, bool] | None] = [
        None if all(m.met[i] is None for m in members) else {} for i in range(len(answers))
    ]
    for (i, cid), passed in zip(rows, verdicts, strict=True):
        target = met[i]
        if passed is not None and target is not None:
            target[cid] = passed
    coverage = [_median([m.coverage[i] for m in members]) for i in range(len(answers))]
    weighted = [_median([m.weighted_coverage[i] for m in members]) for i in range(len(answers))]
    p_met = [_mean_p([m.p_met[i] for m in members]) for i in range(len(answers))]
    identity = {
        "name": "panel:" + ",".join(m.name for m in members),
        "backend": "panel",
        "rule": rule,
        "members": [judge_key(m.identity) for m in members],
        "member_names": [m.name for m in members],
        "prompt_versions": {c: prompt_version(c) for c in CONTRACTS},
        "set_kind": CRITERIA_SET_KIND,
    }
    counts = {key: sum(m.counts.get(key, 0) for m in members) for key in ("calls", "cache_hits")}
    reasons = [
        {"panel": "no member gave a verdict"} if met[i] is None and coverage[i] is None else {}
        for i in range(len(answers))
    ]
    return JudgeCriteria(
        identity["name"],
        identity,
        met,
        coverage,
        reasons,
        [{} for _ in answers],
        sorted({a for m in members for a in m.failed}),
        counts,
        reliability,
        p_met,
        weighted,
    )


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(np.median(present)) if present else None


def _mean_p(rows: Sequence[Mapping[str, float] | None]) -> dict[str, float] | None:
    """The panel's P(met) per criterion: the mean of the members' that weighed it."""
    by_id: dict[str, list[float]] = {}
    for row in rows:
        for cid, p in (row or {}).items():
            by_id.setdefault(cid, []).append(p)
    return {cid: round(float(np.mean(ps)), 6) for cid, ps in by_id.items()} or None


def criteria_metrics(answers: Sequence[CriteriaCalibrationAnswer], judged: JudgeCriteria) -> dict[str, Any]:
    """``{"overall": ...}``: per kind P/R/F1 of the per-criterion verdicts and the holistic ρ, side by side."""
    items = criteria_item_metrics([a.truth for a in answers], judged.met)
    scored = sum(c is not None for c in judged.coverage)
    holistic = {
        "spearman": holistic_coverage_rank([a.true_coverage for a in answers], judged.coverage),
        "scored": scored,
        "no_verdict": len(answers) - scored,
    }
    weighted = weighted_criteria_metrics(
        [a.truth for a in answers], judged.p_met, [a.true_coverage for a in answers], judged.weighted_coverage
    )
    return {
        "overall": {key: items[key] for key in ("answers", "answers_judged", "answers_no_verdict")}
        | {kind: items["kinds"][kind] for kind in KINDS}
        | {"holistic": holistic, "weighted": weighted}
    }


def criteria_entry(inputs: CriteriaInputs, judged: JudgeCriteria) -> dict[str, Any]:
    """The stored record of one judge's (or the panel's) criteria calibration (``judge.calibration.store``)."""
    answers = inputs.calibration_set.answers
    entry: dict[str, Any] = {
        "calibrated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "set": {
            "kind": CRITERIA_SET_KIND,
            "path": str(inputs.suite),
            "sha256": inputs.calibration_set.sha256,
            "answers": len(answers),
            "items": len(inputs.items),
            "per_item": inputs.per_item,
            "seed": inputs.seed,
        },
        "metrics": criteria_metrics(answers, judged),
        "criteria": [
            {
                "id": f"{a.id}#{cid}",
                "kind": kind_of(cid),
                "truth": true,
                "predicted": None if met is None else met.get(cid),
                **({"p_met": p[cid]} if p is not None and cid in p else {}),
            }
            for a, met, p in zip(answers, judged.met, judged.p_met, strict=True)
            for cid, true in a.truth.items()
        ],
        "answers": [
            {
                "id": a.id,
                "true_coverage": a.true_coverage,
                "coverage": coverage,
                **({"weighted_coverage": weighted} if weighted is not None else {}),
                **({"reasons": reasons} if reasons else {}),
                **({"replies": replies} if replies else {}),
            }
            for a, coverage, weighted, reasons, replies in zip(
                answers, judged.coverage, judged.weighted_coverage, judged.reasons, judged.replies, strict=True
            )
        ],
        "requests": dict(judged.counts),
    }
    weighed = entry["metrics"]["overall"]["weighted"]
    entry[THRESHOLD_KEY] = None if weighed is None else weighed["threshold"]
    if judged.reliability is not None:
        names = judged.identity["member_names"]
        entry["reliability"] = {
            "estimated_accuracy": dict(zip(names, judged.reliability.accuracy, strict=True)),
            "prevalence": judged.reliability.prevalence,
            "votes": judged.reliability.items,
        }
    return entry


def calibrate_criteria(args: argparse.Namespace) -> int:
    """``--set criteria``: the CLI's flow (module doc); returns the exit code."""
    try:
        inputs = criteria_inputs(args)
    except (PoolConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    answers = inputs.calibration_set.answers
    judged, code = run_judging(
        lambda work, cache: judge_criteria(inputs.config, inputs.judges, inputs.items, answers, work, cache), args
    )
    if judged is None:
        return code
    if len(judged) > 1:
        judged = [*judged, panel_criteria(judged, inputs.config.panel_rule, inputs.items, answers)]
    failed = sorted({a for j in judged for a in j.failed})
    rows: list[tuple[JudgeCriteria, dict[str, Any], str | None]] = []
    for one in judged:
        try:
            entry, stored = record_unless_failed(args, one.identity, criteria_entry(inputs, one), failed)
        except (CalibrationStoreError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_INPUT
        rows.append((one, entry, stored))
    if args.json:
        print(
            json.dumps(
                [{"judge_key": judge_key(j.identity), "identity": j.identity, **e} for j, e, _ in rows],
                ensure_ascii=False,
                indent=1,
            )
        )
    else:
        cs = inputs.calibration_set
        header = (
            f"criteria calibration: {inputs.suite} — {len(inputs.items)} items × {inputs.per_item} answers = "
            f"{len(cs.answers)} answers (seed {inputs.seed}, set sha256 {cs.sha256[:12]})"
        )
        print(render_criteria_text(header, [(j.name, judge_key(j.identity), e, stored) for j, e, stored in rows]))
    return failed_calls_exit(failed, f"judge calls failed on {len(failed)} answer(s)", "requests")
