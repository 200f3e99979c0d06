"""``python -m pool.run``: send the selected items to every enabled model of the pool, resumably.

Exit codes: 0 every unit has a result and none is an infra error; 1 some units have infra errors
(see summary.json); 2 bad input (pool file, data, arguments); 130 interrupted (resume with
``--resume RUN_DIR``).
"""

from __future__ import annotations

import signal
import sys


def _sigterm_while_starting(signum: int, frame: object) -> None:
    print("interrupted while starting; nothing was run yet", file=sys.stderr)
    raise SystemExit(130)


if __name__ == "__main__":  # before the slow imports: a SIGTERM while starting up still exits 130
    signal.signal(signal.SIGTERM, _sigterm_while_starting)

import argparse
import asyncio
import json
import logging
import math
import os
import sqlite3
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pool.config import Model, PoolConfigError, load_pool
from pool.dispatch import Dispatcher
from pool.endpoints import open_backends
from pool.export import export_results_jsonl, write_summary
from pool.items_source import DataError, load_run_items, select_items
from pool.outcome import Unit
from pool.plan import ANSWER_STAGE, JUDGED_GOLD_TYPES, Plan, select_models
from pool.progress import ProgressDisplay
from pool.response_cache import CACHE_ENV, ResponseCache, default_cache_dir
from pool.run_lock import RunLock, RunLockedError
from pool.scheduler import Scheduler
from pool.scoring import ScoringStage
from pool.store import RUN_DB_FILENAME, RunMismatchError, RunStore, StoreFormatError

log = logging.getLogger("pool.run")

EXIT_OK, EXIT_INFRA, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
DEFAULT_POOL = "model_pool.yaml"
# Options stored with a run so that --resume rebuilds exactly the same plan and scores it the same way.
PLAN_OPTIONS = ("pool", "data", "models", "all", "limit", "track", "task", "domain", "id", "sample", "no_cache",
                "orchestration", "subset", "no_judge", "hallu", "cache_dir", "max_consecutive_failures", "no_routing",
                "rejudge_sample")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pool.run",
        description="Send every selected item to every enabled model of a pool; store, export and summarise the answers.",
        epilog="Exit codes: 0 all units answered; 1 some infra errors; 2 bad input; 130 interrupted (use --resume).",
    )
    parser.add_argument("--pool", help=f"pool file (default: ./{DEFAULT_POOL}; with --rescore, the run's own pool)")
    parser.add_argument("--data", nargs="+", metavar="PATH", help="item files or folders (default: the built-in demo suite)")
    parser.add_argument("--models", help="comma-separated model names (default: every enabled model)")
    parser.add_argument("--all", action="store_true", help="include disabled models")
    parser.add_argument("--limit", type=_count(1), help="first N items after filtering")
    parser.add_argument("--track", help="only items of this track")
    parser.add_argument("--task", help="only items of this task")
    parser.add_argument("--domain", help="only items whose domain is or starts with this (system or system:topic)")
    parser.add_argument("--id", action="append", help="only this item id (repeatable)")
    parser.add_argument("--sample", type=_count(1), metavar="N", help="first N items per (task, domain)")
    parser.add_argument("--subset", metavar="mini|medium|large|FILE",
                        help="nested deterministic subset, or a file of item ids (e.g. hard.yaml from routing.build)")
    parser.add_argument("--orchestration", action="store_true",
                        help="add the orchestration tracks: specialty routing (derived from criteria items), tool decision, probes")
    parser.add_argument("--out", help="run directory (default: runs/<UTC timestamp>)")
    parser.add_argument("--resume", metavar="RUN_DIR", help="finish an interrupted run; its stored options are used")
    parser.add_argument("--rescore", metavar="RUN_DIR",
                        help="score a run's stored answers again (e.g. after changing judge: in the pool) without asking the models")
    parser.add_argument("--hallu", action="store_true",
                        help="also ask the judge for claim-level hallucination labels (unsupported rate, factual precision)")
    parser.add_argument("--rejudge-sample", type=_count(1), metavar="N",
                        help="judge N sampled rubric answers again on a perturbed prompt (dimensions reversed) for the "
                        "report's judge agreement (Cohen's kappa, Spearman); stored with the run, --rescore may change it")
    parser.add_argument("--no-judge", action="store_true", help="skip the LLM judge: judge-scored items are listed as unscorable")
    parser.add_argument("--no-routing", action="store_true", help="do not build leaderboards, manifest and report at the end")
    parser.add_argument("--dry-run", action="store_true", help="print the plan (models × items × stages, backends, limits) and exit")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the shared response cache")
    parser.add_argument("--cache-dir", help="response cache folder (default: $MEDPOOL_CACHE_DIR or ~/.cache/medpool)")
    parser.add_argument("--max-consecutive-failures", type=_count(0), default=5,
                        help="give up on a model after this many infra errors in a row (default 5; 0 never)")
    parser.add_argument("--log-interval", type=_seconds, default=30.0, help="seconds between progress lines when not on a terminal")
    return parser


def _count(minimum: int):
    """argparse type: an integer of at least ``minimum`` (a negative --sample is a typo, not a run)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value
    return parse


def _seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text}")
    return value


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_INPUT


def _explicit_options(args: argparse.Namespace) -> dict[str, Any]:
    """The result-shaping options given on this command line (values that differ from the defaults)."""
    defaults = build_parser()
    return {name: getattr(args, name) for name in PLAN_OPTIONS
            if getattr(args, name) not in (None, False) and getattr(args, name) != defaults.get_default(name)}


# The type each stored option must have (a damaged or foreign store is refused, not half-used).
_OPTION_TYPES: dict[str, tuple[type, ...]] = {
    "pool": (str,), "data": (list, type(None)), "models": (str, type(None)), "all": (bool,),
    "limit": (int, type(None)), "track": (str, type(None)), "task": (str, type(None)), "domain": (str, type(None)),
    "id": (list, type(None)), "sample": (int, type(None)), "no_cache": (bool,), "orchestration": (bool,),
    "subset": (str, type(None)), "no_judge": (bool,), "hallu": (bool,), "cache_dir": (str, type(None)),
    "max_consecutive_failures": (int,), "no_routing": (bool,), "rejudge_sample": (int, type(None)),
}


def _stored_options(run_dir: Path) -> dict[str, Any]:
    if not run_dir.is_dir() or not (run_dir / RUN_DB_FILENAME).is_file():
        raise DataError(f"{run_dir}: no {RUN_DB_FILENAME} there; pass the directory of an earlier run")
    with RunStore(run_dir, create=False) as store:
        runs = store.runs()
    where = run_dir / RUN_DB_FILENAME
    if len(runs) != 1:
        raise DataError(f"{where}: expected one run, found {len(runs)}; pass the folder of one run")
    options = dict(runs[0].options)
    defaults = build_parser()
    for name in PLAN_OPTIONS:
        options.setdefault(name, defaults.get_default(name))  # runs stored before an option existed
        value, wanted = options[name], _OPTION_TYPES[name]
        if not isinstance(value, wanted) or (isinstance(value, bool) and bool not in wanted) \
                or (isinstance(value, int) and not isinstance(value, bool) and value < 0):
            raise DataError(f"{where}: stored option {name!r} is {value!r}, not a valid value; the run store is "
                            "damaged — start a new run with --out")
    return options


def _check_resume_flags(args: argparse.Namespace, stored: dict[str, Any]) -> None:
    """--resume keeps the run's options; a flag that would change them is an error, not a silent merge."""
    if args.out:
        raise DataError("--out with --resume: a resumed run stays in its own folder; drop --out")
    for name, value in _explicit_options(args).items():
        flag = "--" + name.replace("_", "-")
        if name in ("pool", "data"):
            raise DataError(f"{flag} with --resume: the run's own {name} is used (stored with its plan); "
                            "start a new run with --out to use another")
        if stored.get(name) != value:
            raise DataError(f"{flag} {value!r} with --resume: this run was started with {stored.get(name)!r}, and a "
                            "resume keeps the run's own options so its results stay comparable; "
                            "drop the flag, or start a new run with --out")


def _check_new_out(run_dir: Path) -> None:
    """Never write a run into a file, another run's folder or a folder of the user's files."""
    if run_dir.exists() and not run_dir.is_dir():
        raise DataError(f"--out {run_dir}: that is a file, not a folder; pass a new folder")
    if (run_dir / RUN_DB_FILENAME).exists():
        raise DataError(f"--out {run_dir}: already holds a run; finish it with --resume {run_dir}, or pass a new folder")
    if run_dir.is_dir() and any(p.name != ".lock" for p in run_dir.iterdir()):
        raise DataError(f"--out {run_dir}: folder exists and is not empty; medpool will not overwrite its files, "
                        "pass a new or empty folder")


def _resolve_options(args: argparse.Namespace) -> tuple[dict[str, Any], Path, bool]:
    """(result-shaping options, run dir, resuming?) — on resume and rescore, the run's stored options win."""
    if args.resume and args.rescore:
        raise DataError("--resume with --rescore: use one; --resume finishes a run, --rescore scores a finished run again")
    if args.resume or args.rescore:
        run_dir = Path(args.resume or args.rescore)
        options = _stored_options(run_dir)
        if args.resume:
            _check_resume_flags(args, options)
        elif args.pool is not None:
            options["pool"] = str(Path(args.pool).resolve())  # e.g. the same pool with another judge:
        if args.rescore:  # scoring again may change how it scores, never what was asked
            explicit = _explicit_options(args)
            fixed = sorted(set(explicit) - {"pool", "no_judge", "hallu", "no_routing", "rejudge_sample"})
            if fixed or args.out:
                flag = "--" + (fixed[0].replace("_", "-") if fixed else "out")
                raise DataError(f"{flag} with --rescore: a rescore scores the run's stored answers as they are "
                                "(its items, models and folder); only --pool, --hallu, --no-judge and --no-routing "
                                "may change. Start a new run with --out for other items or models")
            options.update({k: v for k, v in explicit.items() if k in ("no_judge", "hallu", "no_routing", "rejudge_sample")})
        return options, run_dir, bool(args.resume)
    if args.pool is not None and not args.pool.strip():
        raise DataError("--pool is empty (an unset shell variable?); name a pool file, or drop --pool for ./model_pool.yaml")
    options = {name: getattr(args, name) for name in PLAN_OPTIONS}
    options["pool"] = str(Path(args.pool or DEFAULT_POOL).resolve())
    options["data"] = [str(Path(p).resolve()) for p in args.data] if args.data else None
    if args.cache_dir is not None:
        options["cache_dir"] = str(Path(args.cache_dir).expanduser().resolve())
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run_dir = Path(args.out) if args.out else Path("runs") / stamp
    if not args.dry_run:
        _check_new_out(run_dir)
    return options, run_dir, False


def _check_cache_dir(options: dict[str, Any]) -> None:
    """The response cache folder must be (or become) a folder before any request is sent."""
    if options.get("no_cache"):
        return
    where = "--cache-dir" if options.get("cache_dir") else f"${CACHE_ENV}" if os.environ.get(CACHE_ENV) else "cache"
    path = Path(options["cache_dir"]) if options.get("cache_dir") else default_cache_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"{where} {path}: cannot be used as the response cache folder ({exc.strerror}); "
                        "pass a writable folder with --cache-dir, or --no-cache") from None


def run_judge(plan: Plan, options: dict[str, Any]) -> Model | None:
    """The run's judge model, or None when judging is off or no selected item needs one."""
    judge = None if options.get("no_judge") else plan.config.judge_model()
    if judge is not None and not any(i.gold_type in JUDGED_GOLD_TYPES for i in plan.items):
        return None
    return judge


async def _execute(plan: Plan, run_id: str, run_dir: Path, store: RunStore, pending: list[Unit],
                   args: argparse.Namespace, options: dict[str, Any], resuming: bool) -> dict[str, Any] | None:
    """Answer the pending answer units, then score every answer; returns the scoring tally."""
    totals: dict[str, int] = {}
    for unit in pending:
        totals[unit.model] = totals.get(unit.model, 0) + 1
    judge = run_judge(plan, options)
    serve = [m for m in plan.models if m.name in totals] + ([judge] if judge is not None else [])
    cache = None if options.get("no_cache") else ResponseCache(options.get("cache_dir"))
    current = asyncio.current_task()
    loop = asyncio.get_running_loop()
    sigterm: list[bool] = []

    def on_sigterm(signum: int, frame: Any) -> None:
        # Recorded here, synchronously: a cancel alone is lost when it lands as the last await ends.
        sigterm.append(True)
        if current is not None:
            loop.call_soon_threadsafe(current.cancel)

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        async with open_backends(plan.config, serve, run_dir) as endpoints:
            progress = ProgressDisplay(totals, interval_s=args.log_interval)
            scheduler = Scheduler(
                run_id=run_id, store=store, lanes={n: e.lane for n, e in endpoints.items()}, cache=cache,
                progress=progress, max_consecutive_failures=options["max_consecutive_failures"],
                retry_infra_errors=resuming,
                on_model_failed=lambda model, reason: log.warning("model %s marked failed: %s", model, reason),
            )
            try:
                if pending:
                    dispatcher = Dispatcher({m.name: m for m in plan.models}, plan.items_by_id, endpoints)
                    await scheduler.run(dispatcher.lanes(pending))
            finally:
                progress.close()
            stage = ScoringStage(run_id=run_id, store=store, config=plan.config, items=plan.items_by_id,
                                 judge=judge, endpoints=endpoints, scheduler=scheduler, log_interval=args.log_interval,
                                 hallu=bool(options.get("hallu")), rejudge_sample=options.get("rejudge_sample") or 0)
            await stage.run()
            stage.write(run_dir)
            return stage.tally()
    finally:
        signal.signal(signal.SIGTERM, _interrupt)  # a SIGTERM during export or routing still ends as 130
        if sigterm:
            raise KeyboardInterrupt
        if cache is not None:
            cache.close()


def _build_routing(run_dir: Path) -> bool:
    """Leaderboards, pairwise ratings, hard subset, manifest and report (routing.build)."""
    try:
        from routing.build import main as build_main
    except ImportError as exc:  # routing is part of this project; a broken install is worth a line
        print(f"warning: routing.build unavailable ({exc}); run python -m routing.build --run {run_dir}", file=sys.stderr)
        return False
    return build_main(["--run", str(run_dir)]) == 0


def _print_summary(summary: dict[str, Any], run_dir: Path) -> None:
    print(f"run directory: {run_dir}")
    for model, entry in summary.get("models", {}).items():
        counts = entry.get("status", {})
        failed = f"  FAILED: {entry['failed']}" if entry.get("failed") else ""
        print(f"  {model}: ok {counts.get('ok', 0)}, error {counts.get('error', 0)}, "
              f"infra_error {counts.get('infra_error', 0)}, cache hits {entry.get('cache_hits', 0)}{failed}")
    print(f"results: {run_dir / 'results.jsonl'}\nsummary: {run_dir / 'summary.json'}")


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # SIGTERM outside the event loop (loading, exporting, routing) ends like Ctrl-C


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    args = build_parser().parse_args(argv)
    previous_sigterm = signal.signal(signal.SIGTERM, _interrupt)
    try:
        return _main(args)
    except KeyboardInterrupt:
        print("interrupted before the run started; nothing to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)


def _main(args: argparse.Namespace) -> int:
    try:
        options, run_dir, resuming = _resolve_options(args)
        _check_cache_dir(options)
        config = load_pool(options["pool"])
        loaded = load_run_items(options["data"])
        items = select_items(loaded, options)
        models = select_models(config, options["models"].split(",") if options.get("models") else None, options["all"])
    except (PoolConfigError, DataError, StoreFormatError, ValueError, FileNotFoundError, sqlite3.DatabaseError) as exc:
        return _fail(str(exc))
    if not models:
        return _fail(f"{options['pool']}: no model selected: set `enabled: true` on a model, or pass --models / --all")
    plan = Plan(config, models, tuple(items))
    if args.dry_run:
        judge = run_judge(plan, options)
        print(json.dumps({**plan.describe(judge, hallu=bool(options.get("hallu"))), "skipped_items": len(loaded.skipped)},
                         ensure_ascii=False, indent=2))
        return EXIT_OK
    try:
        with RunLock(run_dir):
            return _run(args, plan, options, run_dir, resuming)
    except RunLockedError as exc:
        return _fail(str(exc))


def _run(args: argparse.Namespace, plan: Plan, options: dict[str, Any], run_dir: Path, resuming: bool) -> int:
    run_id = run_dir.name
    pool_fp, data_fp = plan.fingerprints()
    started = time.monotonic()
    scoring: dict[str, Any] | None = None
    status = EXIT_OK
    with RunStore(run_dir) as store:
        try:
            if args.rescore:
                pending: list[Unit] = []  # answers are kept; only the scoring stage runs again
            else:
                try:
                    store.begin_run(run_id, pool_fingerprint=pool_fp, data_fingerprint=data_fp, options=options)
                except RunMismatchError as exc:
                    return _fail(str(exc))
                store.save_plan(run_id, plan.units())
                # Judge stages are never sent from here: the scoring stage derives them from the answers.
                pending = [u for u in store.pending_units(run_id, retry_infra_errors=resuming) if u.stage == ANSWER_STAGE]
                print(f"run {run_id}: {plan.unit_count} units, {len(pending)} to do "
                      f"({len(plan.models)} models × {len(plan.items)} items)", file=sys.stderr)
            scoring = asyncio.run(_execute(plan, run_id, run_dir, store, pending, args, options, resuming))
        except (KeyboardInterrupt, asyncio.CancelledError):
            status = EXIT_INTERRUPTED
        except Exception as exc:  # a backend that never came up, a server that crashed at start
            print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
            status = EXIT_INFRA
        if not args.rescore and store.get_run(run_id) is not None:
            store.set_run_status(run_id, {EXIT_OK: "finished", EXIT_INFRA: "interrupted"}.get(status, "interrupted"))
    try:
        export_results_jsonl(run_dir, run_id)
        summary = write_summary(run_dir, time.monotonic() - started, run_id=run_id,
                                extra={"scoring": scoring} if scoring is not None else None)
        _print_summary(summary, run_dir)
        if status == EXIT_OK and not options.get("no_routing") and not _build_routing(run_dir):
            status = EXIT_INFRA
    except KeyboardInterrupt:
        status = EXIT_INTERRUPTED
    if status == EXIT_INTERRUPTED:
        print(f"interrupted; finished results are saved. Resume with: python -m pool.run --resume {run_dir}", file=sys.stderr)
        return status
    infra = sum(m.get("status", {}).get("infra_error", 0) for m in summary.get("models", {}).values())
    if status == EXIT_OK and infra:
        print(f"{infra} unit(s) ended in infra_error (no answer); see summary.json. "
              f"Retry them with: python -m pool.run --resume {run_dir}", file=sys.stderr)
        status = EXIT_INFRA
    return status


if __name__ == "__main__":
    sys.exit(main())
