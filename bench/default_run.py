"""Time a newcomer's first command: ``python -m pool.run --orchestration`` on the shipped pool, judge included.

Each measured tree (this checkout, plus with ``--baseline LABEL=DIR`` another copy of the project,
e.g. ``git archive`` of an earlier commit) runs the default command as a user would: a child
process started in that tree, with a fresh response cache and a fresh run folder. The trees run one
after another, not interleaved and not at once, because the local llama.cpp replicas fill every core.

Reported per tree:
- wall time, against the goal of ≤ 10 minutes on 2 cores;
- the answering and judging phases: first start to last finish of the answer and judge rows in the
  run store;
- answer and verdict tokens, and answers cut at their token cap;
- the routing manifest: buckets decided in their own bucket (decisive or by the tie rule), buckets
  with too few items and so served by a parent, and the orchestrator's pick.

    python -m bench.default_run                              # this checkout, ~14 min on 2 idle cores
    python -m bench.default_run --baseline before=/tmp/before --json out.json
    python -m bench.default_run --limit 6                    # a smoke run of the bench itself (~1 min)
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from bench.harness.measure import baseline_tree, write_json_report

REPO_ROOT = Path(__file__).resolve().parent.parent
GOAL_S = 600.0


def phases(run_dir: Path) -> dict[str, Any]:
    """Per phase (answer, judge): rows, completion tokens, truncated answers, first start → last finish."""
    connection = sqlite3.connect(f"file:{run_dir / 'run.sqlite'}?mode=ro", uri=True)
    try:
        rows = connection.execute(
            "SELECT CASE WHEN stage = 'answer' THEN 'answer' ELSE 'judge' END AS phase, COUNT(*),"
            " COALESCE(SUM(completion_tokens), 0), SUM(error_class = 'truncated'), MIN(started_at), MAX(finished_at)"
            " FROM results GROUP BY phase"
        ).fetchall()
    finally:
        connection.close()
    out: dict[str, Any] = {}
    for phase, count, tokens, truncated, started, finished in rows:
        seconds = (datetime.datetime.fromisoformat(finished) - datetime.datetime.fromisoformat(started)).total_seconds()
        out[phase] = {"rows": count, "tokens": tokens, "truncated": truncated or 0, "seconds": round(seconds, 1)}
    return out


def manifest_view(run_dir: Path) -> dict[str, Any]:
    """How many buckets the manifest decides itself, how, and how many a parent serves."""
    path = run_dir / "routing_manifest.yaml"
    if not path.is_file():
        return {}
    manifest = yaml.safe_load(path.read_text(encoding="utf-8"))
    buckets = manifest.get("buckets", {})
    own = [b for b in buckets.values() if b.get("routable")]
    return {
        "buckets": len(buckets),
        "decided_in_bucket": len(own),
        "decisive": sum(bool(b.get("decisive")) for b in own),
        "served_by_parent": sum(not b.get("routable") for b in buckets.values()),
        "orchestrator": (manifest.get("orchestrator") or {}).get("model"),
        "default": (manifest.get("default") or {}).get("model"),
    }


def measure(label: str, tree: Path, work: Path, extra: Sequence[str]) -> dict[str, Any]:
    """One default run of ``tree`` in a child process, with a fresh cache and run folder under ``work``."""
    run_dir, cache = work / label / "run", work / label / "cache"
    env = {**os.environ, "MEDPOOL_CACHE_DIR": str(cache), "PYTHONPATH": str(tree)}
    command = [
        sys.executable,
        "-m",
        "pool.run",
        "--orchestration",
        "--out",
        str(run_dir),
        "--log-interval",
        "60",
        *extra,
    ]
    print(f"{label}: {' '.join(command[1:])} (in {tree})", flush=True)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(f"{label}: pool.run exited {done.returncode}")
    row = {
        "label": label,
        "tree": str(tree),
        "exit_code": done.returncode,
        "wall_s": round(wall, 1),
        "phases": phases(run_dir),
        "manifest": manifest_view(run_dir),
    }
    print(f"  {label}: {wall / 60:.1f} min, exit {done.returncode}", flush=True)
    return row


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| tree | wall | goal | answering | judging | answer tokens (cut) | verdict tokens "
        "| buckets: own / decisive / by parent | orchestrator |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        answer, judge, manifest = row["phases"].get("answer", {}), row["phases"].get("judge", {}), row["manifest"]
        lines.append(
            f"| {row['label']} | {row['wall_s'] / 60:.1f} min | ≤ {GOAL_S / 60:.0f} min "
            f"| {answer.get('seconds', 0) / 60:.1f} min "
            f"| {judge.get('seconds', 0) / 60:.1f} min | {answer.get('tokens', 0):,} ({answer.get('truncated', 0)}) "
            f"| {judge.get('tokens', 0):,} "
            f"| {manifest.get('decided_in_bucket', '-')} / {manifest.get('decisive', '-')} / "
            f"{manifest.get('served_by_parent', '-')} of {manifest.get('buckets', '-')} "
            f"| {manifest.get('orchestrator') or 'none'} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.default_run", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="also time another copy of the project (run first); repeatable",
    )
    parser.add_argument(
        "--limit", type=int, help="pass --limit N to pool.run (a smoke run of this bench, not the measurement)"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the rows and machine details as JSON")
    args = parser.parse_args(argv)
    extra = ["--limit", str(args.limit)] if args.limit else []
    machine = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average": os.getloadavg(),
    }
    started, start = datetime.datetime.now().astimezone(), time.perf_counter()
    print(
        f"default-run bench {started:%Y-%m-%d %H:%M %Z}; {machine['cpus']} cpus, load average "
        f"{machine['load_average'][0]:.2f} at start",
        flush=True,
    )
    trees = [*(baseline_tree(b, "pool/run.py") for b in args.baseline), ("this", REPO_ROOT)]
    with tempfile.TemporaryDirectory(prefix="medpool-default-run-") as tmp:
        rows = [measure(label, tree, Path(tmp), extra) for label, tree in trees]
    print()
    print(format_table(rows))
    total_s = time.perf_counter() - start
    print(f"\ntotal {total_s:.1f} s; load average at the end {os.getloadavg()[0]:.2f}")
    if args.json:
        write_json_report(
            args.json,
            "bench.default_run",
            started,
            quick=bool(args.limit),
            machine=machine,
            total_s=total_s,
            sizes={"limit": args.limit},
            rows=rows,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
