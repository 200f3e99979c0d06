"""``python -m pool.freshness --data SUITE [--domain D …] [--max N] [--pool FILE] [--out DIR] [--dry-run]``, or
``--resume DIR``: the command line of the gold freshness audit, turned into a
:class:`~pool.freshness.spec.FreshnessSpec` and handed to :mod:`pool.freshness.audit`.

Exit codes: 0 every gold point judged; 1 some judge calls failed (the reports say which points; ``--resume``
asks them again); 2 bad input; 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from pool.freshness.audit import EXIT_INPUT, EXIT_INTERRUPTED, AuditResult, plan_audit, resume_audit, run_audit
from pool.freshness.spec import DEFAULT_POOL, AuditInputError, FreshnessSpec
from routing.cli_types import SECONDS, integer


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pool.freshness",
        description="Audit the gold points of a criteria suite (every expected_topics and must_warn entry, "
        "de-duplicated per domain) with the pool's judge: is each still what the latest guideline says? Each "
        "point gets current, drifted (changed or tightened: review it) or uncertain, the guideline the judge "
        "names and a note. Writes freshness.json and freshness/<domain>.md into --out; the suite is never "
        "written. The judge answers from its own knowledge, which has a cutoff.",
        epilog="Exit codes: 0 every point judged; 1 some judge calls failed (--resume DIR asks them again); "
        "2 bad input; 130 interrupted.",
    )
    parser.add_argument(
        "--data", nargs="+", metavar="SUITE", help="suite file(s) or folder(s) of criteria items (required)"
    )
    parser.add_argument(
        "--domain",
        action="append",
        dest="domains",
        metavar="D",
        help="audit this domain (cardiology:hypertension) or system (cardiology: every cardiology:* item); "
        "repeat for more; default: every system of the data, each on its own",
    )
    parser.add_argument("--max", type=integer(1), metavar="N", help="at most the first N gold points of each domain")
    parser.add_argument(
        "--pool", help=f"pool file whose judge: (or judges: panel) is asked (default: ./{DEFAULT_POOL})"
    )
    parser.add_argument("--out", metavar="DIR", help="a new audit folder (default: runs/freshness-<UTC time>)")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the points per domain, the judge calls and their cost at most, as JSON, and exit",
    )
    parser.add_argument(
        "--resume",
        metavar="DIR",
        help="finish the audit in DIR with its stored options: only the verdicts it lacks are asked",
    )
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the shared response cache")
    parser.add_argument("--cache-dir", help="response cache folder (default: $MEDPOOL_CACHE_DIR or ~/.cache/medpool)")
    parser.add_argument(
        "--log-interval", type=SECONDS, default=30.0, help="seconds between progress lines when not on a terminal"
    )
    return parser


def _spec(args: argparse.Namespace) -> FreshnessSpec:
    return FreshnessSpec(
        data=tuple(args.data or ()),
        pool=args.pool,
        domains=tuple(args.domains or ()),
        max_points=args.max,
        out=args.out,
        no_cache=args.no_cache,
        cache_dir=args.cache_dir,
        log_interval=args.log_interval,
    )


def summary_lines(result: AuditResult) -> list[str]:
    """What the audit found and wrote, for a person."""
    tally, calls = result.counts, result.calls
    lines = [
        f"freshness audit: {tally['points']} gold points — {tally['current']} current, {tally['drifted']} drifted, "
        f"{tally['uncertain']} uncertain; {calls.get('sent', 0)} judge calls sent, {calls.get('cached', 0)} from "
        "the response cache",
    ]
    lines += [f"  drifted: {v.point.text} ({v.current_guideline}) — {v.note}" for v in result.drifted]
    lines.append(f"  wrote {', '.join(str(p) for p in result.paths)}")
    return lines


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    spec = _spec(args)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)  # a SIGTERM stops the audit as Ctrl-C does: replies kept
    try:
        if args.resume and (args.dry_run or args.out):
            raise AuditInputError("--resume DIR finishes the audit in DIR: give it without --out and --dry-run")
        if args.dry_run:
            print(json.dumps(plan_audit(spec), ensure_ascii=False, indent=2))
            return 0
        result = resume_audit(args.resume, spec) if args.resume else run_audit(spec)
    except AuditInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("interrupted before the audit started; nothing was asked", file=sys.stderr)
        return EXIT_INTERRUPTED
    if result.counts:
        print("\n".join(summary_lines(result)))
    return result.exit_code
