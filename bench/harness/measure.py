"""Measuring helpers shared by the benchmarks: traced peak memory, the ``--json`` report, and another copy of
the tree as a baseline."""

from __future__ import annotations

import datetime
import gc
import json
import sys
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def peak_mb(run: Callable[[], Any]) -> float:
    """Peak traced allocation, in MiB, while run() executes (its result is held until the end)."""
    gc.collect()
    tracemalloc.start()
    try:
        result = run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return peak / 2**20


def write_json_report(
    path: str,
    module: str,
    started: datetime.datetime,
    *,
    quick: bool,
    machine: dict[str, Any],
    total_s: float,
    sizes: dict[str, Any],
    rows: Sequence[dict[str, Any]],
) -> None:
    """The ``--json`` file: when, the exact command, the machine, sizes and every table row."""
    report = {
        "date": started.isoformat(timespec="seconds"),
        "command": " ".join([f"python -m {module}", *sys.argv[1:]]),
        "quick": quick,
        "machine": machine,
        "total_s": total_s,
        "sizes": sizes,
        "rows": list(rows),
    }
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(report, handle, ensure_ascii=False, indent=2)
    print(f"wrote {path}")


def baseline_tree(text: str, needs: str) -> tuple[str, Path]:
    """``--baseline LABEL=DIR``: the label (shown as ``[LABEL]``, so without ``]``) and the resolved
    folder, which must hold ``needs`` (a path inside a copy of the project)."""
    label, sep, folder = text.partition("=")
    tree = Path(folder).resolve()
    if not sep or not label or "]" in label or not (tree / needs).is_file():
        raise SystemExit(f"--baseline {text}: expected LABEL=DIR, DIR a copy of the project with {needs}")
    return label, tree
