"""``python -m pool.check``: the zero-budget gate to pass before a paid run (see :mod:`pool.check`).

Prints one line per check (PASS / FAIL / SKIP, and what to do on a failure). Exit codes: 0 every
check passed (or was skipped by ``--no-smoke``); 1 a check failed; 2 bad input (a missing file, an
unknown model, a bad flag); 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pool.check import CheckInputError, CheckSpec, Outcome, exit_code, gate
from pool.run_spec import DEFAULT_POOL

EXIT_INPUT, EXIT_INTERRUPTED = 2, 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pool.check",
        description="The gate before a paid run, spending no judge budget: the suites load, the scorer and judge "
        "registries cover them, items round-trip through the loader, the pool file validates, its keys "
        "and model files are there, the judge is declared, and one item per track sent to every "
        "selected model comes back answered (the judge is never called).",
        epilog="Exit codes: 0 every check passed; 1 a check failed (its line says what to do); 2 bad input; "
        "130 interrupted.",
    )
    parser.add_argument("--pool", default=DEFAULT_POOL, help=f"pool file (default: ./{DEFAULT_POOL})")
    parser.add_argument(
        "--data", nargs="+", metavar="PATH", help="item files or folders (default: the built-in demo suite)"
    )
    parser.add_argument("--models", help="comma-separated model names to check (default: every enabled model)")
    parser.add_argument("--no-smoke", action="store_true", help="send nothing: only the static checks")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    names = [n.strip() for n in args.models.split(",") if n.strip()] if args.models is not None else None
    if names == []:
        print(
            "error: --models is empty; name at least one model, or drop --models for every enabled one", file=sys.stderr
        )
        return EXIT_INPUT
    spec = CheckSpec(
        pool=Path(args.pool),
        data=[Path(p) for p in args.data] if args.data else None,
        models=names,
        smoke=not args.no_smoke,
    )
    outcomes: list[Outcome] = []
    try:
        for outcome in gate(spec):
            outcomes.append(outcome)
            print("\n".join(outcome.lines()), flush=True)
    except CheckInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("interrupted; nothing was judged", file=sys.stderr)
        return EXIT_INTERRUPTED
    code = exit_code(outcomes)
    failures = sum(o.status == "FAIL" for o in outcomes)
    print("gate: all checks passed" if code == 0 else f"gate: {failures} check(s) failed; fix them before a paid run")
    return code


if __name__ == "__main__":
    sys.exit(main())
