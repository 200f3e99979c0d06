"""``python -m pool.run``: send the selected items to every enabled model of the pool, resumably.

Exit codes: 0 every unit has a result and none is an infra error; 1 some units have infra errors
(see summary.json); 2 bad input (pool file, data, arguments); 130 interrupted (resume with
``--resume RUN_DIR``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pool.config import PoolConfigError, load_pool
from pool.endpoints import BackendEndpoint, open_backends
from pool.export import export_results_jsonl, write_summary
from pool.items_source import DataError, load_run_items, select_items
from pool.outcome import Unit
from pool.plan import Plan, answer_request, select_models
from pool.progress import ProgressDisplay
from pool.response_cache import ResponseCache
from pool.scheduler import Job, Scheduler
from pool.scoring import ScoringStage
from pool.store import RunMismatchError, RunStore

log = logging.getLogger("pool.run")

EXIT_OK, EXIT_INFRA, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
DEFAULT_POOL = "model_pool.yaml"
# Options stored with a run so that --resume rebuilds exactly the same plan.
PLAN_OPTIONS = ("pool", "data", "models", "all", "limit", "track", "task", "domain", "id", "sample", "no_cache",
                "orchestration", "subset")
JUDGED_GOLD_TYPES = ("reference", "criteria", "probe")


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
    parser.add_argument("--limit", type=int, help="first N items after filtering")
    parser.add_argument("--track", help="only items of this track")
    parser.add_argument("--task", help="only items of this task")
    parser.add_argument("--domain", help="only items whose domain is or starts with this (system or system:topic)")
    parser.add_argument("--id", action="append", help="only this item id (repeatable)")
    parser.add_argument("--sample", type=int, metavar="N", help="first N items per (task, domain)")
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
    parser.add_argument("--no-judge", action="store_true", help="skip the LLM judge: judge-scored items are listed as unscorable")
    parser.add_argument("--no-routing", action="store_true", help="do not build leaderboards, manifest and report at the end")
    parser.add_argument("--dry-run", action="store_true", help="print the plan (models × items × stages, backends, limits) and exit")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the shared response cache")
    parser.add_argument("--cache-dir", help="response cache folder (default: $MEDPOOL_CACHE_DIR or ~/.cache/medpool)")
    parser.add_argument("--max-consecutive-failures", type=int, default=5,
                        help="give up on a model after this many infra errors in a row (default 5; 0 never)")
    parser.add_argument("--log-interval", type=float, default=30.0, help="seconds between progress lines when not on a terminal")
    return parser


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_INPUT


def _resolve_options(args: argparse.Namespace) -> tuple[dict[str, Any], Path, bool]:
    """(plan options, run dir, resuming?) — on resume, the options stored with the run win."""
    if args.resume or args.rescore:
        run_dir = Path(args.resume or args.rescore)
        if not (run_dir / "run.sqlite").is_file():
            raise DataError(f"{run_dir}: no run.sqlite there; pass the directory of an earlier run")
        with RunStore(run_dir) as store:
            runs = store.runs()
        if len(runs) != 1:
            raise DataError(f"{run_dir}: expected one run in run.sqlite, found {len(runs)}")
        options = dict(runs[0].options)
        if args.rescore and args.pool is not None:
            options["pool"] = str(Path(args.pool or DEFAULT_POOL).resolve())  # e.g. the same pool with another judge:
        return options, run_dir, True
    options = {name: getattr(args, name) for name in PLAN_OPTIONS}
    options["pool"] = str(Path(args.pool or DEFAULT_POOL).resolve())
    options["data"] = [str(Path(p).resolve()) for p in args.data] if args.data else None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return options, Path(args.out) if args.out else Path("runs") / stamp, False


def _jobs(plan: Plan, units: Sequence[Unit], endpoints: dict[str, BackendEndpoint]) -> dict[str, Iterator[Job]]:
    """Lazy job streams per backend, in plan order (model by model)."""
    models = {m.name: m for m in plan.models}
    items = plan.items_by_id
    by_lane: dict[str, list[Unit]] = {}
    for unit in units:
        by_lane.setdefault(models[unit.model].backend, []).append(unit)

    def stream(lane: str, lane_units: list[Unit]) -> Iterator[Job]:
        endpoint = endpoints[lane]
        for unit in lane_units:
            model = models[unit.model]
            yield Job(unit, answer_request(model, items[unit.item_id]), endpoint.type, endpoint.identities[model.name])

    return {lane: stream(lane, lane_units) for lane, lane_units in by_lane.items()}


async def _execute(plan: Plan, run_id: str, run_dir: Path, store: RunStore, pending: list[Unit],
                   args: argparse.Namespace, options: dict[str, Any], resuming: bool) -> dict[str, Any] | None:
    """Answer the pending units, then score every answer; returns the scoring tally (None: not scored)."""
    totals: dict[str, int] = {}
    for unit in pending:
        totals[unit.model] = totals.get(unit.model, 0) + 1
    judge = None if args.no_judge else plan.config.judge_model()
    if judge is not None and not any(i.gold_type in JUDGED_GOLD_TYPES for i in plan.items):
        judge = None
    serve = [m for m in plan.models if m.name in totals] + ([judge] if judge is not None else [])
    cache = None if options.get("no_cache") else ResponseCache(args.cache_dir)
    current = asyncio.current_task()
    loop = asyncio.get_running_loop()
    if current is not None:
        loop.add_signal_handler(signal.SIGTERM, current.cancel)
    try:
        async with open_backends(plan.config, serve, run_dir) as endpoints:
            progress = ProgressDisplay(totals, interval_s=args.log_interval)
            scheduler = Scheduler(
                run_id=run_id, store=store, lanes={n: e.lane for n, e in endpoints.items()}, cache=cache,
                progress=progress, max_consecutive_failures=args.max_consecutive_failures,
                retry_infra_errors=resuming,
                on_model_failed=lambda model, reason: log.warning("model %s marked failed: %s", model, reason),
            )
            try:
                if pending:
                    await scheduler.run(_jobs(plan, pending, endpoints))
            finally:
                progress.close()
            stage = ScoringStage(run_id=run_id, store=store, config=plan.config, items=plan.items_by_id,
                                 judge=judge, endpoints=endpoints, scheduler=scheduler, log_interval=args.log_interval,
                                 hallu=args.hallu)
            await stage.run()
            stage.write(run_dir)
            return stage.tally()
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
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


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    args = build_parser().parse_args(argv)
    try:
        options, run_dir, resuming = _resolve_options(args)
        config = load_pool(options["pool"])
        loaded = load_run_items(options["data"])
        items = select_items(loaded, options)
        models = select_models(config, options["models"].split(",") if options.get("models") else None, options["all"])
    except (PoolConfigError, DataError, ValueError, FileNotFoundError) as exc:
        return _fail(str(exc))
    if not models:
        return _fail("no model selected: enable a model in the pool or pass --models / --all")
    if not items:
        return _fail("no item selected: check --data and the filters")
    plan = Plan(config, models, tuple(items))
    if args.dry_run:
        print(json.dumps({**plan.describe(), "skipped_items": len(loaded.skipped)}, ensure_ascii=False, indent=2))
        return EXIT_OK

    run_dir.mkdir(parents=True, exist_ok=True)
    run_id = run_dir.name
    pool_fp, data_fp = plan.fingerprints()
    started = time.monotonic()
    scoring: dict[str, Any] | None = None
    with RunStore(run_dir) as store:
        if args.rescore:
            pending: list[Unit] = []  # answers are kept; only the scoring stage runs again
        else:
            try:
                store.begin_run(run_id, pool_fingerprint=pool_fp, data_fingerprint=data_fp, options=options)
            except RunMismatchError as exc:
                return _fail(f"{exc}; start a new run with --out instead of --resume")
            store.save_plan(run_id, plan.units())
            pending = store.pending_units(run_id, retry_infra_errors=resuming)
            print(f"run {run_id}: {plan.unit_count} units, {len(pending)} to do "
                  f"({len(plan.models)} models × {len(plan.items)} items)", file=sys.stderr)
        status = EXIT_OK
        try:
            scoring = asyncio.run(_execute(plan, run_id, run_dir, store, pending, args, options, resuming))
        except (KeyboardInterrupt, asyncio.CancelledError):
            store.set_run_status(run_id, "interrupted")
            status = EXIT_INTERRUPTED
        except Exception as exc:  # a backend that never came up, a server that crashed at start
            store.set_run_status(run_id, "interrupted")
            print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
            status = EXIT_INFRA
        else:
            store.set_run_status(run_id, "finished")
    export_results_jsonl(run_dir, run_id)
    summary = write_summary(run_dir, time.monotonic() - started, run_id=run_id,
                            extra={"scoring": scoring} if scoring is not None else None)
    _print_summary(summary, run_dir)
    if status == EXIT_INTERRUPTED:
        print(f"interrupted; finished results are saved. Resume with: python -m pool.run --resume {run_dir}", file=sys.stderr)
        return status
    if status == EXIT_OK and not args.no_routing and not _build_routing(run_dir):
        status = EXIT_INFRA
    infra = sum(m.get("status", {}).get("infra_error", 0) for m in summary.get("models", {}).values())
    if status == EXIT_OK and infra:
        print(f"{infra} unit(s) ended in infra_error (no answer); see summary.json. "
              f"Retry them with: python -m pool.run --resume {run_dir}", file=sys.stderr)
        status = EXIT_INFRA
    return status


if __name__ == "__main__":
    sys.exit(main())
