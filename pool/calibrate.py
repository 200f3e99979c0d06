"""``python -m pool.calibrate --pool FILE [--set PATH]``: how well the pool's judge labels claims
whose truth is known.

Every labelled claim of the set (``judge.calibration_set``) is sent to the pool's ``judge:`` as
the candidate answer of the claim-level (``hallu``) contract, through the pool's scheduler,
lanes, retries and response cache — the same requests ``--hallu`` runs make, with one re-ask for
an unparseable reply. The judge's labels give precision / recall / F1 on ``unsupported``, 3-class
accuracy and the confusion matrix, overall and per tier; the result is appended to the
calibration store under the judge's full identity (``judge.calibration_store``), compared with
the previous calibration of that identity (drift), and shown in the report of every run judged
by it.

This is the one module of ``judge`` that drives ``pool``: a CLI at the edge, like ``pool.run``.
Nothing else in ``judge`` imports it.

Exit codes: 0 calibrated and stored; 1 some judge calls failed (nothing stored — a partial
calibration would fake drift; run again, answered claims come from the cache); 2 bad input
(pool file, set, store, options); 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from eval.items import Item, Source
from eval.loaders.base import ItemFormatError
from judge.calibration_set import (
    NO_VERDICT,
    CalibrationSet,
    LabelledClaim,
    claim_label,
    load_calibration_set,
    metrics_by_tier,
)
from judge.calibration_store import (
    CalibrationStoreError,
    default_store_dir,
    judge_key,
    record_calibration,
)
from judge.parse import parse_claims
from judge.prompts import (
    Message,
    hallu_judge_prompt,
    prompt_version,
    reask_prompt,
)
from judge.verdicts import ParseFailure
from pool.config import Model, PoolConfig, PoolConfigError, load_pool
from pool.execute.dispatch import Dispatcher
from pool.execute.executor import leaf_errors
from pool.execute.progress import ProgressDisplay
from pool.execute.response_cache import ResponseCache
from pool.execute.session import Session
from pool.score.stage import JudgeSetup, ScoringStage
from pool.store.outcome import Unit
from pool.store.run_store import RunStore

EXIT_OK, EXIT_INFRA, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
REPO = Path(__file__).resolve().parents[1]
DEFAULT_SET = REPO.parent / "shared" / "data" / "calibration" / "hallu_gold.yaml"
DEFAULT_POOL = "model_pool.yaml"
RUN_ID = "calibration"
CANDIDATE = "calibration"  # the Unit.model of every claim: there is no candidate, only the judge
REPLY_KEPT_CHARS = 500
# The contracts whose prompts a claim calibration stands for (a new contract must not re-key old calibrations).
VERDICT_CONTRACTS = ("reference", "criteria", "probe", "hallu")


def _contract_item(gold_type: str, gold: Any) -> Item:
    return Item(id=f"calibration/{gold_type}/1", suite="calibration", track="capability", task=gold_type,
                gold_type=gold_type, gold=gold, source=Source("calibration", 1), question="?")  # type: ignore[arg-type]


# One item per rubric contract, to name the stage a run gives this judge's verdicts on it.
_CONTRACT_ITEMS = (_contract_item("reference", "-"), _contract_item("criteria", {"expected_topics": ["-"]}),
                   _contract_item("probe", "abstain"))  # fmt: skip


def judge_identity(config: PoolConfig, setup: JudgeSetup) -> dict[str, Any]:
    """Everything that shapes this judge's verdicts (see ``judge.calibration_store``)."""
    judge, endpoint = setup.model, setup.endpoint
    params = judge.generation_params()
    return {
        "name": judge.name, "backend": judge.backend, "backend_type": config.backends[judge.backend].type,
        "endpoint": endpoint, "model": judge.model, "mode": judge.mode, "temperature": params.temperature,
        "max_tokens": params.max_tokens, "stop": list(params.stop), "top_p": params.top_p, "seed": params.seed,
        "think": params.think, "prompt_versions": {c: prompt_version(c) for c in VERDICT_CONTRACTS},
        "run_stages": {item.gold_type: setup.stage(item) for item in _CONTRACT_ITEMS},
    }  # fmt: skip


@dataclass(frozen=True)
class ClaimOutcome:
    claim: LabelledClaim
    predicted: str | None
    reason: str  # why there is no label ("" when there is one)
    reply: str


def claim_messages(claim: LabelledClaim) -> tuple[Message, ...]:
    """The claim as the candidate answer of the hallu contract; its context as the question."""
    return hallu_judge_prompt(claim.context or "（无 / none）", claim.claim)


async def _round(session: Session, store: RunStore, dispatcher: Dispatcher, judge: Model,
                 wanted: Mapping[Unit, tuple[Message, ...]]) -> None:  # fmt: skip
    if not wanted:
        return
    store.save_plan(RUN_ID, list(wanted), answerer=judge.name)
    progress = ProgressDisplay({judge.name: len(wanted)}, interval_s=30.0)
    try:
        await session.send(dispatcher.lanes(list(wanted), wanted), progress=progress)
    finally:
        progress.close()


async def judge_claims(config: PoolConfig, judge: Model, claims: Sequence[LabelledClaim], work_dir: Path,
                       cache: ResponseCache | None) -> tuple[dict[str, Any], list[ClaimOutcome], dict[str, int]]:  # fmt: skip
    """(judge identity, one outcome per claim, call counts) — the claims through the pool's machinery."""
    with RunStore(work_dir) as store:
        store.begin_run(RUN_ID, pool_fingerprint=config.fingerprint(), data_fingerprint="calibration", options={})
        async with Session.open(config, [judge], work_dir, run_id=RUN_ID, store=store, cache=cache,
                                retry_infra_errors=True) as session:
            # The judge set up exactly as a run's scoring stage sets it up, so its stage names match runs'.
            setup = ScoringStage(run_id=RUN_ID, store=store, config=config, items={}, judges=(judge,),
                                 session=session).judge
            assert setup is not None
            identity = judge_identity(config, setup)
            stage, reask_stage = (setup.stage(_CONTRACT_ITEMS[0], reask=r, contract="hallu") for r in (False, True))
            dispatcher = session.dispatcher({}, {}, judge)
            first = {Unit(CANDIDATE, c.id, stage): claim_messages(c) for c in claims}
            await _round(session, store, dispatcher, judge, first)
            outcomes: dict[str, ClaimOutcome] = {}
            again: dict[Unit, tuple[Message, ...]] = {}
            for claim, (unit, messages) in zip(claims, first.items()):
                row = store.get_result(RUN_ID, unit)
                if row is None or row.status == "infra_error":
                    reason = f"judge call failed: {row.error_class if row else 'no result'}"
                    outcomes[claim.id] = ClaimOutcome(claim, None, reason, "")
                    continue
                parsed = parse_claims(row.text)
                if isinstance(parsed, ParseFailure):
                    again[Unit(CANDIDATE, claim.id, reask_stage)] = reask_prompt("hallu", messages, row.text, parsed.reason)
                else:
                    outcomes[claim.id] = _outcome(claim, parsed, row.text)
            await _round(session, store, dispatcher, judge, again)
            for unit in again:
                claim = next(c for c in claims if c.id == unit.item_id)
                row = store.get_result(RUN_ID, unit)
                if row is None or row.status == "infra_error":
                    outcomes[claim.id] = ClaimOutcome(claim, None, f"re-ask failed: {row.error_class if row else 'no result'}", "")
                    continue
                parsed = parse_claims(row.text)
                outcomes[claim.id] = (ClaimOutcome(claim, None, f"unparseable after one re-ask: {parsed.reason}", row.text[:REPLY_KEPT_CHARS])
                                      if isinstance(parsed, ParseFailure) else _outcome(claim, parsed, row.text))  # fmt: skip
            counts = {"calls": session.counters.calls, "cache_hits": session.counters.cache_hits}
    return identity, [outcomes[c.id] for c in claims], counts


def _outcome(claim: LabelledClaim, parsed: Any, reply: str) -> ClaimOutcome:
    label = claim_label(parsed)
    return ClaimOutcome(claim, label, "" if label else "the reply lists no claim", reply[:REPLY_KEPT_CHARS])


def calibration_entry(calibration_set: CalibrationSet, outcomes: Sequence[ClaimOutcome], counts: Mapping[str, int]) -> dict[str, Any]:
    """The stored record of one calibration (see ``judge.calibration_store``)."""
    predicted = [o.predicted for o in outcomes]
    return {
        "calibrated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "set": {"path": calibration_set.path, "sha256": calibration_set.sha256, "claims": len(calibration_set.claims)},
        "metrics": metrics_by_tier(calibration_set.claims, predicted),
        "claims": [{"id": o.claim.id, "tier": o.claim.tier, "kind": o.claim.kind, "gold": o.claim.gold,
                    "predicted": o.predicted or NO_VERDICT, **({"reason": o.reason} if o.reason else {}),
                    **({"reply": o.reply} if o.predicted != o.claim.gold and o.reply else {})} for o in outcomes],
        "requests": dict(counts),
    }  # fmt: skip


def _num(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}"


def render_text(identity: Mapping[str, Any], entry: Mapping[str, Any], stored: str | None) -> str:
    """The human-readable summary printed by the CLI."""
    metrics = entry["metrics"]
    lines = [f"judge calibration: {identity['name']}@{identity['backend']} ({identity['model']}, {identity['endpoint']})",
             (f"  key {judge_key(identity)}; set {entry['set']['path']} ({entry['set']['claims']} claims, "
              f"sha256 {entry['set']['sha256'][:12]})"),
             f"  {'':<10}{'n':>4}{'labelled':>10}{'P(unsup)':>10}{'R(unsup)':>10}{'F1':>8}{'acc3':>8}"]  # fmt: skip
    for name, m in [("overall", metrics["overall"]), *metrics["tiers"].items()]:
        u = m["unsupported"]
        lines.append(f"  {name:<10}{m['n']:>4}{m['labelled']:>10}{_num(u['precision']):>10}{_num(u['recall']):>10}"
                     f"{_num(u['f1']):>8}{_num(m['accuracy_3class']):>8}")  # fmt: skip
    lines.append("  confusion (gold → supported / unsupported / not_sure / no_verdict):")
    for gold, row in metrics["overall"]["confusion"].items():
        lines.append(f"    {gold:<12} " + " / ".join(str(v) for v in row.values()))
    wrong = [c for c in entry["claims"] if c["predicted"] != c["gold"]]
    if wrong:
        lines.append("  disagreements: " + ", ".join(f"{c['id']} ({c['gold']} → {c['predicted']})" for c in wrong))
    drift = entry.get("drift")
    if drift:
        delta = drift["delta"]
        mark = "DRIFT" if drift["flagged"] else "no drift"
        lines.append(f"  {mark} vs {drift['against']}: ΔF1 {_signed(delta['f1'])}, Δacc3 {_signed(delta['accuracy_3class'])}"
                     f" (threshold {drift['threshold']}); changed claims: {', '.join(drift['changed_claims']) or 'none'}")  # fmt: skip
    lines.append(f"  requests: {entry['requests']['calls']} sent, {entry['requests']['cache_hits']} from the cache")
    lines.append(f"  stored in {stored}" if stored else "  not stored")
    return "\n".join(lines)


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.3f}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pool.calibrate",
        description="Send labelled claims to the pool's judge (claim-level contract) and measure P/R/F1 on "
        "'unsupported', 3-class accuracy and the confusion matrix, per tier; store the result under the judge's identity.",
        epilog="Exit codes: 0 stored; 1 some judge calls failed (nothing stored); 2 bad input; 130 interrupted.",
    )
    parser.add_argument("--pool", default=DEFAULT_POOL, help=f"pool file whose judge: is calibrated (default: ./{DEFAULT_POOL})")
    parser.add_argument("--set", dest="set_path", metavar="PATH",
                        help=f"calibration set (default: {DEFAULT_SET} when present)")
    parser.add_argument("--store", metavar="DIR", help=f"calibration store folder (default: {default_store_dir()})")
    parser.add_argument("--no-cache", action="store_true", help="ask the judge again instead of reusing cached replies")
    parser.add_argument("--cache-dir", help="response cache folder (default: $MEDPOOL_CACHE_DIR or ~/.cache/medpool)")
    parser.add_argument("--json", action="store_true", help="print the stored calibration as JSON instead of the summary")
    return parser


def _inputs(args: argparse.Namespace) -> tuple[PoolConfig, Model, CalibrationSet]:
    set_path = Path(args.set_path) if args.set_path else DEFAULT_SET
    if not set_path.is_file():
        where = "--set" if args.set_path else "the default calibration set (../shared/data/calibration/hallu_gold.yaml beside the repository)"
        raise ValueError(f"{set_path}: not found ({where}); pass --set PATH to a file of labelled claims")
    config = load_pool(args.pool)
    judge = config.judge_model()
    if judge is None:
        raise ValueError(f"{args.pool}: the pool has no judge: block; add one (see the shipped model_pool.yaml)")
    return config, judge, load_calibration_set(set_path)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config, judge, calibration_set = _inputs(args)
    except (PoolConfigError, ItemFormatError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    store_dir = Path(args.store).expanduser() if args.store else default_store_dir()
    cache = None if args.no_cache else ResponseCache(args.cache_dir)
    try:
        with tempfile.TemporaryDirectory(prefix="medpool-calibration-") as work:
            identity, outcomes, counts = asyncio.run(judge_claims(config, judge, calibration_set.claims, Path(work), cache))
    except KeyboardInterrupt:
        print("interrupted; nothing stored (answered claims are in the response cache)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 (a judge server that never came up: say so, exit 1)
        for leaf in leaf_errors(exc):
            print(f"error: {type(leaf).__name__}: {leaf}", file=sys.stderr)
        return EXIT_INFRA
    finally:
        if cache is not None:
            cache.close()
    entry = calibration_entry(calibration_set, outcomes, counts)
    failed = [o.claim.id for o in outcomes if o.reason.startswith(("judge call failed", "re-ask failed"))]
    stored = None
    if not failed:
        try:
            path, entry = record_calibration(store_dir, identity, entry)
        except (CalibrationStoreError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_INPUT
        stored = str(path)
    print(json.dumps({"judge_key": judge_key(identity), "identity": identity, **entry}, ensure_ascii=False, indent=1)
          if args.json else render_text(identity, entry, stored))  # fmt: skip
    if failed:
        print(f"{len(failed)} judge call(s) failed ({', '.join(failed[:5])}{'…' if len(failed) > 5 else ''}); nothing stored. "
              "Run again: answered claims come from the response cache.", file=sys.stderr)  # fmt: skip
        return EXIT_INFRA
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
