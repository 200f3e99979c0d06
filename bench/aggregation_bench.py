"""Aggregation of a large nightly against reading its data: ``routing.build`` (and ``routing.compare``,
the nightly digest) on 10^6 or 10^7 score rows, as ratios to a plain JSON read of the same
``scores.jsonl``, and their peak memory.

Data: the seeded synthetic nightly of ``bench.routing_bench`` (every family: 10 capability tasks
with judge sub-metrics, 20 specialty domains with safety-floor and claim columns, routing, tool
decision, probes, exam, a 148-class classification task and CHIP cases; ~2% infra errors; models
differ in skill), written as a run folder by a child process: ``scores.jsonl`` + ``summary.json``,
then the columnar copy ``scores.columns/`` as ``pool.run`` writes it (``routing.columns``, timed).
Always 50 models, so ``--rows 10000000`` is 50 models × 200,000 items (4.5 GB of JSONL; the disk
must hold it): the same pool on a ten times larger suite. Pairwise ratings grow with the square of
the models (every pair's outcome on every item), so a pool grows in items long before it grows to
hundreds of models.

Every measured path runs in a fresh child process of this one (``python -m bench.aggregation_bench
--child …``), one after the other on the same files, so all see the same machine and page cache;
each child reports its wall time (``perf_counter``) and its peak resident memory (``VmHWM``:
everything it touched, interpreter and libraries included):

- ``json_read`` — the floor: ``for line in f: json.loads(line)``, nothing kept;
- ``build`` — ``python -m routing.build --run DIR`` with default options, reading the columnar copy;
- ``build_jsonl`` — the same on a folder holding only ``scores.jsonl`` (a run folder written before
  the columns existed: every row parsed and checked);
- ``compare`` — ``python -m routing.compare BASE NEW`` on two such nights (a second seed);
- ``digest`` — the nightly index's read of a run (``routing.load.digest_scores``).

    python -m bench.aggregation_bench                        # 10^6 rows, ~3 min on 2 cores
    python -m bench.aggregation_bench --rows 10000000 --data /big --skip build_jsonl,compare
    python -m bench.aggregation_bench --data /tmp/aggr --skip columns   # the copies written last time
    python -m bench.aggregation_bench --data /tmp/aggr       # keep (and reuse) the generated runs
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

WORKLOADS = ("columns", "json_read", "build", "build_jsonl", "compare", "digest")
MODELS = 50
GOALS = {1_000_000: (3.0, 1024.0), 10_000_000: (None, 2048.0)}  # rows -> (time ratio, peak MB) goals of the build


def _peak_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(workload: str, paths: list[str]) -> dict[str, Any]:
    """Run one workload in this (fresh) process; the parent reads the JSON line it prints."""
    start = time.perf_counter()
    if workload == "generate":
        from bench.routing_bench import synthetic_table, write_scores

        items, seed = int(paths[1]), int(paths[2])
        write_scores(synthetic_table(MODELS, items, seed=seed), Path(paths[0]))
        summary = Path(paths[0]) / "summary.json"
        doc = json.loads(summary.read_text())
        summary.write_text(json.dumps({**doc, "run_id": f"bench-{seed}", "created_at": f"2026-11-{29 + seed:02d}T02:00:00Z"}))
    elif workload == "columns":
        from routing.columns import write_columns

        write_columns(paths[0])
    elif workload == "json_read":
        with open(Path(paths[0]) / "scores.jsonl", encoding="utf-8") as f:
            for line in f:
                json.loads(line)
    elif workload in ("build", "build_jsonl"):
        from routing.build import main

        with open(os.devnull, "w") as sink:
            stdout, sys.stdout = sys.stdout, sink
            try:
                code = main(["--run", paths[0], "--out", paths[1], "--calibrations", paths[1]])
            finally:
                sys.stdout = stdout
        assert code == 0, f"routing.build exited {code}"
    elif workload == "compare":
        from routing.compare import main as compare_main

        with open(os.devnull, "w") as sink:
            stdout, sys.stdout = sys.stdout, sink
            try:
                code = compare_main([paths[0], paths[1], "--out", paths[2]])
            finally:
                sys.stdout = stdout
        assert code == 0, f"routing.compare exited {code}"
    elif workload == "digest":
        from routing.load import digest_scores

        digest_scores(paths[0])
    else:
        raise SystemExit(f"unknown workload {workload!r}")
    return {"seconds": time.perf_counter() - start, "peak_mb": _peak_mb()}


def run_child(workload: str, *paths: Path | str | int) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "bench.aggregation_bench", "--child", workload, *map(str, paths)],
                          check=True, stdout=subprocess.PIPE, text=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def prepare(data: Path, rows: int, nights: int) -> list[Path]:
    """Run folders night-0 (and night-1 for compare), generated once and reused; each with its columnar copy."""
    items = rows // MODELS
    runs = []
    for seed in range(nights):
        run = data / f"night-{seed}"
        if not (run / "summary.json").is_file() or not (run / "scores.jsonl").is_file():
            run.mkdir(parents=True, exist_ok=True)
            print(f"generating {run} ({MODELS} models × {items:,} items) …", file=sys.stderr, flush=True)
            run_child("generate", run, items, seed)
        runs.append(run)
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.aggregation_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="score rows per night, 50 models × rows/50 items (default 10^6)")
    parser.add_argument("--data", type=Path, help="folder for the generated runs, kept and reused (default: a temporary one)")
    parser.add_argument("--skip", default="", help=f"comma-separated workloads to leave out ({', '.join(WORKLOADS)})")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1:])))
        return 0
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    temporary = None if args.data else tempfile.TemporaryDirectory(prefix="aggregation-bench-")
    data = args.data or Path(temporary.name)  # type: ignore[union-attr]
    try:
        runs = prepare(data, args.rows, 2 if "compare" not in skip else 1)
        rows: list[dict[str, Any]] = []
        if "columns" not in skip:  # skipped: the runs keep the copy an earlier round wrote
            columns = run_child("columns", runs[0])
            rows.append({"workload": "columns", "what": "write scores.columns/ from scores.jsonl (once, by pool.run)", **columns})
            if "compare" not in skip:
                run_child("columns", runs[1])
        plain = data / "jsonl-only"
        if "build_jsonl" not in skip:
            plain.mkdir(exist_ok=True)
            for name in ("scores.jsonl", "summary.json"):
                if not (plain / name).exists():
                    (plain / name).symlink_to(runs[0] / name)
        out = data / "out"
        out.mkdir(exist_ok=True)
        baseline = run_child("json_read", runs[0])
        rows.append({"workload": "json_read", "what": "json.loads of every scores.jsonl line (the floor)", **baseline})
        plan = {"build": ("routing.build, reading the columnar copy", (runs[0], out)),
                "build_jsonl": ("routing.build on scores.jsonl alone (an old run folder)", (plain, data / "out-jsonl")),
                "compare": ("routing.compare of two such nights", (runs[0], runs[1] if len(runs) > 1 else runs[0], data / "out-compare")),
                "digest": ("the nightly index's digest of the run", (runs[0],))}  # fmt: skip
        for name, (what, paths) in plan.items():
            if name in skip:
                continue
            for path in paths[1:]:
                if isinstance(path, Path) and path.name.startswith("out"):
                    path.mkdir(exist_ok=True)
            rows.append({"workload": name, "what": what, **run_child(name, *paths)})
    finally:
        if temporary is not None:
            temporary.cleanup()
    size = f"{args.rows:,} rows ({MODELS} models × {args.rows // MODELS:,} items)"
    print(f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores; {size}")
    ratio_goal, peak_goal = GOALS.get(args.rows, (None, None))
    print(f"goals for the build: time ≤ {ratio_goal or '–'}× json_read, peak ≤ {peak_goal or '–'} MB")
    print("| workload | what | time (s) | × json_read | peak (MB) |")
    print("|---|---|---:|---:|---:|")
    for r in rows:
        r["ratio"] = r["seconds"] / baseline["seconds"]
        print(f"| {r['workload']} | {r['what']} | {r['seconds']:.1f} | {r['ratio']:.2f} | {r['peak_mb']:.0f} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": args.rows, "results": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
