"""``python -m pool.calibrate --pool FILE [--set PATH | --set criteria]``: how well the pool's judge
labels claims whose truth is known (``--set criteria``: how well each judge of the pool grades
criteria, see ``pool.calibrate_criteria``).

Every labelled claim of the set (``judge.calibration_set``) is sent to the pool's ``judge:`` as
the candidate answer of the claim-level (``hallu``) contract, through the pool's scheduler,
lanes, retries and response cache — the same requests ``--hallu`` runs make, with one re-ask for
an unparseable reply. The judge's labels give precision / recall / F1 on ``unsupported``, 3-class
accuracy and the confusion matrix, overall and per tier; the result is appended to the
calibration store under the judge's full identity (``judge.calibration_store``), compared with
the previous calibration of that identity (drift), and shown in the report of every run judged
by it.

Both calibrations ask through :class:`CalibrationJudge`: the judge set up as a run's scoring
stage sets it up (same stage names, requests and cache), each request re-asked once when its
reply does not parse (:meth:`CalibrationJudge.ask`). A CLI at the edge, like ``pool.run``;
``python -m judge.calibrate`` hands its command line over here.

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
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

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
    Contract,
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
from pool.store.outcome import Result, Unit
from pool.store.run_store import RunStore

EXIT_OK, EXIT_INFRA, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
REPO = Path(__file__).resolve().parents[1]
DEFAULT_SET = REPO.parent / "shared" / "data" / "calibration" / "hallu_gold.yaml"
DEFAULT_POOL = "model_pool.yaml"
# ``--set criteria``: the criteria calibration (``pool.calibrate_criteria``) and its defaults.
CRITERIA_SET = "criteria"
DEFAULT_SUITE = REPO.parent / "shared" / "data" / "book-gold" / "internists.yaml"
DEFAULT_ITEMS, DEFAULT_PER_ITEM, DEFAULT_SEED = 20, 3, 0
RUN_ID = "calibration"
CANDIDATE = "calibration"  # the Unit.model of every calibration request: there is no candidate, only the judge
REPLY_KEPT_CHARS = 500
REASON_DETAIL_CHARS = 200  # of a failed call's error detail, kept in the reason
# The contracts whose prompts a claim calibration stands for (a new contract must not re-key old calibrations).
VERDICT_CONTRACTS = ("reference", "criteria", "probe", "hallu")


def _contract_item(gold_type: str, gold: Any) -> Item:
    return Item(
        id=f"calibration/{gold_type}/1",
        suite="calibration",
        track="capability",
        task=gold_type,
        gold_type=gold_type,
        gold=gold,
        source=Source("calibration", 1),
        question="?",
    )  # type: ignore[arg-type]


# One item per rubric contract, to name the stage a run gives this judge's verdicts on it.
_CONTRACT_ITEMS = (
    _contract_item("reference", "-"),
    _contract_item("criteria", {"expected_topics": ["-"]}),
    _contract_item("probe", "abstain"),
)


def judge_identity(config: PoolConfig, setup: JudgeSetup) -> dict[str, Any]:
    """Everything that shapes this judge's verdicts (see ``judge.calibration_store``)."""
    judge, endpoint = setup.model, setup.endpoint
    params = judge.generation_params()
    return {
        "name": judge.name,
        "backend": judge.backend,
        "backend_type": config.backends[judge.backend].type,
        "endpoint": endpoint,
        "model": judge.model,
        "mode": judge.mode,
        "temperature": params.temperature,
        "max_tokens": params.max_tokens,
        "stop": list(params.stop),
        "top_p": params.top_p,
        "seed": params.seed,
        "think": params.think,
        "prompt_versions": {c: prompt_version(c) for c in VERDICT_CONTRACTS},
        "run_stages": {item.gold_type: setup.stage(item) for item in _CONTRACT_ITEMS},
    }


@dataclass(frozen=True)
class ClaimOutcome:
    claim: LabelledClaim
    predicted: str | None
    reason: str  # why there is no label ("" when there is one)
    reply: str


def claim_messages(claim: LabelledClaim) -> tuple[Message, ...]:
    """The claim as the candidate answer of the hallu contract; its context as the question."""
    return hallu_judge_prompt(claim.context or "（无 / none）", claim.claim)


async def _round(
    session: Session, store: RunStore, dispatcher: Dispatcher, judge: Model, wanted: Mapping[Unit, tuple[Message, ...]]
) -> None:
    if not wanted:
        return
    store.save_plan(RUN_ID, list(wanted), answerer=judge.name)
    progress = ProgressDisplay({judge.name: len(wanted)}, interval_s=30.0)
    try:
        await session.send(dispatcher.lanes(list(wanted), wanted), progress=progress)
    finally:
        progress.close()


@dataclass(frozen=True)
class JudgeAsk:
    """One calibration request: the unit its reply is stored under (``reask_unit`` for the one
    re-ask), the messages sent, and how a reply is read — a verdict, or a ParseFailure (re-asked)."""

    unit: Unit
    reask_unit: Unit
    contract: Contract
    messages: tuple[Message, ...]
    parse: Callable[[str], Any]


@dataclass(frozen=True)
class JudgeReply:
    """What came of a :class:`JudgeAsk`: the verdict, or None and why (``reason``)."""

    verdict: Any
    reason: str  # "" with a verdict
    text: str  # the reply that was read ("" when the call failed)
    failed: bool = False  # the call or its re-ask failed: a calibration holding such a reply is not stored


def _call_failed(row: Result | None, what: str) -> JudgeReply:
    detail = f" ({row.error_detail[:REASON_DETAIL_CHARS]})" if row is not None and row.error_detail else ""
    why = "no result" if row is None else f"{row.error_class}{detail}"
    return JudgeReply(None, f"{what} failed: {why}", "", failed=True)


class CalibrationJudge:
    """One judge, set up as a run's scoring stage sets it up, and the session its requests go through."""

    def __init__(self, setup: JudgeSetup, session: Session, store: RunStore) -> None:
        self.setup = setup
        self.session = session
        self.store = store
        self.dispatcher = session.dispatcher({}, {}, setup.model)

    async def ask(self, asks: Sequence[JudgeAsk]) -> list[JudgeReply]:
        """One reply per ask, in order: every ask is sent, an unparseable reply is re-asked once
        (``reask_prompt``), and a reply still unparseable is a no-verdict with the parser's reason."""
        judge, store = self.setup.model, self.store
        await _round(self.session, store, self.dispatcher, judge, {a.unit: a.messages for a in asks})
        replies: list[JudgeReply | None] = []
        again: dict[int, tuple[Message, ...]] = {}
        for index, ask in enumerate(asks):
            row = store.get_result(RUN_ID, ask.unit)
            if row is None or row.status == "infra_error":
                replies.append(_call_failed(row, "judge call"))
                continue
            parsed = ask.parse(row.text)
            if isinstance(parsed, ParseFailure):
                again[index] = reask_prompt(ask.contract, ask.messages, row.text, parsed.reason)
                replies.append(None)
            else:
                replies.append(JudgeReply(parsed, "", row.text))
        await _round(self.session, store, self.dispatcher, judge, {asks[i].reask_unit: m for i, m in again.items()})
        for index in again:
            row = store.get_result(RUN_ID, asks[index].reask_unit)
            if row is None or row.status == "infra_error":
                replies[index] = _call_failed(row, "re-ask")
                continue
            parsed = asks[index].parse(row.text)
            replies[index] = (
                JudgeReply(None, f"unparseable after one re-ask: {parsed.reason}", row.text)
                if isinstance(parsed, ParseFailure)
                else JudgeReply(parsed, "", row.text)
            )
        done = [reply for reply in replies if reply is not None]
        assert len(done) == len(asks)  # every re-asked index was filled in above
        return done

    def counts(self) -> dict[str, int]:
        return {"calls": self.session.counters.calls, "cache_hits": self.session.counters.cache_hits}


@asynccontextmanager
async def open_judge(
    config: PoolConfig, judge: Model, work_dir: Path, cache: ResponseCache | None
) -> AsyncIterator[CalibrationJudge]:
    """``judge`` brought up through the pool's machinery (run store in ``work_dir``, scheduler,
    lanes, retries, response cache), set up exactly as a run's scoring stage sets it up, so its
    stage names and requests are a run's."""
    with RunStore(work_dir) as store:
        store.begin_run(RUN_ID, pool_fingerprint=config.fingerprint(), data_fingerprint="calibration", options={})
        async with Session.open(
            config, [judge], work_dir, run_id=RUN_ID, store=store, cache=cache, retry_infra_errors=True
        ) as session:
            setup = ScoringStage(
                run_id=RUN_ID, store=store, config=config, items={}, judges=(judge,), session=session
            ).judge
            assert setup is not None
            yield CalibrationJudge(setup, session, store)


async def judge_claims(
    config: PoolConfig, judge: Model, claims: Sequence[LabelledClaim], work_dir: Path, cache: ResponseCache | None
) -> tuple[dict[str, Any], list[ClaimOutcome], dict[str, int]]:
    """(judge identity, one outcome per claim, call counts) — the claims through the pool's machinery."""
    async with open_judge(config, judge, work_dir, cache) as calls:
        identity = judge_identity(config, calls.setup)
        stage, reask_stage = (calls.setup.stage(_CONTRACT_ITEMS[0], reask=r, contract="hallu") for r in (False, True))
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
    return identity, [_outcome(c, r) for c, r in zip(claims, replies)], counts


def _outcome(claim: LabelledClaim, reply: JudgeReply) -> ClaimOutcome:
    if reply.verdict is None:
        return ClaimOutcome(claim, None, reply.reason, reply.text[:REPLY_KEPT_CHARS])
    label = claim_label(reply.verdict)
    return ClaimOutcome(claim, label, "" if label else "the reply lists no claim", reply.text[:REPLY_KEPT_CHARS])


def calibration_entry(
    calibration_set: CalibrationSet, outcomes: Sequence[ClaimOutcome], counts: Mapping[str, int]
) -> dict[str, Any]:
    """The stored record of one calibration (see ``judge.calibration_store``)."""
    predicted = [o.predicted for o in outcomes]
    return {
        "calibrated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "set": {"path": calibration_set.path, "sha256": calibration_set.sha256, "claims": len(calibration_set.claims)},
        "metrics": metrics_by_tier(calibration_set.claims, predicted),
        "claims": [
            {
                "id": o.claim.id,
                "tier": o.claim.tier,
                "kind": o.claim.kind,
                "gold": o.claim.gold,
                "predicted": o.predicted or NO_VERDICT,
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


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.3f}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pool.calibrate",
        description="Send labelled claims to the pool's judge (claim-level contract) and measure P/R/F1 on "
        "'unsupported', 3-class accuracy and the confusion matrix, per tier; store the result under the judge's identity. "
        "With --set criteria: send synthetic answers whose criteria are known to every judge of the pool (and its panel) "
        "and measure per-criterion P/R/F1 per kind (topic, warning, forbidden) beside the holistic coverage's Spearman ρ.",
        epilog="Exit codes: 0 stored; 1 some judge calls failed (nothing stored); 2 bad input; 130 interrupted.",
    )
    parser.add_argument(
        "--pool",
        default=DEFAULT_POOL,
        help="pool file whose judge: is calibrated (with --set criteria: also "
        f"every member of a judges: panel, and the panel) (default: ./{DEFAULT_POOL})",
    )
    parser.add_argument(
        "--set",
        dest="set_path",
        metavar="PATH|criteria",
        help=f"calibration set: a file of labelled claims (default: {DEFAULT_SET} when present), or the word "
        f"'{CRITERIA_SET}' for the criteria calibration set built from --suite (judge.criteria_calibration)",
    )
    criteria = parser.add_argument_group(f"criteria calibration (only with --set {CRITERIA_SET})")
    criteria.add_argument(
        "--suite", metavar="PATH", help=f"criteria items to build answers from (default: {DEFAULT_SUITE})"
    )
    criteria.add_argument(
        "--items", type=int, metavar="N", help=f"the first N criteria items of the suite (default: {DEFAULT_ITEMS})"
    )
    criteria.add_argument(
        "--per-item", type=int, metavar="K", help=f"synthetic answers per item (default: {DEFAULT_PER_ITEM})"
    )
    criteria.add_argument(
        "--seed", type=int, metavar="S", help=f"seed of the answers' composition (default: {DEFAULT_SEED})"
    )
    parser.add_argument("--store", metavar="DIR", help=f"calibration store folder (default: {default_store_dir()})")
    parser.add_argument("--no-cache", action="store_true", help="ask the judge again instead of reusing cached replies")
    parser.add_argument("--cache-dir", help="response cache folder (default: $MEDPOOL_CACHE_DIR or ~/.cache/medpool)")
    parser.add_argument(
        "--json", action="store_true", help="print the stored calibration as JSON instead of the summary"
    )
    return parser


def _inputs(args: argparse.Namespace) -> tuple[PoolConfig, Model, CalibrationSet]:
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


T = TypeVar("T")


def run_judging(
    judging: Callable[[Path, ResponseCache | None], Coroutine[Any, Any, T]], args: argparse.Namespace
) -> tuple[T | None, int]:
    """``judging(work folder, response cache)`` run to its end: (its result, 0), or (None, exit code)
    once the failure is said — 130 on Ctrl-C, 1 when a judge could not be brought up or asked."""
    cache = None if args.no_cache else ResponseCache(args.cache_dir)
    try:
        with tempfile.TemporaryDirectory(prefix="medpool-calibration-") as work:
            return asyncio.run(judging(Path(work), cache)), EXIT_OK
    except KeyboardInterrupt:
        print("interrupted; nothing stored (answered requests are in the response cache)", file=sys.stderr)
        return None, EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 (a judge server that never came up: say so, exit 1)
        for leaf in leaf_errors(exc):
            print(f"error: {type(leaf).__name__}: {leaf}", file=sys.stderr)
        return None, EXIT_INFRA
    finally:
        if cache is not None:
            cache.close()


def store_dir_of(args: argparse.Namespace) -> Path:
    return Path(args.store).expanduser() if args.store else default_store_dir()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.set_path == CRITERIA_SET:
        # The criteria flow builds on this module's judge machinery, so it is imported when asked for.
        from pool.calibrate_criteria import calibrate_criteria

        return calibrate_criteria(args)
    try:
        config, judge, calibration_set = _inputs(args)
    except (PoolConfigError, ItemFormatError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    store_dir = store_dir_of(args)
    judged, code = run_judging(
        lambda work, cache: judge_claims(config, judge, calibration_set.claims, work, cache), args
    )
    if judged is None:
        return code
    identity, outcomes, counts = judged
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
    print(
        json.dumps({"judge_key": judge_key(identity), "identity": identity, **entry}, ensure_ascii=False, indent=1)
        if args.json
        else render_text(identity, entry, stored)
    )
    if failed:
        print(
            f"{len(failed)} judge call(s) failed ({', '.join(failed[:5])}{'…' if len(failed) > 5 else ''}); nothing stored. "
            "Run again: answered claims come from the response cache.",
            file=sys.stderr,
        )
        return EXIT_INFRA
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
