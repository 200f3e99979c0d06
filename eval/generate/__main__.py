"""``python -m eval.generate``: write the probe set or the tool-decision set.

    python -m eval.generate probes --out DIR [--criteria PATH...] [--false-premises N]
    python -m eval.generate tool-decision --out FILE

``probes`` writes ``DIR/nonexistent.yaml`` (invented drugs, diseases and guidelines; verified) and
``DIR/false_premise.yaml`` (warnings from the criteria items of PATH — default: the built-in demo
suite — presented as unnecessary; needs_review). ``tool-decision`` writes 15 call and 15 direct
items. The task of each file is its name, so keep the names when moving them. Running a command
twice gives the same bytes. Exit 0 on success, 2 on bad input, 1 when a file cannot be written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from eval.generate.probes import DEFAULT_FALSE_PREMISES, false_premise_probes, nonexistent_probes, warning_sources
from eval.generate.tool_decision import tool_decision_items
from eval.generate.writing import write
from eval.loaders import DuplicateItemError, ItemFormatError, LoadResult, load_demo_suite, load_items


class InputError(ValueError):
    """Bad input named for the user (exit 2)."""


def _criteria(paths: Sequence[str]) -> LoadResult:
    if not paths:
        return load_demo_suite()
    missing = [path for path in paths if not Path(path).exists()]
    if missing:
        raise InputError(f"--criteria: no such file or folder: {', '.join(missing)}")
    return load_items([Path(path) for path in paths])


def write_probes(out: Path, criteria: Sequence[str], limit: int) -> list[tuple[Path, int]]:
    """Both probe files into ``out``; (path, count) per file."""
    sources = warning_sources(_criteria(criteria).items, limit)
    if not sources:
        where = " ".join(criteria) or "the built-in demo suite"
        raise InputError(
            f"--criteria {where}: no criteria item with a must_warn list to invert; "
            "pass a criteria-gold YAML (questions with must_warn)"
        )
    origin = list(criteria) or "built-in demo suite"
    command = "python -m eval.generate probes"
    sets = (
        ("nonexistent", nonexistent_probes(), "invented drugs, diseases and guidelines; verified by construction"),
        (
            "false_premise",
            false_premise_probes(sources),
            "needed warnings presented as unnecessary; needs_review until a person confirms each",
        ),
    )
    written = []
    for kind, probes, note in sets:
        document = {"probe_kind": kind, "count": len(probes), "note": note}
        if kind == "false_premise":
            document["criteria"] = origin
        document["probes"] = probes
        path = out / f"{kind}.yaml"
        write(path, document, command)
        written.append((path, len(probes)))
    return written


def write_tool_decision(out: Path) -> tuple[Path, int, int]:
    items = tool_decision_items()
    calls = sum(item["expected_action"] == "call" for item in items)
    document = {
        "metric": "tool invocation awareness (symmetric accuracy)",
        "count": len(items),
        "n_call": calls,
        "n_direct": len(items) - calls,
        "items": items,
    }
    write(out, document, "python -m eval.generate tool-decision")
    return out, calls, len(items) - calls


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.generate",
        description="Write the hallucination-probe set or the tool-decision set, deterministically and without a "
        "judge, in the formats medpool's loaders read. Exit 0 on success, 2 on bad input, 1 when writing fails.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{probes,tool-decision}")
    probes = commands.add_parser(
        "probes",
        help="DIR/nonexistent.yaml and DIR/false_premise.yaml",
        description="Invented-entity probes (verified) and inverted-warning probes from "
        "criteria golds' must_warn (needs_review).",
    )
    probes.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder for the two probe files")
    probes.add_argument(
        "--criteria",
        nargs="+",
        default=[],
        metavar="PATH",
        help="criteria-gold files or folders to take warnings from (default: the built-in demo suite)",
    )
    probes.add_argument(
        "--false-premises",
        type=int,
        default=DEFAULT_FALSE_PREMISES,
        metavar="N",
        help=f"at most N false-premise probes, spread over body systems (default {DEFAULT_FALSE_PREMISES})",
    )
    tools = commands.add_parser(
        "tool-decision",
        help="FILE with 15 call and 15 direct items",
        description="Tool-decision items built from invented hospital APIs: 15 call, 15 direct.",
    )
    tools.add_argument(
        "--out", type=Path, required=True, metavar="FILE", help="the YAML file to write (its stem is the task)"
    )
    args = parser.parse_args(argv)
    try:
        if args.command == "probes":
            if args.false_premises < 1:
                raise InputError(f"--false-premises must be >= 1, got {args.false_premises}")
            for path, count in write_probes(args.out, args.criteria, args.false_premises):
                print(f"{path}: {count} probes")
        else:
            path, calls, directs = write_tool_decision(args.out)
            print(f"{path}: {calls} call + {directs} direct items")
    except (InputError, ItemFormatError, DuplicateItemError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot write {args.out}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
