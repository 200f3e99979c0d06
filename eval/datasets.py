"""Summarise evaluation suites: ``python -m eval.datasets [PATH ...]``.

Loads every item under the given files and folders (the built-in demo suite when none is given)
and prints a JSON summary: item and scorable counts; counts by suite, track, task (``suite/task``),
gold type and domain (``(none)`` when an item has no domain); and every skipped item or file with
the reason. Exit status: 0 on success, 2 when a file is broken or a path is missing (the message,
naming path:line and the field, goes to stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from eval.loaders import ItemFormatError, LoadResult, load_demo_suite, load_items

NO_DOMAIN = "(none)"


def _counts(values: Iterable[str]) -> dict[str, int]:
    return dict(sorted(Counter(values).items()))


def summarise(result: LoadResult, sources: Sequence[str]) -> dict[str, Any]:
    """The summary as a JSON-ready dict (counts sorted by key, skips in load order)."""
    items = result.items
    return {
        "sources": list(sources),
        "items": len(items),
        "scorable": len(result.scorable_items),
        "by_suite": _counts(item.suite for item in items),
        "by_track": _counts(item.track for item in items),
        "by_task": _counts(f"{item.suite}/{item.task}" for item in items),
        "by_gold_type": _counts(item.gold_type for item in items),
        "by_domain": _counts(item.domain or NO_DOMAIN for item in items),
        "skipped_reasons": _counts(skip.reason for skip in result.skipped),
        "skipped": [
            {"id": skip.id, "source": skip.source, "reason": skip.reason}
            if skip.id
            else {"source": skip.source, "reason": skip.reason}
            for skip in result.skipped
        ],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.datasets",
        description="Load evaluation suites and print a JSON summary (counts by suite, track, task, gold type, "
        "domain; scorable items; skipped items and files with the reason). Exit 2 on a broken file.",
    )
    parser.add_argument(
        "paths", nargs="*", type=Path, metavar="PATH", help="suite files or folders (default: the built-in demo suite)"
    )
    parser.add_argument("--compact", action="store_true", help="print the JSON on one line")
    args = parser.parse_args(argv)
    try:
        result = load_items(args.paths) if args.paths else load_demo_suite()
    except ItemFormatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sources = [str(path) for path in args.paths] or ["(built-in demo suite)"]
    print(json.dumps(summarise(result, sources), ensure_ascii=False, indent=None if args.compact else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
