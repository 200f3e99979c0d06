"""``python -m routing.scenario RUN_DIR --shortlist shortlist.yaml [--out DIR]``: theory against measurement.

Writes ``DIR/reports/<domain>-<axis>-<date>.md`` (DIR defaults to RUN_DIR; the date is the run's; a
domain or axis the screen was not asked is ``any``) and prints its path and Spearman's ρ. Exit codes: 0
written; 1 writing failed; 2 bad input (the run folder, the shortlist, a flag), named.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from eval.files import FolderError, atomic_write_text, make_folder, write_failed
from eval.gold_types import FAMILIES
from routing.cli_types import UNIT_INTERVAL
from routing.load.runs import LoadError, load_runs
from routing.scenario.measured import SPECIALTY, measure
from routing.scenario.report import SHOWN_FAMILIES, Thresholds, order_rows, render_scenario
from routing.screen.shortlist import ShortlistError, read_shortlist

EXIT_OK, EXIT_WRITE, EXIT_INPUT = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m routing.scenario",
        description="Set a theory screen's shortlist against a run of its models: family scores with intervals "
        "side by side, theory order vs measured order (Spearman), warnings, ceiling references.",
        epilog="Exit codes: 0 written; 1 writing failed; 2 bad input. See docs/screen.md.",
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run folder written by python -m pool.run")
    parser.add_argument("--shortlist", required=True, metavar="FILE", help="the shortlist.yaml routing.screen wrote")
    parser.add_argument("--out", metavar="DIR", help="where reports/ goes (default: RUN_DIR)")
    parser.add_argument(
        "--family",
        choices=FAMILIES,
        help="the family the measured order is read from (default: the shortlist's axis when it names a family, "
        "else specialty when it names a domain, else capability)",
    )
    parser.add_argument(
        "--unsupported-max",
        type=UNIT_INTERVAL,
        default=Thresholds.unsupported_max,
        metavar="RATE",
        help=f"warn at an unsupported rate at or above this (default {Thresholds.unsupported_max:g})",
    )
    parser.add_argument(
        "--orchestration-min",
        type=UNIT_INTERVAL,
        default=Thresholds.orchestration_min,
        metavar="SCORE",
        help=f"warn at an orchestration score below this (default {Thresholds.orchestration_min:g})",
    )
    return parser


def order_family(axis: str | None, domain: str | None) -> str:
    """The family the measured order is read from when ``--family`` is not given."""
    if axis is not None and axis.strip().lower() in FAMILIES:
        return axis.strip().lower()
    return SPECIALTY if domain else "capability"


def report_name(domain: str | None, axis: str | None, created_at: str) -> str:
    """``cardiology-specialty-2026-01-05.md``: unsafe characters of a name become ``_``."""

    def safe(text: str | None) -> str:
        return re.sub(r"[^\w.-]+", "_", text or "any").strip("_") or "any"

    return f"{safe(domain)}-{safe(axis)}-{created_at[:10]}.md"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        shortlist = read_shortlist(args.shortlist)
        loaded = load_runs([args.run_dir])
        out = make_folder(Path(args.out or args.run_dir) / "reports", "--out")
    except (ShortlistError, LoadError, FolderError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    family = args.family or order_family(shortlist.axis, shortlist.domain)
    in_run = sorted({entrant.model.name for entrant in loaded.table.entrants})
    measured = measure(loaded.table, in_run, SHOWN_FAMILIES, family, shortlist.domain)
    run = loaded.runs[0]
    text = render_scenario(
        shortlist,
        measured,
        in_run,
        run_label=f"`{args.run_dir}` ({run.run_id}, {run.created_at})",
        order_family=family,
        thresholds=Thresholds(args.unsupported_max, args.orchestration_min),
    )
    path = out / report_name(shortlist.domain, shortlist.axis, run.created_at)
    try:
        atomic_write_text(path, text)
    except OSError as exc:
        print(write_failed(str(path), exc), file=sys.stderr)
        return EXIT_WRITE
    rows = order_rows(shortlist, measured)
    print(f"scenario: {path} ({len(rows)} candidate(s) in both orders, measured on {family})")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
