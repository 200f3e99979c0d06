"""``python -m pool.pairwise RUN_DIR``: the judge compares the answers of the models a night could not separate.

A finished run's ties (``pool.pairwise.select``: tied models whose intervals overlap in a bucket the
scores left undecided) are judged side by side, both orders, within ``--budget`` judge calls, and
``battles.jsonl`` and ``pairwise_judged.json`` are written into RUN_DIR (``pool.pairwise.stage``, which
``python -m pool.run --pairwise`` runs after scoring too); a repeated command asks only what has no
verdict yet. Run ``python -m routing.build --run RUN_DIR`` afterwards to see the judged decisions in
the leaderboard, manifest and report.

``--dry-run`` prints the ties, the battles and the calls they would cost, and asks nothing.
Exit codes: 0 done; 1 a judge could not be brought up or asked (run it again: answered requests come
from the response cache and the stored verdicts); 2 bad input; 130 interrupted by Ctrl-C or SIGTERM
(run it again: every verdict received is kept).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pool.execute.executor import leaf_errors
from pool.pairwise.select import DEFAULT_BUDGET, load_selection
from pool.pairwise.stage import judge_ties, summary_lines

EXIT_OK, EXIT_INFRA, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pool.pairwise", description=__doc__.split("\n\n")[0].strip("`").replace("``", "")
    )
    parser.add_argument("run", help="the folder of a finished run (python -m pool.run --out RUN_DIR)")
    parser.add_argument("--pool", help="judge with this pool file's judge(s) instead of the run's")
    parser.add_argument(
        "--budget",
        type=int,
        help="at most this many judge calls (both orders, every judge; default: the pool file's pairwise: {budget}, "
        f"else {DEFAULT_BUDGET}); 0: no limit",
    )
    parser.add_argument(
        "--bucket",
        action="append",
        default=[],
        metavar="ID",
        help="judge only the ties of this bucket (e.g. orchestration/skill/routing; repeatable)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the ties, battles and calls; ask nothing")
    parser.add_argument("--no-cache", action="store_true", help="ask the judge again instead of reusing cached replies")
    parser.add_argument("--cache-dir", help="response cache folder (default: $MEDPOOL_CACHE_DIR or ~/.cache/medpool)")
    return parser


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # a SIGTERM stops the command as Ctrl-C does: every verdict received is kept


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run_dir = Path(args.run)
    if args.budget is not None and args.budget < 0:
        print("error: --budget must be ≥ 0 (0: no limit)", file=sys.stderr)
        return EXIT_INPUT
    try:
        selection = load_selection(run_dir, args.budget, args.pool, buckets=args.bucket)
    except (ValueError, OSError) as exc:  # a missing run, a damaged store, a pool without a judge
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    if args.dry_run:
        print(json.dumps(selection.describe(), ensure_ascii=False, indent=2))
        return EXIT_OK
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        report = judge_ties(selection, cache_dir=args.cache_dir, no_cache=args.no_cache)
    except KeyboardInterrupt:
        print("interrupted; the verdicts given so far are stored: run the command again", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:  # battles.jsonl or pairwise_judged.json not written, e.g. a full disk
        print(f"error: {type(exc).__name__}: {exc} (the verdicts are stored: run the command again)", file=sys.stderr)
        return EXIT_INFRA
    except Exception as exc:  # noqa: BLE001 (a judge that never came up: say so, exit 1)
        for leaf in leaf_errors(exc):
            print(f"error: {type(leaf).__name__}: {leaf}", file=sys.stderr)
        return EXIT_INFRA
    finally:
        signal.signal(signal.SIGTERM, previous)
    print("\n".join(summary_lines(report)))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
