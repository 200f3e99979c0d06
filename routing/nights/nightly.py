"""What happens after a night's run: index it, compare it with the last comparable night, update the report.

:func:`after_run` is the one call ``pool.run`` makes once the run's own files (summary, scores,
routing build) are written:

1. :func:`routing.nights.history.append_run` records the run in ``ROOT/index.jsonl``;
2. :func:`routing.nights.history.latest_comparable` finds the latest earlier finished run on the same
   data whose folder still exists; when there is one, :func:`routing.nights.compare.compare_runs` and
   :func:`routing.nights.compare.write_comparison` write ``compare.json`` / ``compare.md`` into the run;
3. the run's ``report.html`` gets its "Since last night" and "Trends" sections.

A comparison that cannot be made (the earlier run's files broken) is reported in
:attr:`NightlyOutcome.problems`, never raised: the night's own results stand.

``python -m routing.nightly RUN_DIR [--root runs] [--fail-on-regression [T]] [--min-drop D]
[--fail-on-inconclusive] [--sequential [--reference-nights W]]`` does the same by hand; with
``--sequential`` the night also advances the sequential gate (``ROOT/gate_sequential.json``). Exit codes:
0 done; 1 writing its files failed (e.g. a full disk); 2 bad input; 3
(``routing.nights.compare.EXIT_REGRESSION``) with ``--fail-on-regression``: a significant
regression larger than T, or a sequential alarm; 5 (``EXIT_INCONCLUSIVE``) with
``--fail-on-inconclusive``: no regression, but some model's family is inconclusive.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from eval.files import FolderError, write_failed
from routing.load.runs import LoadError, ScoreDigest
from routing.nights.compare import (
    COMPARE_JSON,
    EXIT_INCONCLUSIVE,
    EXIT_INPUT,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_WRITE,
    INCONCLUSIVE_HELP,
    Comparison,
    compare_runs,
    with_sequential,
    write_comparison,
)
from routing.nights.gate.detectable import DEFAULT_MIN_DROP
from routing.nights.gate.options import add_gate_option
from routing.nights.gate.sequential import DEFAULT_REFERENCE_NIGHTS, STATE_FILENAME, SequentialStateError
from routing.nights.history import HistoryError, IndexEntry, append_run, latest_comparable
from routing.nights.sections import since_last_night_section, trends_section
from routing.nights.trends import DEFAULT_LAST, trend_data
from routing.report.page import update_report_file


@dataclass(frozen=True)
class NightlyOutcome:
    entry: IndexEntry  # what the index now says about the run
    base: Path | None  # the run compared against (None: no earlier comparable run)
    comparison: Comparison | None
    exit_code: int  # EXIT_OK; EXIT_REGRESSION / EXIT_INCONCLUSIVE when asked for and met
    report_updated: bool  # report.html existed and got the sections
    problems: tuple[str, ...] = ()


def refresh_report(root: Path, run_dir: Path, last: int = DEFAULT_LAST) -> bool:
    """Splice "Since last night" (from ``RUN_DIR/compare.json``, when present) and "Trends" into
    ``RUN_DIR/report.html``."""
    sections: dict[str, str] = {}
    try:
        sections["since-last-night"] = since_last_night_section(
            json.loads((Path(run_dir) / COMPARE_JSON).read_text(encoding="utf-8"))
        )
    except (OSError, ValueError, KeyError, TypeError):
        pass  # no comparison (first night, or unreadable): the section stays empty
    trends = trend_data(Path(root), Path(run_dir), last)
    if trends:
        sections["trends"] = trends_section(trends)
    return update_report_file(Path(run_dir) / "report.html", sections)


def after_run(
    root: Path,
    run_dir: Path,
    *,
    fail_on_regression: float | None = None,
    alpha: float = 0.05,
    last: int = DEFAULT_LAST,
    digest: ScoreDigest | None = None,
    min_drop: float = DEFAULT_MIN_DROP,
    fail_on_inconclusive: bool = False,
    sequential: bool = False,
    reference_nights: int = DEFAULT_REFERENCE_NIGHTS,
) -> NightlyOutcome:
    """Index, compare and annotate one finished run (module docstring). Raises :class:`HistoryError` only
    when ``run_dir`` itself is not a run folder. ``digest``: the run's scores.jsonl read already
    (pool.run reads it while its scoring worker still summarises)."""
    root, run_dir = Path(root), Path(run_dir)
    entry = append_run(root, run_dir, digest)
    problems: list[str] = []
    base = latest_comparable(root, run_dir) if entry.status == "finished" else None
    comparison = None
    if base is not None:
        try:
            comparison = compare_runs(
                base, run_dir, threshold=fail_on_regression or 0.0, alpha=alpha, min_drop=min_drop
            )
            if sequential:
                try:
                    comparison = with_sequential(comparison, root / STATE_FILENAME, reference_nights=reference_nights)
                except SequentialStateError as exc:
                    problems.append(f"sequential gate not advanced: {exc}")
            write_comparison(run_dir, comparison)
        except (HistoryError, LoadError) as exc:
            problems.append(f"not compared with {base}: {exc}")
    updated = refresh_report(root, run_dir, last)
    code = EXIT_OK if comparison is None else comparison.exit_code(fail_on_regression, fail_on_inconclusive)
    return NightlyOutcome(entry, base, comparison, code, updated, tuple(problems))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m routing.nightly",
        description="Index a finished run, compare it with the latest earlier run on the same data "
        "and add 'Since last night' and 'Trends' to its report.html.",
        epilog=f"Exit codes: {EXIT_OK} done; {EXIT_WRITE} writing its files failed; {EXIT_INPUT} bad input; "
        f"{EXIT_REGRESSION} with --fail-on-regression: a significant regression larger than the threshold (or a "
        f"sequential alarm); {EXIT_INCONCLUSIVE} with --fail-on-inconclusive: some model's family is inconclusive.",
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the run directory pool.run wrote")
    parser.add_argument("--root", default="runs", help="runs root holding index.jsonl (default: %(default)s)")
    add_gate_option(
        parser,
        "--fail-on-regression",
        f"exit {EXIT_REGRESSION} when a significant regression is larger than THRESHOLD (default 0)",
    )
    parser.add_argument(
        "--last", type=int, default=DEFAULT_LAST, help="nights in the trend charts (default %(default)s)"
    )
    add_gate_option(
        parser,
        "--min-drop",
        "the drop that matters (0.05 = 5 points): 'no change' only when it could have been seen (default %(default)s)",
    )
    add_gate_option(parser, "--fail-on-inconclusive", INCONCLUSIVE_HELP)
    add_gate_option(parser, "--sequential", f"also advance the sequential gate ({STATE_FILENAME} in --root)")
    add_gate_option(
        parser, "--reference-nights", "with --sequential: nights that form the reference (default %(default)s)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        outcome = after_run(
            Path(args.root),
            Path(args.run_dir),
            fail_on_regression=args.fail_on_regression,
            last=max(1, args.last),
            min_drop=args.min_drop,
            fail_on_inconclusive=args.fail_on_inconclusive,
            sequential=args.sequential,
            reference_nights=max(1, args.reference_nights),
        )
    except (HistoryError, FolderError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as exc:  # e.g. a full disk while appending to index.jsonl or writing compare.md
        print(write_failed("the night's files", exc), file=sys.stderr)
        return EXIT_WRITE
    print(f"indexed {outcome.entry.run_id} in {Path(args.root) / 'index.jsonl'}")
    for problem in outcome.problems:
        print(f"warning: {problem}", file=sys.stderr)
    if outcome.comparison is None:
        print("no earlier finished run on the same data: nothing to compare")
    else:
        print((Path(args.run_dir) / "compare.md").read_text(encoding="utf-8"), end="")
    return outcome.exit_code
