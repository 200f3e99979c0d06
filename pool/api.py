"""The Python API the ``python -m pool.run`` CLI wraps: :func:`run_pool`, :func:`resume`, :func:`rescore`.

Each call takes a :class:`~pool.run_spec.RunSpec` and returns a :class:`RunResult` (the run folder,
every artefact's path, counts, the exit code the CLI would give). Bad input — a pool file, data or
option that cannot be used — raises :class:`RunInputError` naming the file, line or field, before
any request is sent. A run interrupted by Ctrl-C or SIGTERM returns exit code 130 with everything
finished kept; :func:`resume` completes it.

    from pool import RunSpec, run_pool
    result = run_pool(RunSpec(pool="model_pool.yaml", orchestration=True, out="runs/tonight"))
    print(result.exit_code, result.paths["routing_manifest.yaml"])

Each has an async twin — :func:`arun_pool`, :func:`aresume`, :func:`arescore` — for code that runs an
event loop (``result = await arun_pool(spec)``): the run goes to a thread of its own and the loop stays
free; cancelling the awaiting task interrupts the run (:mod:`pool.run_thread`). The sync calls work
inside a running loop too (a Jupyter cell): they wait for that thread instead of starting a loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from pool.adaptive.driver import run_adaptive, write_estimates
from pool.adaptive.tests import AdaptivePlan, adaptive_plan
from pool.config import Model, PoolConfigError
from pool.config.preflight import PreflightError, preflight
from pool.execute.budget import Budget, BudgetExhausted
from pool.execute.executor import leaf_errors
from pool.execute.progress import ProgressDisplay
from pool.execute.ray_executor import cluster_host_port
from pool.execute.response_cache import CACHE_ENV, ResponseCache, default_cache_dir
from pool.execute.session import Session
from pool.freshness.attach import attach_audit, check_audit
from pool.items_source import DataError
from pool.live import prepare as live
from pool.pairwise.settings import pairwise_plan, stage_budget
from pool.plan import ANSWER_STAGE, JUDGED_GOLD_TYPES, Plan, plan_from_options
from pool.run_spec import RunSpec, check_new_out, check_resume, rescore_options, stored_options
from pool.run_thread import Interrupt, call, wait_for
from pool.score.arrival import MIN_ANSWERS, ArrivalWorker
from pool.score.guards import models_to_reask
from pool.score.stage import ScoringStage
from pool.selection import count_view
from pool.store.export import export_results_with_costs, write_summary
from pool.store.run_lock import RunFolderError, RunLock, unwritable_run_folder
from pool.store.run_store import RunMismatchError, RunStore, StoreFormatError
from runners.llamacpp.server import LlamaServerError

if TYPE_CHECKING:
    from routing.load.runs import ScoreDigest

log = logging.getLogger("pool.run")

EXIT_OK, EXIT_INFRA, EXIT_INPUT, EXIT_REGRESSION, EXIT_BUDGET, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130
EXIT_INCONCLUSIVE = 5  # with fail_on_inconclusive: the night's comparison could not see a drop of min_drop
INLINE_POOL_FILENAME = "model_pool.yaml"
ARTEFACTS = (
    "results.jsonl",
    "scores.jsonl",
    "summary.json",
    "leaderboard.json",
    "leaderboard.md",
    "pairwise.json",
    "hard.yaml",
    "routing_manifest.yaml",
    "report.html",
    "battles.jsonl",
    "pairwise_judged.json",
    "compare.json",
    "compare.md",
)


class RunInputError(ValueError):
    """The run cannot start: the message names the file, line or field and what to do (CLI exit 2)."""


@dataclass(frozen=True)
class RunResult:
    """What a run produced. ``exit_code``: 0 every unit answered, 1 some infra errors, 3 a significant
    regression against the last comparable night (with ``fail_on_regression``), 5 an inconclusive comparison (with
    ``fail_on_inconclusive``), 4 the cost or token cap
    was reached (the rest of the plan is left for :func:`resume`), 130 interrupted."""

    run_dir: Path
    run_id: str
    exit_code: int
    summary: dict[str, Any] = field(default_factory=dict)
    scoring: dict[str, Any] | None = None
    compared_with: Path | None = None  # the earlier night compare.md compares against
    warnings: tuple[str, ...] = ()
    routing: dict[str, Any] | None = None  # routing.build's summary (buckets, winners, files), when it ran

    @property
    def ok(self) -> bool:
        return self.exit_code == EXIT_OK

    @property
    def paths(self) -> dict[str, Path]:
        """Every artefact the run folder holds, by file name."""
        return {name: self.run_dir / name for name in ARTEFACTS if (self.run_dir / name).is_file()}

    @property
    def counts(self) -> dict[str, dict[str, int]]:
        """Per model: results by status (ok / error / infra_error) from summary.json."""
        return {model: dict(entry.get("status", {})) for model, entry in self.summary.get("models", {}).items()}


def run_pool(spec: RunSpec) -> RunResult:
    """Start a new run in ``spec.out`` (default ``runs/<UTC timestamp>``) and finish it."""
    return call(lambda interrupt: _run_pool(spec, interrupt))


async def arun_pool(spec: RunSpec) -> RunResult:
    """:func:`run_pool`, awaited: the run goes to a thread of its own; cancelling interrupts it."""
    return await wait_for(lambda interrupt: _run_pool(spec, interrupt))


def resume(run_dir: str | Path, spec: RunSpec | None = None) -> RunResult:
    """Finish an interrupted run with its stored options; ``spec`` may only repeat them (or pick
    the executor and log interval)."""
    return call(lambda interrupt: _resume(run_dir, spec, interrupt))


async def aresume(run_dir: str | Path, spec: RunSpec | None = None) -> RunResult:
    """:func:`resume`, awaited: the run goes to a thread of its own; cancelling interrupts it."""
    return await wait_for(lambda interrupt: _resume(run_dir, spec, interrupt))


def rescore(run_dir: str | Path, spec: RunSpec | None = None) -> RunResult:
    """Score a run's stored answers again (e.g. with another ``judge:``) without asking the models;
    ``spec`` may change ``pool``, ``no_judge``, ``hallu``, ``no_routing`` and ``rejudge_sample``."""
    return call(lambda interrupt: _rescore(run_dir, spec, interrupt))


async def arescore(run_dir: str | Path, spec: RunSpec | None = None) -> RunResult:
    """:func:`rescore`, awaited: the run goes to a thread of its own; cancelling interrupts it."""
    return await wait_for(lambda interrupt: _rescore(run_dir, spec, interrupt))


def _run_pool(spec: RunSpec, interrupt: Interrupt) -> RunResult:
    if spec.with_judge:
        raise RunInputError("--with-judge without --rescore: a new run judges unless --no-judge is given")
    options, run_dir = spec.new_run_options()
    check_new_out(run_dir)
    if isinstance(spec.pool, Mapping):
        pool_file = run_dir / INLINE_POOL_FILENAME
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            pool_file.write_text(yaml.safe_dump(dict(spec.pool), allow_unicode=True, sort_keys=False), encoding="utf-8")
        except OSError as exc:
            raise RunInputError(str(unwritable_run_folder(run_dir, exc))) from None
        options["pool"] = str(pool_file.resolve())
    if spec.live is not None:
        request = spec.live
        for note in _checked(lambda: live.begin(run_dir, options, request)):
            print(note, file=sys.stderr)
        return _start_live(spec, options, run_dir, interrupt)
    return _start(spec, options, run_dir, interrupt, mode="new")


def _resume(run_dir: str | Path, spec: RunSpec | None, interrupt: Interrupt) -> RunResult:
    run_dir = Path(run_dir)
    spec = spec or RunSpec()
    if spec.with_judge:
        raise RunInputError(
            "--with-judge with --resume: a resume keeps the run's options; judge it afterwards "
            "with --rescore RUN_DIR --with-judge"
        )
    if spec.live is not None:
        raise RunInputError("--live with --resume: a resume asks the run's own questions; drop --live")
    if live.unstarted_live_run(run_dir):  # stopped while its reference agent answered
        options = _checked(lambda: live.stored_request(run_dir))["options"]
        _checked(lambda: check_resume(spec, options))
        return _start_live(spec, options, run_dir, interrupt)
    options = _checked(lambda: stored_options(run_dir))
    _checked(lambda: check_resume(spec, options))
    return _start(spec, options, run_dir, interrupt, mode="resume")


def _rescore(run_dir: str | Path, spec: RunSpec | None, interrupt: Interrupt) -> RunResult:
    run_dir = Path(run_dir)
    spec = spec or RunSpec()
    options = _checked(lambda: rescore_options(spec, stored_options(run_dir)))
    return _start(spec, options, run_dir, interrupt, mode="rescore")


def describe_plan(spec: RunSpec) -> dict[str, Any]:
    """The plan a run of ``spec`` would execute (models × items × stages, request counts), without running it.
    ``selection_notes`` says what each item filter dropped and why."""
    _no_live("describe_plan (--dry-run)", spec)
    options, _ = spec.new_run_options()
    if isinstance(spec.pool, Mapping):
        raise RunInputError("pool: describe_plan takes a pool file; write the inline pool to a file first")
    notes: list[str] = []
    plan, loaded_skipped = _plan(options, notes)
    judges = run_judges(plan, options)
    _preflight(plan, options, judges, mode="new")
    return {
        **plan.describe(judges, hallu=bool(options.get("hallu"))),
        **pairwise_plan(plan, options, len(judges)),
        "skipped_items": loaded_skipped,
        "selection_notes": notes,
    }


def count_selection(spec: RunSpec) -> dict[str, Any]:
    """How many items and units (items × models) ``spec`` selects, in all and per track and task.

    Reads only the pool file and the data: no preflight, no cache folder, no server or key, so a
    selection can be sized anywhere. ``selection_notes`` says what each item filter dropped and why.
    """
    _no_live("count_selection (--count)", spec)
    options, _ = spec.new_run_options()
    if isinstance(spec.pool, Mapping):
        raise RunInputError("pool: count_selection takes a pool file; write the inline pool to a file first")
    notes: list[str] = []
    plan, skipped = _checked(lambda: plan_from_options(options, notes))
    return count_view(plan.items, [m.name for m in plan.models], notes, skipped)


def _no_live(what: str, spec: RunSpec) -> None:
    if spec.live is not None:
        raise RunInputError(
            f"{what} with --live: a live run's items exist once its reference agent has answered; "
            "it sends one agent call per question, then what a run of those items sends"
        )


def run_judges(plan: Plan, options: Mapping[str, Any]) -> tuple[Model, ...]:
    """The run's judge (or panel), or () when judging is off or no selected item needs one."""
    judges = () if options.get("no_judge") else plan.config.judge_models()
    if judges and not any(i.gold_type in JUDGED_GOLD_TYPES for i in plan.items):
        return ()
    return judges


def _checked(step: Any) -> Any:
    try:
        return step()
    except (PoolConfigError, DataError, StoreFormatError, ValueError, FileNotFoundError, sqlite3.DatabaseError) as exc:
        raise RunInputError(str(exc)) from None


def _check_cache_dir(options: Mapping[str, Any]) -> None:
    """The response cache folder must be (or become) a folder before any request is sent."""
    if options.get("no_cache"):
        return
    where = "--cache-dir" if options.get("cache_dir") else f"${CACHE_ENV}" if os.environ.get(CACHE_ENV) else "cache"
    path = Path(options["cache_dir"]) if options.get("cache_dir") else default_cache_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(
            f"{where} {path}: cannot be used as the response cache folder ({exc.strerror}); "
            "pass a writable folder with --cache-dir, or --no-cache"
        ) from None


def _plan(options: Mapping[str, Any], notes: list[str] | None = None) -> tuple[Plan, int]:
    """The plan of ``options`` and how many loaded items were skipped (``notes``: what each item
    filter dropped); bad input is RunInputError."""

    def build() -> tuple[Plan, int]:
        _check_cache_dir(options)
        return plan_from_options(options, notes)

    return _checked(build)


def _preflight(plan: Plan, options: Mapping[str, Any], judges: Sequence[Model], *, mode: str) -> None:
    """Every backend the run will send to is usable (keys set, model files present): else bad input,
    before a run folder is made. A rescore sends only to the judges."""
    used = ([] if mode == "rescore" else list(plan.models)) + list(judges)
    try:
        preflight(plan.config, options["pool"], used)
    except PreflightError as exc:
        raise RunInputError(str(exc)) from None


def _start(spec: RunSpec, options: dict[str, Any], run_dir: Path, interrupt: Interrupt, *, mode: str) -> RunResult:
    notes: list[str] = []
    plan, _ = _plan(options, notes if mode == "new" else None)  # a resume's selection was told when it began
    for note in notes:
        print(note, file=sys.stderr)
    _preflight(plan, options, run_judges(plan, options), mode=mode)
    _checked(lambda: check_audit(plan.config, options["pool"]))  # the pool file's freshness: audit, if named
    if stage_budget(options, plan.config) is not None and not plan.config.judge_models():
        raise RunInputError(
            f"--pairwise (or the pool's pairwise: block): {options['pool']} has no judge: or judges: block, and "
            "pairwise judging asks the judge; add one, or drop --pairwise / set pairwise: {enabled: false}"
        )
    executor = _checked(lambda: _executor_choice(spec, plan))
    try:
        with RunLock(run_dir):
            return _Run(spec, plan, options, run_dir, mode, executor, interrupt).go()
    except RunFolderError as exc:
        raise RunInputError(str(exc)) from None


def _start_live(spec: RunSpec, options: dict[str, Any], run_dir: Path, interrupt: Interrupt) -> RunResult:
    """A live run (:mod:`pool.live.prepare`): the reference agent answers every question it has no answer to
    yet, then the run starts with the live items as its data. Stopped or failed while the agent answers, the
    run has no run store yet; ``--resume`` goes on from here."""
    try:
        with RunLock(run_dir):
            items = _checked(lambda: live.ask(run_dir, options, interrupt.run, spec.log_interval))
    except RunFolderError as exc:
        raise RunInputError(str(exc)) from None
    except (KeyboardInterrupt, asyncio.CancelledError):
        return RunResult(run_dir, "", EXIT_INTERRUPTED)
    except RunInputError:
        raise
    except Exception as exc:  # the agent's managed server did not come up, a full disk
        for line in _failure_lines(exc, run_dir, "resume"):
            print(line, file=sys.stderr)
        return RunResult(run_dir, "", EXIT_INFRA)
    if items is None:  # the agent answered no question: nothing to run
        outcome = live.live_outcome(run_dir)
        return RunResult(run_dir, "", EXIT_INFRA, warnings=(outcome.line(),) if outcome and outcome.line() else ())
    return _start(spec, {**options, "data": [str(items)]}, run_dir, interrupt, mode="new")


def _executor_choice(spec: RunSpec, plan: Plan) -> tuple[str, str | None]:
    """(executor, ray address): the spec's, else the pool file's ``execution:`` block, else local."""
    execution = plan.config.execution
    name = spec.executor or execution.executor
    address = spec.ray_address if spec.ray_address is not None else execution.ray_address
    if name != "ray" and spec.ray_address is not None:
        raise DataError("--ray-address without --executor ray: the local executor has no cluster; add --executor ray")
    if name == "ray" and address is not None:
        cluster_host_port(address)  # a malformed address is bad input (ValueError), before anything starts
    return name, address


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # SIGTERM outside the event loop (loading, exporting, routing) ends like Ctrl-C


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class _Run:
    """One execution of a plan into a run folder: answer, score, export, build routing."""

    def __init__(
        self,
        spec: RunSpec,
        plan: Plan,
        options: dict[str, Any],
        run_dir: Path,
        mode: str,
        executor: tuple[str, str | None],
        interrupt: Interrupt,
    ) -> None:
        self.spec, self.plan, self.options, self.run_dir, self.mode = spec, plan, options, run_dir, mode
        self.interrupt = interrupt  # how another thread stops this run's requests (pool.run_thread)
        self.executor_name, self.ray_address = executor
        self.run_id = run_dir.name
        self.exported: dict[str, Any] | None = (
            None  # results.jsonl's costs and the store's counts, when the worker wrote it
        )
        self.digest: ScoreDigest | None = None  # scores.jsonl read for the nightly index while the worker counted
        self.adaptive: AdaptivePlan | None = None  # the adaptive tests (--adaptive), planned when the run begins

    def go(self) -> RunResult:
        previous = signal.signal(signal.SIGTERM, _interrupt) if _on_main_thread() else None
        try:
            return self._go()
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)

    def _go(self) -> RunResult:
        pool_fp, data_fp = self.plan.fingerprints()
        started = time.monotonic()
        scoring: dict[str, Any] | None = None
        status = EXIT_OK
        resuming = self.mode == "resume"
        self.budget = self._budget()
        with RunStore(self.run_dir) as store:
            try:
                if self.mode == "rescore":
                    pending: dict[str, int] = {}  # answers are kept; only the scoring stage runs again
                else:
                    try:
                        store.begin_run(
                            self.run_id, pool_fingerprint=pool_fp, data_fingerprint=data_fp, options=self.options
                        )
                    except RunMismatchError as exc:
                        raise RunInputError(str(exc)) from None
                    self.adaptive = self._adaptive_plan()
                    store.save_plan(
                        self.run_id,
                        self.plan.units() if self.adaptive is None else self.adaptive.initial_units(self.plan),
                    )
                    # Judge stages are never sent from here: the scoring stage derives them from the answers.
                    pending = store.pending_counts(self.run_id, retry_infra_errors=resuming, stage=ANSWER_STAGE)
                    print(
                        f"run {self.run_id}: {self.plan.unit_count} units, {sum(pending.values())} to do "
                        f"({len(self.plan.models)} models × {len(self.plan.items)} items)",
                        file=sys.stderr,
                    )
                scoring = self.interrupt.run(self._execute(store, pending, resuming))
            except (KeyboardInterrupt, asyncio.CancelledError):
                status = EXIT_INTERRUPTED
            except BudgetExhausted as exc:
                print(f"stopped: {exc}", file=sys.stderr)
                status = EXIT_BUDGET
            except RunInputError:
                raise
            except Exception as exc:  # a backend that never came up, a server that crashed at start, a full disk
                for line in _failure_lines(exc, self.run_dir, self.mode):
                    print(line, file=sys.stderr)
                status = EXIT_INFRA
            if self.mode != "rescore" and store.get_run(self.run_id) is not None:
                store.set_run_status(self.run_id, {EXIT_OK: "finished"}.get(status, "interrupted"))
            extra: dict[str, Any] = {"costs": {}}  # filled by the export's pass over the results, below
        agent = live.live_outcome(self.run_dir)  # what a live run's reference agent gave (None: not a live run)
        if agent is not None:
            extra["live"] = agent.summary()
        if scoring is not None:
            extra["scoring"] = scoring
        if self.budget is not None:
            extra["budget"] = {
                "max_cost": self.budget.max_cost,
                "max_tokens_total": self.budget.max_tokens_total,
                "spent_cost": round(self.budget.cost, 6),
                "spent_tokens": self.budget.tokens,
                "calls_without_usage": self.budget.calls_without_usage,
                "not_run": self.budget.not_run,
                "unpriced": self.budget.unpriced(),
                "stopped": status == EXIT_BUDGET,
            }
        summary: dict[str, Any] = {}
        routing: dict[str, Any] | None = None
        files_written = True
        try:
            counted = None
            if self.exported is not None:  # written and counted by the scoring worker while the stage scored
                extra["costs"], counted = self.exported["costs"], self.exported["summary"]
            else:
                extra["costs"] = export_results_with_costs(self.run_dir, self.run_id, self.plan.config)
            summary = write_summary(
                self.run_dir, time.monotonic() - started, run_id=self.run_id, extra=extra, counted=counted
            )
            attach_audit(self.plan.config, self.options["pool"], self.run_dir)  # for routing.build, now or later
            if status == EXIT_OK and (pairwise := stage_budget(self.options, self.plan.config)) is not None:
                status = self._pairwise(pairwise)
            if status == EXIT_OK and not self.options.get("no_routing"):
                routing = build_routing(self.run_dir)
                status = EXIT_INFRA if routing is None else status
        except KeyboardInterrupt:
            status = EXIT_INTERRUPTED
        except OSError as exc:  # writing results.jsonl, summary.json or the routing files, e.g. on a full disk
            print(
                f"error: {type(exc).__name__}: {exc} (the run's files are not all written; "
                f"{_resume_hint(self.run_dir, self.mode)}, which writes them)",
                file=sys.stderr,
            )
            status, files_written = EXIT_INFRA, False
        infra = sum(m.get("status", {}).get("infra_error", 0) for m in summary.get("models", {}).values())
        if status == EXIT_OK and (infra or (agent is not None and agent.failures)):
            status = EXIT_INFRA  # a reference agent's failures are infra errors too, charged to the agent
        base, warnings = None, []
        if status in (EXIT_OK, EXIT_INFRA) and files_written:
            try:
                base, gate, warnings = self._nightly()
            except KeyboardInterrupt:
                status = EXIT_INTERRUPTED
            else:
                status = gate if gate != EXIT_OK and status == EXIT_OK else status
        if agent is not None and (line := agent.line()) is not None:
            warnings = [line, *warnings]
        return RunResult(self.run_dir, self.run_id, status, summary, scoring, base, tuple(warnings), routing)

    def _pairwise(self, budget: int) -> int:
        """The pairwise stage (``pool.pairwise.stage``): the night's ties judged side by side, stored in
        ``RUN_DIR/pairwise/`` so that a resume asks only what has no verdict; its exit status."""
        from pool.pairwise.select import load_selection
        from pool.pairwise.stage import judge_ties, summary_lines

        try:
            selection = load_selection(self.run_dir, budget, self.options["pool"])
            report = judge_ties(
                selection,
                cache_dir=self.options.get("cache_dir"),
                no_cache=bool(self.options.get("no_cache")),
                run=self.interrupt.run,
            )
        except (KeyboardInterrupt, asyncio.CancelledError):
            return EXIT_INTERRUPTED
        except Exception as exc:  # a judge that never came up, a full disk: the scores stand, resume to finish
            for line in _failure_lines(exc, self.run_dir, self.mode):
                print(line.replace("error:", "error: pairwise stage:", 1), file=sys.stderr)
            return EXIT_INFRA
        for line in summary_lines(report):
            print(line, file=sys.stderr)
        return EXIT_OK

    def _history_root(self) -> Path:
        return Path(self.spec.history_root) if self.spec.history_root is not None else self.run_dir.resolve().parent

    def _adaptive_plan(self) -> AdaptivePlan | None:
        """The adaptive tests of a run with ``--adaptive`` (pool.adaptive), banks fitted on the history."""
        if not self.options.get("adaptive"):
            return None
        adaptive = adaptive_plan(self.plan, self.options, self._history_root())
        if not adaptive.tests:
            for note in adaptive.notes:
                print(f"adaptive: {note}", file=sys.stderr)
            print("adaptive: no model is tested adaptively; every model is evaluated in full", file=sys.stderr)
        return adaptive

    def _budget(self) -> Budget | None:
        if self.spec.max_cost is None and self.spec.max_tokens_total is None:
            return None
        config = self.plan.config
        priced = {m.name: config.price_of(m) for m in self.plan.models}
        for judge in config.judge_models():
            priced[judge.name] = config.price_of(judge)
        if self.spec.max_cost is not None and not any(priced.values()):
            raise RunInputError(
                f"--max-cost: no model of {self.options['pool']} has a price; add `price: "
                "{input_per_million: X, output_per_million: Y}` to a backend or model, or use "
                "--max-tokens-total"
            )
        budget = Budget(priced, self.spec.max_cost, self.spec.max_tokens_total)
        if (warning := budget.unpriced_warning()) is not None:
            print(f"warning: {warning}", file=sys.stderr)
        return budget

    def _nightly(self) -> tuple[Path | None, int, list[str]]:
        """Index the run, compare it with the last comparable night, add both to the report (routing.nights.nightly);
        the gate's exit status (EXIT_OK, or EXIT_REGRESSION / EXIT_INCONCLUSIVE when asked for and met)."""
        from routing.nights.history import HistoryError
        from routing.nights.nightly import after_run

        root = Path(self.spec.history_root) if self.spec.history_root is not None else self.run_dir.resolve().parent
        try:
            outcome = after_run(
                root,
                self.run_dir,
                fail_on_regression=self.spec.fail_on_regression,
                digest=self.digest,
                min_drop=self.spec.min_drop,
                fail_on_inconclusive=self.spec.fail_on_inconclusive,
                sequential=self.spec.sequential,
            )
        except (HistoryError, OSError, ValueError) as exc:  # the night's results stand; say why history is missing
            return None, EXIT_OK, [f"run not indexed in {root}: {exc}"]
        return outcome.base, outcome.exit_code, list(outcome.problems)

    async def _execute(self, store: RunStore, totals: dict[str, int], resuming: bool) -> dict[str, Any] | None:
        """Answer the pending answer units (``totals``: how many per model), then score every answer;
        returns the scoring tally. The units stream from the store a page at a time."""
        plan, options = self.plan, self.options
        judges = run_judges(plan, options)
        # a resumed run re-asks the short answers an interrupted one had not (pool.score.guards),
        # so it serves their models
        reask = models_to_reask(store, self.run_id, plan.items_by_id, plan.config) if judges and resuming else set()
        adaptive = {t.model for t in self.adaptive.tests} if self.adaptive is not None else set()
        serve = [m for m in plan.models if m.name in totals or m.name in reask or m.name in adaptive] + list(judges)
        cache = None if options.get("no_cache") else ResponseCache(options.get("cache_dir"), write_behind=True)
        sigterm = self._cancel_on_sigterm()
        try:
            progress = ProgressDisplay(totals, interval_s=self.spec.log_interval)
            async with Session.open(
                plan.config,
                serve,
                self.run_dir,
                run_id=self.run_id,
                store=store,
                cache=cache,
                executor=self.executor_name,
                ray_address=self.ray_address,
                budget=self.budget,
                progress=progress,
                max_consecutive_failures=options["max_consecutive_failures"],
                retry_infra_errors=resuming,
                on_model_failed=lambda model, reason: log.warning("model %s marked failed: %s", model, reason),
                answer_max_age_s=options.get("cache_max_age"),
            ) as session:
                stage = ScoringStage(
                    run_id=self.run_id,
                    store=store,
                    config=plan.config,
                    items=plan.items_by_id,
                    judges=judges,
                    panel_rule=plan.config.panel_rule,
                    session=session,
                    log_interval=self.spec.log_interval,
                    hallu=bool(options.get("hallu")),
                    rejudge_sample=options.get("rejudge_sample") or 0,
                    anchor_sample=options.get("anchor_sample") or 0,
                )
                # judge-free answers are scored in a process of their own while the run waits on the network
                worker = await ArrivalWorker.start(self.run_dir, self.run_id) if self._worth_a_worker(totals) else None
                exporting = False  # the worker writes results.jsonl and counts the store while the stage scores
                try:
                    try:
                        if self.adaptive is not None and self.adaptive.tests:
                            estimates = await run_adaptive(session, store, self.run_id, plan, self.adaptive, options)
                            write_estimates(self.run_dir, estimates)
                        if totals:
                            dispatcher = session.dispatcher({m.name: m for m in plan.models}, plan.items_by_id)
                            await session.send(
                                dispatcher.answer_lanes(
                                    totals,
                                    lambda names: store.iter_pending_units(
                                        self.run_id, retry_infra_errors=resuming, stage=ANSWER_STAGE, models=names
                                    ),
                                )
                            )
                        if worker is not None:
                            # Without a judge the stage writes nothing to the store: it is final, ready to export.
                            stage.arrivals = await worker.finish(export=not judges)
                            exporting = not judges and stage.arrivals is not None
                    finally:
                        progress.close()
                    await stage.run()
                    stage.write(self.run_dir)
                    if worker is not None and exporting:
                        self.digest = _scores_digest(self.run_dir)  # the nightly index's read, while the worker counts
                        self.exported = await worker.exported()
                finally:
                    if worker is not None:
                        await worker.close()
                return stage.tally()
        finally:
            if _on_main_thread():
                signal.signal(signal.SIGTERM, _interrupt)  # a SIGTERM during export or routing still ends as 130
            if sigterm:
                raise KeyboardInterrupt
            if cache is not None:
                cache.close()

    def _worth_a_worker(self, totals: Mapping[str, int]) -> bool:
        """Whether this run scores enough judge-free answers to pay for the arrival-scoring worker."""
        items = self.plan.items
        judge_free = sum(item.gold_type not in JUDGED_GOLD_TYPES for item in items)
        return sum(totals.values()) * judge_free >= MIN_ANSWERS * max(len(items), 1)

    @staticmethod
    def _cancel_on_sigterm() -> list[bool]:
        """Cancel the run's task on SIGTERM; the flag is recorded synchronously because a cancel
        alone is lost when it lands as the last await ends."""
        sigterm: list[bool] = []
        if not _on_main_thread():
            return sigterm
        current = asyncio.current_task()
        loop = asyncio.get_running_loop()

        def on_sigterm(signum: int, frame: Any) -> None:
            sigterm.append(True)
            if current is not None:
                loop.call_soon_threadsafe(current.cancel)

        signal.signal(signal.SIGTERM, on_sigterm)
        return sigterm


def _failure_lines(exc: Exception, run_dir: Path, mode: str) -> list[str]:
    """What a run that failed says: each error its lanes raised, by name (not the task group that
    carried them); a failed database or file write also says what was kept and how to go on."""
    lines: list[str] = []
    for leaf in leaf_errors(exc):
        line = f"error: {type(leaf).__name__}: {leaf}"
        if isinstance(leaf, LlamaServerError):  # says which server, how it ended, its log and the fix
            line = (
                f"error: {leaf}\n  Its models' unanswered units stay pending (not charged as failures); "
                f"{_resume_hint(run_dir, mode, 'Fix the cause above')}"
            )
        elif isinstance(leaf, sqlite3.Error):
            line += f" (a SQLite database failed: the run store or the response cache; {_resume_hint(run_dir, mode)})"
        elif isinstance(leaf, OSError) and leaf.filename is not None:  # a file, not a connection
            line += f" ({_resume_hint(run_dir, mode)})"
        if line not in lines:  # several lanes meet the same dead server
            lines.append(line)
    return lines


def _resume_hint(run_dir: Path, mode: str, fix: str = "Fix the cause, e.g. free disk space") -> str:
    again = (
        f"run the same `python -m pool.run --rescore {run_dir} …` again"
        if mode == "rescore"
        else f"`python -m pool.run --resume {run_dir}`"
    )
    return f"every result recorded is kept in {run_dir / 'run.sqlite'}. {fix}, then {again}"


def _scores_digest(run_dir: Path) -> ScoreDigest | None:
    """``routing.load.runs.digest_scores`` of the run's scores.jsonl; None when it cannot be read (the nightly
    step reads it again and says why)."""
    from routing.load.runs import LoadError, digest_scores

    try:
        return digest_scores(run_dir)
    except LoadError:
        return None


def build_routing(run_dir: Path) -> dict[str, Any] | None:
    """Leaderboards, pairwise ratings, hard subset, manifest and report (:func:`routing.build.build`);
    returns the build's summary, or None when it failed (and said why)."""
    from routing.build import build_and_report

    return build_and_report([run_dir])[1]


def plan_json(spec: RunSpec) -> str:
    return json.dumps(describe_plan(spec), ensure_ascii=False, indent=2)
