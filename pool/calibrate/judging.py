"""The judge as a calibration asks it: set up as a run's scoring stage sets it up, through the pool's machinery.

Both calibrations (claims, :mod:`pool.calibrate.claims`; criteria, :mod:`pool.calibrate.criteria`)
bring a judge up with :func:`open_judge` — run store in a work folder, scheduler, lanes, retries,
response cache — so its stage names and requests are a run's, and ask it through
:class:`CalibrationJudge`: every request sent, a reply that does not parse re-asked once
(:meth:`CalibrationJudge.ask`). :func:`judge_identity` is what the calibration store files a result
under; a reply keeps its token logprobs when the judge asks for them (``JudgeSetup.top_logprobs``),
so its verdict can be weighed (``judge.weighting``); :func:`run_judging` runs one calibration's
judging to its end and turns a failure into the exit code the CLI gives; :func:`record_unless_failed`
and :func:`failed_calls_exit` end both: a calibration with a failed call is neither stored nor exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from eval.items import Item, Source
from judge.calibration.store import default_store_dir, record_calibration
from judge.contracts.framing import Message
from judge.contracts.spec import Contract
from judge.contracts.table import prompt_version, reask_prompt
from judge.verdicts import ParseFailure
from pool.config import Model, PoolConfig
from pool.execute.dispatch import Dispatcher, Schema
from pool.execute.executor import leaf_errors
from pool.execute.progress import ProgressDisplay
from pool.execute.response_cache import ResponseCache
from pool.execute.session import Session
from pool.score.identity import JudgeSetup
from pool.score.rounds import JudgeRounds
from pool.store.outcome import Result, Unit
from pool.store.run_store import RunStore

EXIT_OK, EXIT_INFRA, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
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
CONTRACT_ITEMS = (
    _contract_item("reference", "-"),
    _contract_item("criteria", {"expected_topics": ["-"]}),
    _contract_item("probe", "abstain"),
)


def judge_identity(config: PoolConfig, setup: JudgeSetup) -> dict[str, Any]:
    """Everything that shapes this judge's verdicts (see ``judge.calibration.store``)."""
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
        "run_stages": {item.gold_type: setup.stage(item) for item in CONTRACT_ITEMS},
        # constrained verdicts are another judge's; unconstrained identities stay as they were
        **({"structured_output": setup.structured_output} if setup.constrained else {}),
        # so are verdicts weighed by their token logprobs (judge.weighting)
        **({"top_logprobs": setup.top_logprobs} if setup.top_logprobs is not None else {}),
    }


async def _round(
    session: Session,
    store: RunStore,
    dispatcher: Dispatcher,
    judge: Model,
    wanted: Mapping[Unit, tuple[Message, ...]],
    schemas: Mapping[Unit, Schema] | None = None,
) -> None:
    if not wanted:
        return
    store.save_plan(RUN_ID, list(wanted), answerer=judge.name)
    progress = ProgressDisplay({judge.name: len(wanted)}, interval_s=30.0)
    try:
        await session.send(dispatcher.lanes(list(wanted), wanted, schemas), progress=progress)
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
    item: Item | None = None  # the item asked about, where the contract narrows its schema per item


@dataclass(frozen=True)
class JudgeReply:
    """What came of a :class:`JudgeAsk`: the verdict, or None and why (``reason``)."""

    verdict: Any
    reason: str  # "" with a verdict
    text: str  # the reply that was read ("" when the call failed)
    failed: bool = False  # the call or its re-ask failed: a calibration holding such a reply is not stored
    logprobs: Any = None  # the reply's token logprobs (JSON, ``runners.base.logprobs_to_json``) when asked


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
        self.dispatcher = session.dispatcher({}, {}, setup.model, judge_top_logprobs=setup.top_logprobs)

    async def ask(self, asks: Sequence[JudgeAsk]) -> list[JudgeReply]:
        """One reply per ask, in order: every ask is sent, an unparseable reply is re-asked once
        (``reask_prompt``), and a reply still unparseable is a no-verdict with the parser's reason."""
        judge, store = self.setup.model, self.store
        schemas = self._schemas(asks)
        await _round(self.session, store, self.dispatcher, judge, {a.unit: a.messages for a in asks}, schemas)
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
                replies.append(JudgeReply(parsed, "", row.text, logprobs=row.extra.get("logprobs")))
        reasks = {asks[i].reask_unit: m for i, m in again.items()}
        await _round(self.session, store, self.dispatcher, judge, reasks, self._schemas([asks[i] for i in again], True))
        for index in again:
            row = store.get_result(RUN_ID, asks[index].reask_unit)
            if row is None or row.status == "infra_error":
                replies[index] = _call_failed(row, "re-ask")
                continue
            parsed = asks[index].parse(row.text)
            replies[index] = (
                JudgeReply(None, f"unparseable after one re-ask: {parsed.reason}", row.text)
                if isinstance(parsed, ParseFailure)
                else JudgeReply(parsed, "", row.text, logprobs=row.extra.get("logprobs"))
            )
        done = [reply for reply in replies if reply is not None]
        assert len(done) == len(asks)  # every re-asked index was filled in above
        return done

    def _schemas(self, asks: Sequence[JudgeAsk], reask: bool = False) -> dict[Unit, Schema]:
        """Each ask's verdict schema (narrowed to its item where the contract does so), by the unit it is
        sent as, when the judge is constrained."""
        schemas = {(a.reask_unit if reask else a.unit): self.setup.contract_schema(a.contract, a.item) for a in asks}
        return {unit: schema for unit, schema in schemas.items() if schema is not None}

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
            setup = JudgeRounds(
                run_id=RUN_ID, store=store, config=config, items={}, judges=(judge,), session=session
            ).judge
            assert setup is not None
            yield CalibrationJudge(setup, session, store)


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


def record_unless_failed(
    args: argparse.Namespace, identity: Mapping[str, Any], entry: dict[str, Any], failed: Sequence[str]
) -> tuple[dict[str, Any], str | None]:
    """``entry`` recorded under ``identity`` in the store ``--store`` names, unless some judge call failed
    (``failed``): a partial calibration would show drift that is not there. Returns (the entry as stored,
    with its drift; its file), or (``entry``, None) when nothing was stored. Raises
    :class:`~judge.calibration.store.CalibrationStoreError` / :class:`OSError` when the store refuses it."""
    if failed:
        return entry, None
    path, stored = record_calibration(store_dir_of(args), identity, entry)
    return stored, str(path)


def failed_calls_exit(failed: Sequence[str], lead: str, answered: str) -> int:
    """After the summary: ``EXIT_OK``, or, when some judge calls failed, a line on stderr (``lead`` then the
    first five ``failed`` ids) saying nothing was stored and that a second run takes the ``answered`` ones
    from the response cache, and ``EXIT_INFRA``."""
    if not failed:
        return EXIT_OK
    shown = f"{', '.join(failed[:5])}{'…' if len(failed) > 5 else ''}"
    print(
        f"{lead} ({shown}); nothing stored. Run again: answered {answered} come from the response cache.",
        file=sys.stderr,
    )
    return EXIT_INFRA
