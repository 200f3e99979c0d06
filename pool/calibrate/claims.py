"""``python -m pool.calibrate --pool FILE [--set PATH]``: how well the pool's judge labels claims whose truth is known.

Every labelled claim of the set (``judge.calibration.claim_set``) is sent to the pool's ``judge:`` as
the candidate answer of the claim-level (``hallu``) contract, through the pool's scheduler,
lanes, retries and response cache — the same requests ``--hallu`` runs make, with one re-ask for
an unparseable reply (:mod:`pool.calibrate.judging`). The judge's labels give precision / recall /
F1 on ``unsupported``, 3-class accuracy and the confusion matrix, overall and per tier — and, for a
judge that weighs its verdicts by token logprobs, beside them the AUC of P(unsupported), its Youden
threshold and P/R/F1 at 0.5 and at that threshold (``judge.calibration.probabilities``); the result
is appended to the calibration store under the judge's full identity (``judge.calibration.store``),
compared with the previous calibration of that identity (drift), and shown in the report of every
run judged by it.

Exit codes: 0 calibrated and stored; 1 some judge calls failed (nothing stored — a partial
calibration would fake drift; run again, answered claims come from the cache); 2 bad input
(pool file, set, store, options); 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from eval.loaders.base import ItemFormatError
from judge.calibration.claim_set import (
    NO_VERDICT,
    CalibrationSet,
    LabelledClaim,
    claim_label,
    load_calibration_set,
    metrics_by_tier,
)
from judge.calibration.probabilities import claim_p_unsupported, weighted_claim_metrics
from judge.calibration.store import CalibrationStoreError, judge_key
from judge.contracts.framing import Message
from judge.contracts.hallu import hallu_judge_prompt
from judge.parse import parse_claims
from pool.calibrate.criteria import CRITERIA_SET
from pool.calibrate.judging import (
    CANDIDATE,
    CONTRACT_ITEMS,
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
from pool.store.outcome import Unit

REPO = Path(__file__).resolve().parents[2]
DEFAULT_SET = REPO.parent / "shared" / "data" / "calibration" / "hallu_gold.yaml"


@dataclass(frozen=True)
class ClaimOutcome:
    claim: LabelledClaim
    predicted: str | None
    reason: str  # why there is no label ("" when there is one)
    reply: str
    p_unsupported: float | None = None  # from the reply's token logprobs, when the judge weighs its verdicts


def claim_messages(claim: LabelledClaim) -> tuple[Message, ...]:
    """The claim as the candidate answer of the hallu contract; its context as the question."""
    return hallu_judge_prompt(claim.context or "（无 / none）", claim.claim)


async def judge_claims(
    config: PoolConfig, judge: Model, claims: Sequence[LabelledClaim], work_dir: Path, cache: ResponseCache | None
) -> tuple[dict[str, Any], list[ClaimOutcome], dict[str, int]]:
    """(judge identity, one outcome per claim, call counts) — the claims through the pool's machinery."""
    async with open_judge(config, judge, work_dir, cache) as calls:
        identity = judge_identity(config, calls.setup)
        stage, reask_stage = (calls.setup.stage(CONTRACT_ITEMS[0], reask=r, contract="hallu") for r in (False, True))
        asks = [
            JudgeAsk(
                Unit(CANDIDATE, c.id, stage),
                Unit(CANDIDATE, c.id, reask_stage),
                "hallu",
                claim_messages(c),
                parse_claims,
            )
            for c in claims
        ]
        replies = await calls.ask(asks)
        counts = calls.counts()
    return identity, [_outcome(c, r) for c, r in zip(claims, replies, strict=True)], counts


def _outcome(claim: LabelledClaim, reply: JudgeReply) -> ClaimOutcome:
    if reply.verdict is None:
        return ClaimOutcome(claim, None, reply.reason, reply.text[:REPLY_KEPT_CHARS])
    label = claim_label(reply.verdict)
    weighed = None if reply.logprobs is None else claim_p_unsupported(reply.text, reply.logprobs)
    reason = "" if label else "the reply lists no claim"
    return ClaimOutcome(claim, label, reason, reply.text[:REPLY_KEPT_CHARS], weighed)


def calibration_entry(
    calibration_set: CalibrationSet, outcomes: Sequence[ClaimOutcome], counts: Mapping[str, int]
) -> dict[str, Any]:
    """The stored record of one calibration (see ``judge.calibration.store``)."""
    predicted = [o.predicted for o in outcomes]
    return {
        "calibrated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "set": {"path": calibration_set.path, "sha256": calibration_set.sha256, "claims": len(calibration_set.claims)},
        "metrics": {
            **metrics_by_tier(calibration_set.claims, predicted),
            "weighted": weighted_claim_metrics([o.claim.gold for o in outcomes], [o.p_unsupported for o in outcomes]),
        },
        "claims": [
            {
                "id": o.claim.id,
                "tier": o.claim.tier,
                "kind": o.claim.kind,
                "gold": o.claim.gold,
                "predicted": o.predicted or NO_VERDICT,
                **({"p_unsupported": o.p_unsupported} if o.p_unsupported is not None else {}),
                **({"reason": o.reason} if o.reason else {}),
                **({"reply": o.reply} if o.predicted != o.claim.gold and o.reply else {}),
            }
            for o in outcomes
        ],
        "requests": dict(counts),
    }


def _num(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}"


def render_text(identity: Mapping[str, Any], entry: Mapping[str, Any], stored: str | None) -> str:
    """The human-readable summary printed by the CLI."""
    metrics = entry["metrics"]
    lines = [
        f"judge calibration: {identity['name']}@{identity['backend']} ({identity['model']}, {identity['endpoint']})",
        (
            f"  key {judge_key(identity)}; set {entry['set']['path']} ({entry['set']['claims']} claims, "
            f"sha256 {entry['set']['sha256'][:12]})"
        ),
        f"  {'':<10}{'n':>4}{'labelled':>10}{'P(unsup)':>10}{'R(unsup)':>10}{'F1':>8}{'acc3':>8}",
    ]
    for name, m in [("overall", metrics["overall"]), *metrics["tiers"].items()]:
        u = m["unsupported"]
        lines.append(
            f"  {name:<10}{m['n']:>4}{m['labelled']:>10}{_num(u['precision']):>10}{_num(u['recall']):>10}"
            f"{_num(u['f1']):>8}{_num(m['accuracy_3class']):>8}"
        )
    lines.append("  confusion (gold → supported / unsupported / not_sure / no_verdict):")
    for gold, row in metrics["overall"]["confusion"].items():
        lines.append(f"    {gold:<12} " + " / ".join(str(v) for v in row.values()))
    wrong = [c for c in entry["claims"] if c["predicted"] != c["gold"]]
    if wrong:
        lines.append("  disagreements: " + ", ".join(f"{c['id']} ({c['gold']} → {c['predicted']})" for c in wrong))
    lines.append(_weighted_line(metrics.get("weighted")))
    drift = entry.get("drift")
    if drift:
        delta = drift["delta"]
        mark = "DRIFT" if drift["flagged"] else "no drift"
        lines.append(
            f"  {mark} vs {drift['against']}: ΔF1 {_signed(delta['f1'])}, Δacc3 {_signed(delta['accuracy_3class'])}"
            f" (threshold {drift['threshold']}); changed claims: {', '.join(drift['changed_claims']) or 'none'}"
        )
    lines.append(f"  requests: {entry['requests']['calls']} sent, {entry['requests']['cache_hits']} from the cache")
    lines.append(f"  stored in {stored}" if stored else "  not stored")
    return "\n".join(lines)


def _weighted_line(weighted: Mapping[str, Any] | None) -> str:
    if weighted is None:
        return "  probability-weighted: no token logprobs, plain labels only"
    chosen, at_cut = weighted["threshold"], weighted["at_threshold"]
    cut = "none chosen" if chosen is None else f"{chosen['value']:.3f} (J {chosen['youden_j']:.3f})"
    return (
        f"  probability-weighted: AUC of P(unsupported) {_num(weighted['auc'])}; F1 at 0.5 "
        f"{_num(weighted['at_default']['f1'])}; threshold {cut}, "
        f"F1 there {_num(None if at_cut is None else at_cut['f1'])}"
    )


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.3f}"


def claim_inputs(args: argparse.Namespace) -> tuple[PoolConfig, Model, CalibrationSet]:
    given = [
        flag
        for flag, value in (
            ("--suite", args.suite),
            ("--items", args.items),
            ("--per-item", args.per_item),
            ("--seed", args.seed),
        )
        if value is not None
    ]
    if given:
        raise ValueError(f"{', '.join(given)}: only with --set {CRITERIA_SET}")
    set_path = Path(args.set_path) if args.set_path else DEFAULT_SET
    if not set_path.is_file():
        where = (
            "--set"
            if args.set_path
            else "the default calibration set (../shared/data/calibration/hallu_gold.yaml beside the repository)"
        )
        raise ValueError(f"{set_path}: not found ({where}); pass --set PATH to a file of labelled claims")
    config = load_pool(args.pool)
    judge = config.judge_model()
    if judge is None:
        raise ValueError(f"{args.pool}: the pool has no judge: block; add one (see the shipped model_pool.yaml)")
    return config, judge, load_calibration_set(set_path)


def calibrate_claims(args: argparse.Namespace) -> int:
    """The claim calibration (module doc): the CLI's flow without ``--set criteria``; returns the exit code."""
    try:
        config, judge, calibration_set = claim_inputs(args)
    except (PoolConfigError, ItemFormatError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    judged, code = run_judging(
        lambda work, cache: judge_claims(config, judge, calibration_set.claims, work, cache), args
    )
    if judged is None:
        return code
    identity, outcomes, counts = judged
    entry = calibration_entry(calibration_set, outcomes, counts)
    failed = [o.claim.id for o in outcomes if o.reason.startswith(("judge call failed", "re-ask failed"))]
    try:
        entry, stored = record_unless_failed(args, identity, entry, failed)
    except (CalibrationStoreError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    print(
        json.dumps({"judge_key": judge_key(identity), "identity": identity, **entry}, ensure_ascii=False, indent=1)
        if args.json
        else render_text(identity, entry, stored)
    )
    return failed_calls_exit(failed, f"{len(failed)} judge call(s) failed", "claims")
