"""A freshness audit from start to end: :func:`run_audit` (a new one), :func:`resume_audit` (finish one),
:func:`plan_audit` (the ``--dry-run`` view). The CLI (:mod:`pool.freshness.cli`) only wraps these.

An audit folder is a run folder: its run store (``run.sqlite``) holds every judge reply as it arrives, so
a killed audit resumed with ``--resume DIR`` asks only what it had not been answered, and a second process
on the same folder is refused (``pool.store.run_lock``). The reports are written once every point has its
verdicts, into the folder only: the suite is read, never written.

Exit codes (``AuditResult.exit_code``): 0 every point judged; 1 some judge calls failed (those points are
``uncertain`` in the reports; ``--resume DIR`` asks them again); 2 bad input (:class:`AuditInputError`);
130 interrupted (Ctrl-C or SIGTERM; everything answered is kept).
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pool.config.preflight import PreflightError, preflight
from pool.execute.executor import leaf_errors
from pool.execute.response_cache import ResponseCache
from pool.freshness.judging import PointVerdict, judge_points
from pool.freshness.report import audit_document, counts, write_reports
from pool.freshness.spec import RUN_ID, AuditInputError, FreshnessSpec, Prepared, describe, prepare, resume_options
from pool.items_source import DataError
from pool.run_spec import check_new_out
from pool.store.run_lock import RunFolderError, RunLock
from pool.store.run_store import RUN_DB_FILENAME, RunMismatchError, RunStore, StoreFormatError

EXIT_OK, EXIT_INFRA, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


@dataclass(frozen=True)
class AuditResult:
    """What an audit produced: its folder, exit code, verdict counts, calls, and the files written."""

    folder: Path
    exit_code: int
    counts: dict[str, int] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    paths: tuple[Path, ...] = ()
    verdicts: tuple[PointVerdict, ...] = ()

    @property
    def drifted(self) -> list[PointVerdict]:
        return [v for v in self.verdicts if v.verdict == "drifted"]


def plan_audit(spec: FreshnessSpec) -> dict[str, Any]:
    """What :func:`run_audit` would ask, of whom, at what cost at most; nothing is sent or written."""
    return describe(prepare(spec.options()))


def run_audit(spec: FreshnessSpec) -> AuditResult:
    """Audit ``spec``'s gold points in a new folder (``spec.out_dir()``)."""
    folder = spec.out_dir()
    try:
        check_new_out(folder)
    except DataError as exc:
        raise AuditInputError(str(exc).replace("--resume", "python -m pool.freshness --resume")) from None
    return _audit(spec, spec.options(), folder)


def resume_audit(folder: str | Path, spec: FreshnessSpec | None = None) -> AuditResult:
    """Finish the audit in ``folder`` with its stored options; ``spec`` may only repeat them."""
    folder = Path(folder)
    if not (folder / RUN_DB_FILENAME).is_file():
        raise AuditInputError(f"--resume {folder}: no audit there ({RUN_DB_FILENAME} missing); pass an audit folder")
    try:
        with RunStore(folder, create=False) as store:
            info = store.get_run(RUN_ID)
    except (StoreFormatError, sqlite3.DatabaseError) as exc:
        raise AuditInputError(str(exc)) from None
    if info is None:
        raise AuditInputError(f"--resume {folder}: that folder holds a pool run, not a freshness audit")
    return _audit(spec or FreshnessSpec(), resume_options(spec or FreshnessSpec(), info.options, folder), folder)


def _audit(spec: FreshnessSpec, options: dict[str, Any], folder: Path) -> AuditResult:
    prepared = prepare(options)
    try:
        preflight(prepared.config, options["pool"], prepared.judges)
    except PreflightError as exc:
        raise AuditInputError(str(exc)) from None
    try:
        with RunLock(folder), RunStore(folder) as store:
            try:
                store.begin_run(
                    RUN_ID,
                    pool_fingerprint=prepared.judges_fingerprint(),
                    data_fingerprint=prepared.points_fingerprint(),
                    options=options,
                )
            except RunMismatchError as exc:
                raise AuditInputError(str(exc).replace("start a new run", "start a new audit")) from None
            print(
                f"freshness audit {folder}: {len(prepared.all_points)} gold points in {len(prepared.points)} "
                f"domain(s), {len(prepared.judges)} judge(s)",
                file=sys.stderr,
            )
            return _judge(spec, prepared, store, folder)
    except RunFolderError as exc:
        raise AuditInputError(str(exc)) from None


def _judge(spec: FreshnessSpec, prepared: Prepared, store: RunStore, folder: Path) -> AuditResult:
    cache = None if spec.no_cache else ResponseCache(spec.cache_dir, write_behind=True)
    try:
        verdicts, calls = asyncio.run(
            judge_points(prepared.config, prepared.judges, prepared.all_points, store, folder, cache, spec.log_interval)
        )
    except (KeyboardInterrupt, asyncio.CancelledError):
        store.set_run_status(RUN_ID, "interrupted")
        print(f"interrupted; every reply so far is kept: python -m pool.freshness --resume {folder}", file=sys.stderr)
        return AuditResult(folder, EXIT_INTERRUPTED)
    except Exception as exc:  # a judge server that never came up or died, a full disk
        store.set_run_status(RUN_ID, "interrupted")
        for leaf in leaf_errors(exc):
            print(f"error: {type(leaf).__name__}: {leaf}", file=sys.stderr)
        print(
            f"every reply so far is kept; fix the cause, then: python -m pool.freshness --resume {folder}",
            file=sys.stderr,
        )
        return AuditResult(folder, EXIT_INFRA)
    finally:
        if cache is not None:
            cache.close()
    failed = sum(any(o.status == "failed" for o in v.opinions) for v in verdicts)  # a judge to ask again
    store.set_run_status(RUN_ID, "interrupted" if failed else "finished")
    paths = write_reports(folder, audit_document(prepared, verdicts, calls))
    return AuditResult(
        folder, EXIT_INFRA if failed else EXIT_OK, counts(verdicts), calls, tuple(paths), tuple(verdicts)
    )
