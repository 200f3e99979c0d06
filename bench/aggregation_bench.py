"""Aggregation of a large nightly against reading its data: ``routing.build`` (and ``routing.compare``,
the nightly digest) on 10^6 or 10^7 score rows, as ratios to a plain JSON read of the same
``scores.jsonl``, and their peak memory.

Data (``--mix judged``, the default): a night with the judged share a real one has
(``bench.harness.judged_mix``): 35% of the items judged, the capability family by one judge and the
specialty family by a three-member panel, every judged row with the judge's identity, dimensions,
verdict details and the panel's votes; the other families judge-free (routing, tool decision,
probes, exam, a 148-class classification task and CHIP cases); ~2% infra errors; models differ in
skill. ``--mix plain``: the seeded synthetic nightly of ``bench.routing_bench`` without a judged row.
Written as a run folder by a child process: ``scores.jsonl`` + ``summary.json``,
then the columnar copy ``scores.columns/`` as ``pool.run`` writes it (``routing.load.columns``, timed).
Always 50 models, so ``--rows 10000000`` is 50 models × 200,000 items (4.5 GB of JSONL; the disk
must hold it): the same pool on a ten times larger suite. Pairwise ratings grow with the square of
the models (every pair's outcome on every item), so a pool grows in items long before it grows to
hundreds of models.

Every measured path runs in a fresh child process of this one (``python -m bench.aggregation_bench
--child …``), one after the other on the same files, so all see the same machine and page cache;
each child reports its wall time (``perf_counter``) and its peak resident memory (``VmHWM``:
everything it touched, interpreter and libraries included) plus the peak of the process a build
forks for its routing validation (``routing.stats.forked``; an upper bound: the two share the table's pages),
and the peak of the tree's proportional set size (PSS, shared pages counted once), sampled every 0.2 s:

- ``json_read`` — the floor: ``for line in f: json.loads(line)``, nothing kept;
- ``build`` — ``python -m routing.build --run DIR`` with default options, reading the columnar copy;
- ``build_jsonl`` — the same on a folder holding only ``scores.jsonl`` (a run folder written before
  the columns existed: every row parsed and checked);
- ``compare`` — ``python -m routing.compare BASE NEW`` on two such nights (a second seed);
- ``digest`` — the nightly index's read of a run (``routing.load.runs.digest_scores``).

A shared machine's speed drifts by tens of percent from one minute to the next, so every workload
runs ``--repeat`` times (default 3), the rounds interleaved (json_read, build, …, json_read, …):
the table shows each workload's best time, its ratio to the best JSON read, and the ratio within
each round; the peak is the largest of the rounds.

    python -m bench.aggregation_bench                        # 10^6 rows, judged mix, ~10 min on 2 cores
    python -m bench.aggregation_bench --rows 10000000 --data /big --skip build_jsonl,compare --repeat 1
    python -m bench.aggregation_bench --data /tmp/aggr --skip columns   # the copies written last time
    python -m bench.aggregation_bench --data /tmp/aggr       # keep (and reuse) the generated runs
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
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


def _pss_kb(pid: int | str) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
            return next((int(line.split()[1]) for line in f if line.startswith("Pss:")), 0)
    except OSError:  # the process ended between listing and reading
        return 0


def _children(pid: int) -> list[str]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(entry)
            except (OSError, IndexError, ValueError):
                continue
    return out


class TreePss:
    """The largest proportional set size of this process and its children, sampled every
    ``interval`` s: shared pages counted once across the tree (what the machine really holds)."""

    def __init__(self, interval: float = 0.2) -> None:
        self.peak_kb, self._stop = 0, threading.Event()
        self._thread = threading.Thread(target=self._run, args=(interval,), daemon=True)
        self._thread.start()

    def _run(self, interval: float) -> None:
        me = os.getpid()
        while not self._stop.wait(interval):
            self.peak_kb = max(self.peak_kb, _pss_kb(me) + sum(_pss_kb(c) for c in _children(me)))

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak_kb / 1024


def child(workload: str, paths: list[str]) -> dict[str, Any]:
    """Run one workload in this (fresh) process; the parent reads the JSON line it prints."""
    tree = TreePss()
    start = time.perf_counter()
    if workload == "generate":
        from bench.harness.judged_mix import JUDGED_LAYOUT, write_judged_scores
        from bench.routing_bench import synthetic_table, write_scores

        items, seed, mix = int(paths[1]), int(paths[2]), paths[3]
        if mix == "judged":
            write_judged_scores(synthetic_table(MODELS, items, seed=seed, families=JUDGED_LAYOUT), Path(paths[0]), seed)
        else:
            write_scores(synthetic_table(MODELS, items, seed=seed), Path(paths[0]))
        summary = {
            "run_id": f"bench-{seed}",
            "created_at": f"2026-11-{29 + seed:02d}T02:00:00Z",
            "pool_fingerprint": "bench",
            "data_fingerprint": "bench",
        }
        (Path(paths[0]) / "summary.json").write_text(json.dumps(summary))
    elif workload == "columns":
        from routing.load.columns import write_columns

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
        from routing.nights.compare import main as compare_main

        with open(os.devnull, "w") as sink:
            stdout, sys.stdout = sys.stdout, sink
            try:
                code = compare_main([paths[0], paths[1], "--out", paths[2]])
            finally:
                sys.stdout = stdout
        assert code == 0, f"routing.compare exited {code}"
    elif workload == "digest":
        from routing.load.runs import digest_scores

        digest_scores(paths[0])
    else:
        raise SystemExit(f"unknown workload {workload!r}")
    # A build computes its routing validation in a forked child (routing.stats.forked): its peak counts too. The
    # sum over-counts the table's pages, which the two share, so it is an upper bound of the tree's memory.
    # The tree's sampled PSS counts those pages once: the memory the machine held (sampling may miss a spike
    # shorter than its interval; the bound above cannot).
    seconds = time.perf_counter() - start
    child_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    own = _peak_mb()
    return {
        "seconds": seconds,
        "peak_mb": own + child_mb,
        "own_peak_mb": own,
        "child_peak_mb": child_mb,
        "tree_pss_mb": tree.stop(),
    }


def run_child(workload: str, *paths: Path | str | int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.aggregation_bench", "--child", workload, *map(str, paths)],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def prepare(data: Path, rows: int, nights: int, mix: str) -> list[Path]:
    """Run folders ``<mix>-night-0`` (``-1`` for compare), generated once and reused; each with its columnar copy."""
    items = rows // MODELS
    runs = []
    for seed in range(nights):
        run = data / f"{mix}-night-{seed}"
        if not (run / "summary.json").is_file() or not (run / "scores.jsonl").is_file():
            run.mkdir(parents=True, exist_ok=True)
            print(f"generating {run} ({MODELS} models × {items:,} items) …", file=sys.stderr, flush=True)
            run_child("generate", run, items, seed, mix)
        runs.append(run)
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.aggregation_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rows", type=int, default=1_000_000, help="score rows per night, 50 models × rows/50 items (default 10^6)"
    )
    parser.add_argument(
        "--data", type=Path, help="folder for the generated runs, kept and reused (default: a temporary one)"
    )
    parser.add_argument(
        "--mix",
        choices=("judged", "plain"),
        default="judged",
        help="judged: 35%% of the items judged, with a panel (bench.harness.judged_mix; default); plain: no judged row",
    )
    parser.add_argument("--skip", default="", help=f"comma-separated workloads to leave out ({', '.join(WORKLOADS)})")
    parser.add_argument(
        "--repeat", type=int, default=3, help="interleaved rounds of every workload; the best time counts (default 3)"
    )
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
        runs = prepare(data, args.rows, 2 if "compare" not in skip else 1, args.mix)
        rows: list[dict[str, Any]] = []
        if "columns" not in skip:  # skipped: the runs keep the copy an earlier round wrote
            columns = run_child("columns", runs[0])
            rows.append(
                {
                    "workload": "columns",
                    "what": "write scores.columns/ from scores.jsonl (once, by pool.run)",
                    **columns,
                }
            )
            if "compare" not in skip:
                run_child("columns", runs[1])
        plain = data / f"{args.mix}-jsonl-only"
        if "build_jsonl" not in skip:
            plain.mkdir(exist_ok=True)
            for name in ("scores.jsonl", "summary.json"):
                if not (plain / name).exists():
                    (plain / name).symlink_to(runs[0] / name)
        out = data / "out"
        out.mkdir(exist_ok=True)
        plan = {
            "json_read": ("json.loads of every scores.jsonl line (the floor)", (runs[0],)),
            "build": ("routing.build, reading the columnar copy", (runs[0], out)),
            "build_jsonl": ("routing.build on scores.jsonl alone (an old run folder)", (plain, data / "out-jsonl")),
            "compare": (
                "routing.compare of two such nights",
                (runs[0], runs[1] if len(runs) > 1 else runs[0], data / "out-compare"),
            ),
            "digest": ("the nightly index's digest of the run", (runs[0],)),
        }
        measured: dict[str, list[dict[str, Any]]] = {name: [] for name in plan if name not in skip}
        for round_no in range(args.repeat):  # rounds interleave the workloads, so a busy minute hits all of them
            for name, runs_of in measured.items():
                for path in plan[name][1][1:]:
                    if isinstance(path, Path) and path.name.startswith("out"):
                        path.mkdir(exist_ok=True)
                runs_of.append(run_child(name, *plan[name][1]))
                done = runs_of[-1]
                print(
                    f"round {round_no + 1}: {name} {done['seconds']:.1f} s, peak {done['peak_mb']:.0f} MB "
                    f"(tree PSS {done['tree_pss_mb']:.0f} MB)",
                    file=sys.stderr,
                    flush=True,
                )
        for name, runs_of in measured.items():
            rows.append(
                {
                    "workload": name,
                    "what": plan[name][0],
                    "seconds": min(r["seconds"] for r in runs_of),
                    "peak_mb": max(r["peak_mb"] for r in runs_of),
                    "rounds": [r["seconds"] for r in runs_of],
                    "own_peak_mb": max(r["own_peak_mb"] for r in runs_of),
                    "child_peak_mb": max(r["child_peak_mb"] for r in runs_of),
                    "tree_pss_mb": max(r["tree_pss_mb"] for r in runs_of),
                }
            )
    finally:
        if temporary is not None:
            temporary.cleanup()
    size = f"{args.rows:,} rows ({MODELS} models × {args.rows // MODELS:,} items), {args.mix} mix"
    print(f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores; {size}")
    ratio_goal, peak_goal = GOALS.get(args.rows, (None, None))
    print(
        f"goals for the build: time ≤ {ratio_goal or '–'}× json_read, peak ≤ {peak_goal or '–'} MB; "
        f"best of {args.repeat} interleaved round(s), each round's ratio beside"
    )
    print(
        "| workload | what | time (s), best | × json_read, best | × json_read by round "
        "| peak RSS (MB): process + forked child | tree PSS peak (MB, sampled) |"
    )
    print("|---|---|---:|---:|---|---:|---:|")
    floor = next((r for r in rows if r["workload"] == "json_read"), None)
    for r in rows:
        r["ratio"] = r["seconds"] / floor["seconds"] if floor else float("nan")
        by_round = (
            " / ".join(f"{t / base:.2f}" for t, base in zip(r["rounds"], floor["rounds"], strict=False))
            if floor and "rounds" in r
            else "–"
        )
        peak = f"{r['peak_mb']:.0f}" + (
            f" ({r['own_peak_mb']:.0f} + {r['child_peak_mb']:.0f})" if r.get("child_peak_mb") else ""
        )
        print(
            f"| {r['workload']} | {r['what']} | {r['seconds']:.1f} | {r['ratio']:.2f} | {by_round} | {peak} "
            f"| {r['tree_pss_mb']:.0f} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": args.rows, "results": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
