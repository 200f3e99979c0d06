"""Benchmark the whole ``pool.run`` driver against a bare aiohttp loop, and its peak memory.

With an executor spread over a cluster, the single driver process still loads the plan, commits
every result, scores and exports; its CPU per unit bounds the whole run. So this bench times the
WHOLE run — ``run_pool(RunSpec(...))`` through the Python API: load the suite, plan, schedule,
store (one SQLite transaction per result), response cache, score, export and, on the routing rows,
the routing build — against the floor: a bare aiohttp loop posting the same payloads at the same
concurrency and ``json.loads``-ing each body.

Everything runs in one process tree: this process starts the fake OpenAI-compatible server
(``tests.fakes.serve_openai``, its own process and core) and then each measured path in a fresh
child process (``python -m bench.driver_bench --child …``), interleaved, so both see the same
machine. A child times only its own work (``perf_counter`` wall, ``process_time`` CPU — the
imports and, for the bare and runner loops, loading the pool file and suite are left out (their
requests are built inside the loop, as a run builds its jobs); the pool's arrival-scoring
worker, a process of its own, is reported in a column of its own) and reports its peak resident
memory (``VmHWM``: Python objects, SQLite's page cache and the interpreter itself).

Workload: a synthetic JSONL suite of ``--items-per-model`` single-choice items (judge-free
scoring) × as many models (all on one backend, one lane) as ``units`` needs, so the units grow
while the items stay the same — memory should be flat in the number of units. Every run gets a
fresh run folder, alone in its own parent folder (so the nightly index and comparison ``pool.run``
does after every run sees a first night, whatever ran before), and a fresh, empty response cache.

Tables: the driver alone — the Scheduler over an executor that answers at once (no HTTP), the
per-result cost that bounds a Ray cluster's single driver (best CPU of 3 runs); the HTTP path alone —
the bare loop's workers calling the pool's runner (``runner``), so the pool's gap splits into what
its HTTP path costs and what the rest of the run costs; throughput at
concurrency 256 / 0 ms latency and 64 / 100 ms (``ratio = pool units/s / bare
units/s``; goals ≥ 0.80 and ≥ 0.95), with and without the routing build; peak RSS of the pool run
(``no_routing``, 256 / 0 ms) at 20k and 100k units (and 5k without ``--quick``), goal ≤ 100 MB at 20k
and flat: the peak at 100k within ±10% of the peak at 20k (the ``flat`` rows), each beside the bare
loop's run of the same units (its peak, and CPU per unit at 0 ms beside the pool's).

``--baseline LABEL=DIR`` adds the pool rows of another copy of the project (``git archive`` of an
earlier commit, say), interleaved with this checkout's, so a change is measured against its
baseline in the same process tree and the same minutes of a shared machine. Its children run
DIR's own ``bench/driver_bench.py``: copy this file into an older tree first.

    python -m bench.driver_bench                      # 20,000 units; ~30 min on a busy 2-core machine
    python -m bench.driver_bench --only driver        # the driver alone, ~1 min
    python -m bench.driver_bench --quick              # 5,000-unit throughput rows, memory at 20k/100k
    python -m bench.driver_bench --only memory        # peak RSS at 5k/20k/100k and the flat check, ~5 min
    python -m bench.driver_bench --baseline before=/tmp/before   # before/after rows side by side
    python -m bench.driver_bench --profile /tmp/prof  # also cProfile one pool run (stats in that folder)
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import io
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness.measure import baseline_tree, write_json_report

# Children import only what their path needs (pool.api, or aiohttp and the payload builder), so
# their start RSS is not inflated by the parent's imports; the fake server comes from
# bench.harness.upstream, imported by the parent only.
REPO_ROOT = Path(__file__).resolve().parent.parent
TOPICS = ("hypertension", "type 2 diabetes", "asthma", "anaemia", "migraine", "gout", "pneumonia", "sepsis")

CONFIGS = ((256, 0.0, 0.80), (64, 0.1, 0.95))  # (concurrency, latency s, throughput goal)
DRIVER_WAVE = 64  # --only driver: answers that arrive together (an executor awaits their commits per wave)
MEMORY_GOAL_MB, MEMORY_GOAL_UNITS = 100.0, 20_000
FLAT_UNITS, FLAT_TOLERANCE = 100_000, 0.10  # the peak at FLAT_UNITS is within ±10% of the one at MEMORY_GOAL_UNITS
DOMAINS = ("cardiology:hypertension", "endocrinology:diabetes", "respiratory:asthma", "neurology:migraine")


@dataclass(frozen=True)
class Measured:
    """One child's report."""

    path: str  # "bare" | "pool" | "pool+routing"
    units: int
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    start_rss_mb: float  # after imports, before the measured work
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.units / self.wall_s

    @property
    def cpu_ms_per_unit(self) -> float:
        return 1e3 * self.cpu_s / self.units

    @property
    def worker_cpu_ms_per_unit(self) -> float:
        """The arrival-scoring worker's CPU (0 for paths and trees without one)."""
        return 1e3 * self.detail.get("worker_cpu_s", 0.0) / self.units


# -- the workload -----------------------------------------------------------------------------


def write_suite(path: Path, n_items: int) -> Path:
    """``n_items`` distinct single-choice items in medpool's JSONL format (no judge needed)."""
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n_items):
            topic = TOPICS[i % len(TOPICS)]
            item = {
                "id": f"q{i:06d}",
                "task": "single_choice",
                "track": "exam",
                "gold_type": "single_choice",
                "question": f"Which is the first-line treatment of {topic}? (case {i})",
                "options": [["A", f"drug {i} a"], ["B", f"drug {i} b"], ["C", f"drug {i} c"], ["D", f"drug {i} d"]],
                "gold": "ABCD"[i % 4],
                "domain": DOMAINS[i % len(DOMAINS)],
            }
            handle.write(json.dumps(item) + "\n")
    return path


def write_pool(path: Path, base_url: str, concurrency: int, n_models: int) -> Path:
    models = "".join(f"  - name: m{k:03d}\n    backend: fake\n    model: fake-{k:03d}\n" for k in range(n_models))
    path.write_text(
        f"backends:\n  fake:\n    type: openai\n    base_url: {base_url}\n    max_concurrency: {concurrency}\n"
        f"defaults:\n  max_tokens: 256\nmodels:\n{models}",
        encoding="utf-8",
    )
    return path


# -- children -----------------------------------------------------------------------------------


def _status_mb(field_name: str) -> float:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_pool(args: argparse.Namespace) -> dict[str, Any]:
    """The whole run through the Python API, as a user's script would call it."""
    from pool import RunSpec, run_pool

    spec = RunSpec(
        pool=args.pool,
        data=[args.suite],
        out=args.out,
        no_routing=not args.routing,
        cache_dir=args.cache_dir,
        log_interval=3600.0,
    )
    start_rss = _status_mb("VmRSS")
    profile = None
    if args.profile:
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
    wall, cpu = time.perf_counter(), time.process_time()
    children = _cpu_s(resource.getrusage(resource.RUSAGE_CHILDREN))
    result = run_pool(spec)
    wall_s, cpu_s = time.perf_counter() - wall, time.process_time() - cpu
    if profile is not None:
        profile.disable()
        profile.dump_stats(args.profile)
    # The arrival-scoring worker (pool.score.arrival) is a child: its CPU is reported beside the driver's.
    worker = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "wall_s": wall_s,
        "cpu_s": cpu_s,
        "peak_rss_mb": _status_mb("VmHWM"),
        "start_rss_mb": start_rss,
        "detail": {
            "exit_code": result.exit_code,
            "counts": result.counts,
            "worker_cpu_s": _cpu_s(worker) - children,
            "worker_peak_rss_mb": worker.ru_maxrss / 1024,
        },
    }


def _cpu_s(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


async def _send_through_a_session(out: Path, store: Any, cache: Any, progress: Any, executor: Any, jobs: Any) -> Any:
    """The jobs through a run session whose executor answers every job at once (no backend opened)."""
    from pool.config import parse_pool
    from pool.execute.session import Session

    config = parse_pool(
        "backends:\n  fake:\n    type: openai\n    base_url: http://127.0.0.1:8000/v1\n"
        "models:\n  - {name: m, backend: fake}\n",
        "<driver bench>",
    )
    async with Session.open(
        config, (), out, run_id="run", store=store, cache=cache, executor=executor, progress=progress
    ) as session:
        return await session.send({"fake": jobs})


def child_driver(args: argparse.Namespace) -> dict[str, Any]:
    """The driver alone: the Scheduler over an executor that answers every job at once (no HTTP),
    so what is timed is what the driver pays per result whatever executes the calls — the cache
    lookup and write, the request serialisation and key, the store transaction, the progress."""
    from pool.execute.executor import Job
    from pool.execute.progress import ProgressDisplay
    from pool.execute.response_cache import ResponseCache
    from pool.store.outcome import Unit
    from pool.store.run_store import RunStore
    from runners.base import (
        Attempt,
        GenerationParams,
        GenerationRequest,
        GenerationResponse,
    )

    class InstantExecutor:
        """Answers a lane's jobs at once, a wave of ``DRIVER_WAVE`` at a time (one lane's concurrency
        answering together), and waits for each wave's commits, as a real executor does."""

        async def run(self, jobs_by_lane: Any, on_result: Any, settle_locally: Any) -> None:
            for jobs in jobs_by_lane.values():
                wave: list[Any] = []
                for job in jobs:
                    if not settle_locally(job):
                        text = "echo: " + job.request.messages[-1]["content"]
                        wave.append(
                            on_result(
                                job, GenerationResponse(text, "stop", 40, 30, 0.01, (Attempt(1, 200, None, 0.01),))
                            )
                        )
                    if len(wave) >= DRIVER_WAVE:
                        await asyncio.gather(*(c for c in wave if c is not None))
                        wave = []
                await asyncio.gather(*(c for c in wave if c is not None))

    params = GenerationParams(max_tokens=256)
    units = [(f"m{i // args.items:03d}", f"bench/exam/q{i % args.items:06d}") for i in range(args.driver_units)]

    def jobs() -> Any:
        for i, (model, item) in enumerate(units):
            question = f"Which is the first-line treatment of {TOPICS[i % len(TOPICS)]}? ({item})"
            request = GenerationRequest(
                f"fake-{model}", messages=({"role": "user", "content": question},), params=params
            )
            yield Job(Unit(model, item), request, "openai", "http://127.0.0.1:8000/v1")

    out = Path(args.out)
    with RunStore(out / "run") as store, ResponseCache(out / "cache", write_behind=True) as cache:  # as a run opens it
        store.begin_run("run", pool_fingerprint="bench", data_fingerprint="bench", options={})
        store.save_plan("run", (Unit(model, item) for model, item in units))
        progress = ProgressDisplay(Counter(model for model, _ in units), stream=io.StringIO(), interactive=False)
        start_rss = _status_mb("VmRSS")
        wall, cpu = time.perf_counter(), time.process_time()
        counters = asyncio.run(_send_through_a_session(out, store, cache, progress, InstantExecutor(), jobs()))
        wall_s, cpu_s = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "wall_s": wall_s,
        "cpu_s": cpu_s,
        "peak_rss_mb": _status_mb("VmHWM"),
        "start_rss_mb": start_rss,
        "detail": {"exit_code": 0 if counters.recorded == len(units) else 1, "recorded": counters.recorded},
    }


def child_bare(args: argparse.Namespace) -> dict[str, Any]:
    """The floor: the same payloads, one session, ``concurrency`` workers, read + json.loads each body.
    With ``--runner``: the same workers, each call through the pool's own runner (``generate``: its
    retry wrapper, timeout, bounded read and parse) — the HTTP path alone, without the driver."""
    import aiohttp

    from eval.loaders import load_items
    from pool.config import load_pool
    from pool.plan import answer_request
    from runners.protocols.openai_compat import OpenAICompatRunner, build_payload

    config = load_pool(args.pool)
    items = load_items([Path(args.suite)]).scorable_items
    base_url = config.backends["fake"].base_url
    concurrency = config.backends["fake"].max_concurrency
    requests = (answer_request(model, item) for model in config.models for item in items)
    start_rss = _status_mb("VmRSS")

    async def bare() -> int:
        done = 0
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:

            async def worker() -> None:
                nonlocal done
                for request in requests:
                    path, payload = build_payload(request)
                    async with session.post(base_url + path, json=payload) as resp:
                        body = await resp.read()
                    if resp.status != 200 or "choices" not in json.loads(body):
                        raise RuntimeError(f"bare loop: HTTP {resp.status}: {body[:200]!r}")
                    done += 1

            await asyncio.gather(*(worker() for _ in range(concurrency)))
        return done

    async def through_runner() -> int:
        done = 0
        runner = OpenAICompatRunner(base_url)

        async def worker() -> None:
            nonlocal done
            for request in requests:
                response = await runner.generate(request)
                if not response.ok:
                    raise RuntimeError(f"runner: {response.error_class}: {response.error_detail}")
                done += 1

        try:
            await asyncio.gather(*(worker() for _ in range(concurrency)))
        finally:
            await runner.aclose()
        return done

    wall, cpu = time.perf_counter(), time.process_time()
    done = asyncio.run(through_runner() if args.runner else bare())
    wall_s, cpu_s = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "wall_s": wall_s,
        "cpu_s": cpu_s,
        "peak_rss_mb": _status_mb("VmHWM"),
        "start_rss_mb": start_rss,
        "detail": {"requests": done},
    }


def run_child(path: str, units: int, argv: list[str], tree: Path = REPO_ROOT) -> Measured:
    """``python -m bench.driver_bench --child …`` in a fresh process, in ``tree`` (this checkout, or a
    baseline copy of the project); the child's last stdout line is its report."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench.driver_bench", "--child", *argv],
        cwd=tree,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"{path} child failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    measured = Measured(path, units, **report)
    if path not in ("bare", "runner") and measured.detail["exit_code"] != 0:
        raise RuntimeError(
            f"{path}: pool.run exit {measured.detail['exit_code']}: {measured.detail}\n{proc.stderr[-3000:]}"
        )
    return measured


# -- the parent ---------------------------------------------------------------------------------


class Workbench:
    """Suites, pool files and fresh run folders under one temporary folder; the trees whose pool.run is measured."""

    def __init__(self, root: Path, items_per_model: int, profile_dir: Path | None, trees: dict[str, Path]) -> None:
        self.root, self.items_per_model, self.profile_dir = root, items_per_model, profile_dir
        self.trees = trees  # label ("" = this checkout) -> project folder
        self.suite = write_suite(root / "suite.jsonl", items_per_model)
        self.count = 0

    def models_for(self, units: int) -> int:
        if units % self.items_per_model:
            raise ValueError(f"{units} units is not a multiple of --items-per-model {self.items_per_model}")
        return units // self.items_per_model

    def pool_paths(self, routing: bool = True) -> list[str]:
        """``pool`` and ``pool+routing`` of this checkout, then of each baseline tree (``pool [label]``)."""
        kinds = ("pool", "pool+routing") if routing else ("pool",)
        return [kind + (f" [{label}]" if label else "") for label in self.trees for kind in kinds]

    def measure(self, path: str, base_url: str, concurrency: int, units: int, profile: bool = False) -> Measured:
        self.count += 1
        kind, _, label = path.partition(" [")
        tag = f"{kind}-{label.rstrip(']') or 'this'}-{units}-{concurrency}-{self.count}"
        if kind == "driver":
            argv = ["--out", str(self.root / tag), "--driver-units", str(units), "--items", str(self.items_per_model)]
            return run_child(path, units, argv, self.trees[label.rstrip("]")])
        pool = write_pool(self.root / f"{tag}.yaml", base_url, concurrency, self.models_for(units))
        argv = ["--pool", str(pool), "--suite", str(self.suite)]
        if kind in ("bare", "runner"):
            return run_child(path, units, argv + ["--bare"] + (["--runner"] if kind == "runner" else []))
        # Its own folder per run: pool.run indexes a run in its parent folder and compares it with the last
        # comparable run there, which would make each measured run depend on the ones before it.
        argv += ["--out", str(self.root / tag / "run"), "--cache-dir", str(self.root / tag / "cache")]
        if kind == "pool+routing":
            argv.append("--routing")
        if profile and self.profile_dir is not None:
            argv += ["--profile", str(self.profile_dir / f"{tag}.pstats")]
        return run_child(path, units, argv, self.trees[label.rstrip("]")])


def _report(prefix: str, m: Measured) -> None:
    worker = f" (+ worker {m.worker_cpu_ms_per_unit:.3f})" if m.worker_cpu_ms_per_unit else ""
    print(
        f"    {prefix} {m.path}: {m.rate:,.0f} units/s, {m.cpu_ms_per_unit:.3f} ms CPU/unit{worker}, "
        f"peak {m.peak_rss_mb:.0f} MB",
        flush=True,
    )


def throughput_rows(bench: Workbench, units: int, reps: int) -> list[dict[str, Any]]:
    from bench.harness.upstream import FakeServerProcess

    rows = []
    for concurrency, latency, goal in CONFIGS:
        config = f"{concurrency} / {latency * 1000:.0f} ms"
        fake = FakeServerProcess(bench.root, latency)
        try:
            bench.measure("bare", fake.base_url, concurrency, bench.items_per_model)  # warm both processes up
            runs: dict[str, list[Measured]] = {path: [] for path in ["bare", "runner", *bench.pool_paths()]}
            for _ in range(reps):  # interleaved, so drift on a shared machine hits every path
                for path, measured in runs.items():
                    measured.append(bench.measure(path, fake.base_url, concurrency, units))
                    _report(config, measured[-1])
            if bench.profile_dir is not None:  # an extra, untimed run: cProfile slows what it watches
                bench.measure("pool", fake.base_url, concurrency, units, profile=True)
        finally:
            fake.stop()
        best = {path: max(ms, key=lambda m: m.rate) for path, ms in runs.items()}
        for path in ["runner", *bench.pool_paths()]:
            rows.append(
                {
                    "config": config,
                    "path": path,
                    "units": units,
                    "rate": best[path].rate,
                    "cpu_ms": best[path].cpu_ms_per_unit,
                    "worker_cpu_ms": best[path].worker_cpu_ms_per_unit,
                    "bare_rate": best["bare"].rate,
                    "bare_cpu_ms": best["bare"].cpu_ms_per_unit,
                    "ratio": best[path].rate / best["bare"].rate,
                    "goal": goal,
                    "peak_rss_mb": best[path].peak_rss_mb,
                    "bare_peak_rss_mb": best["bare"].peak_rss_mb,
                    "runs": [m.__dict__ for m in runs[path]],
                    "bare_runs": [m.__dict__ for m in runs["bare"]],
                }
            )
    return rows


def driver_rows(bench: Workbench, units: int, reps: int) -> list[dict[str, Any]]:
    """The driver's own cost per result (:func:`child_driver`), best of ``reps`` interleaved runs per tree."""
    runs: dict[str, list[Measured]] = {path: [] for path in bench.pool_paths(routing=False)}
    for _ in range(reps):
        for path, measured in runs.items():
            measured.append(bench.measure(path.replace("pool", "driver", 1), "", 0, units))
            _report("no HTTP", measured[-1])
    rows = []
    for path, measured in runs.items():
        best = min(measured, key=lambda m: m.cpu_s)
        rows.append(
            {
                "path": path.replace("pool", "driver", 1),
                "units": units,
                "cpu_ms": best.cpu_ms_per_unit,
                "wall_ms": 1e3 * best.wall_s / units,
                "runs": [m.__dict__ for m in measured],
            }
        )
    return rows


def memory_rows(bench: Workbench, sizes: Sequence[int]) -> list[dict[str, Any]]:
    """Peak RSS of each pool path at each size (256 / 0 ms, no routing), beside the bare loop's run of
    the same units: its peak, and its CPU per unit next to the pool's."""
    from bench.harness.upstream import FakeServerProcess

    concurrency, latency, _ = CONFIGS[0]
    fake = FakeServerProcess(bench.root, latency)
    rows = []
    try:
        for units in sizes:
            bare = bench.measure("bare", fake.base_url, concurrency, units)
            _report(f"memory {units:,} units (start {bare.start_rss_mb:.0f} MB)", bare)
            for path in bench.pool_paths(routing=False):
                m = bench.measure(path, fake.base_url, concurrency, units)
                _report(f"memory {units:,} units (start {m.start_rss_mb:.0f} MB)", m)
                rows.append(
                    {
                        "path": path,
                        "units": units,
                        "peak_rss_mb": m.peak_rss_mb,
                        "start_rss_mb": m.start_rss_mb,
                        "rate": m.rate,
                        "cpu_ms": m.cpu_ms_per_unit,
                        "worker_cpu_ms": m.worker_cpu_ms_per_unit,
                        "worker_peak_rss_mb": m.detail.get("worker_peak_rss_mb", 0.0),
                        "bare_peak_rss_mb": bare.peak_rss_mb,
                        "bare_rate": bare.rate,
                        "bare_cpu_ms": bare.cpu_ms_per_unit,
                    }
                )
    finally:
        fake.stop()
    return rows


def flat_rows(memory: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per path: the peak at ``FLAT_UNITS`` over the peak at ``MEMORY_GOAL_UNITS`` (flat: within ±10%)."""
    peaks = {(r["path"], r["units"]): r["peak_rss_mb"] for r in memory}
    rows = []
    for path in dict.fromkeys(r["path"] for r in memory):
        small, large = peaks.get((path, MEMORY_GOAL_UNITS)), peaks.get((path, FLAT_UNITS))
        if small and large:
            ratio = large / small
            rows.append(
                {
                    "path": path,
                    "small_units": MEMORY_GOAL_UNITS,
                    "large_units": FLAT_UNITS,
                    "small_peak_rss_mb": small,
                    "large_peak_rss_mb": large,
                    "ratio": ratio,
                    "flat": abs(ratio - 1) <= FLAT_TOLERANCE,
                }
            )
    return rows


def format_tables(
    driver: Sequence[dict[str, Any]], throughput: Sequence[dict[str, Any]], memory: Sequence[dict[str, Any]]
) -> str:
    lines = []
    if driver:
        lines += [
            "| driver alone (no HTTP) | results | CPU ms/result (best) | wall ms/result | results/s of CPU |",
            "|---|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {r['path']} | {r['units']:,} | {r['cpu_ms']:.3f} | {r['wall_ms']:.3f} | {1e3 / r['cpu_ms']:,.0f} |"
            for r in driver
        ]
        lines.append("")
    if throughput:
        lines += [
            (
                "| concurrency / latency | path | units | pool units/s | bare units/s | ratio | goal "
                "| CPU ms/unit pool | + scoring worker | CPU ms/unit bare | peak RSS pool | peak RSS bare |"
            ),
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in throughput:
            lines.append(
                f"| {r['config']} | {r['path']} | {r['units']:,} | {r['rate']:,.0f} | {r['bare_rate']:,.0f} "
                f"| {r['ratio']:.2f} | ≥ {r['goal']:.2f} | {r['cpu_ms']:.3f} | {r['worker_cpu_ms']:.3f} "
                f"| {r['bare_cpu_ms']:.3f} "
                f"| {r['peak_rss_mb']:.0f} MB | {r['bare_peak_rss_mb']:.0f} MB |"
            )
        lines.append("")
    if memory:
        lines += [
            (
                "| path (256 / 0 ms, no routing) | units | peak RSS | RSS after imports | growth | goal "
                "| scoring worker peak | bare peak | units/s | bare units/s | CPU ms/unit | + scoring worker "
                "| CPU ms/unit bare |"
            ),
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in memory:
            goal = f"≤ {MEMORY_GOAL_MB:.0f} MB" if r["units"] == MEMORY_GOAL_UNITS else ""
            lines.append(
                f"| {r['path']} | {r['units']:,} | {r['peak_rss_mb']:.0f} MB | {r['start_rss_mb']:.0f} MB "
                f"| {r['peak_rss_mb'] - r['start_rss_mb']:.0f} MB | {goal} "
                f"| {r.get('worker_peak_rss_mb', 0.0):.0f} MB | {r.get('bare_peak_rss_mb', 0.0):.0f} MB "
                f"| {r['rate']:,.0f} | {r.get('bare_rate', 0.0):,.0f} | {r['cpu_ms']:.3f} "
                f"| {r.get('worker_cpu_ms', 0.0):.3f} | {r.get('bare_cpu_ms', 0.0):.3f} |"
            )
        flat = flat_rows(memory)
        if flat:
            lines += [
                "",
                "| flat check | peak at 20k | peak at 100k | 100k / 20k | goal | met |",
                "|---|---:|---:|---:|---:|---|",
            ]
            lines += [
                f"| {r['path']} | {r['small_peak_rss_mb']:.1f} MB | {r['large_peak_rss_mb']:.1f} MB "
                f"| {r['ratio']:.3f} | {1 - FLAT_TOLERANCE:.2f}–{1 + FLAT_TOLERANCE:.2f} "
                f"| {'yes' if r['flat'] else 'NO'} |"
                for r in flat
            ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.driver_bench",
        description="The whole pool.run (Python API) vs a bare aiohttp loop on the "
        "same fake server: throughput, CPU per unit, peak RSS.",
    )
    parser.add_argument("--units", type=int, default=20_000, help="units per throughput row (default 20000)")
    parser.add_argument("--items-per-model", type=int, default=1_000, help="suite size; models = units / this")
    parser.add_argument("--reps", type=int, default=1, help="interleaved repetitions per row (best counts)")
    parser.add_argument("--quick", action="store_true", help="5,000-unit throughput rows, memory at 20k and 100k")
    parser.add_argument("--only", choices=("throughput", "memory", "driver"), help="run only this table")
    parser.add_argument(
        "--profile",
        metavar="DIR",
        help="also cProfile one extra (untimed) pool run per configuration into DIR (in a child: the stats file)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the rows and machine details as JSON")
    parser.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="also measure pool.run of another copy of the project (e.g. `git archive` of an "
        "earlier commit), interleaved with this checkout's runs; repeatable",
    )
    child = parser.add_argument_group("child process (internal)")
    for flag in ("--child", "--bare", "--runner", "--routing"):
        child.add_argument(flag, action="store_true", help=argparse.SUPPRESS)
    child.add_argument("--driver-units", type=int, help=argparse.SUPPRESS)
    child.add_argument("--items", type=int, default=1_000, help=argparse.SUPPRESS)
    for flag in ("--pool", "--suite", "--out", "--cache-dir"):
        child.add_argument(flag, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # started with `&`, a shell leaves SIGINT ignored
    if args.child:
        report = child_bare(args) if args.bare else child_driver(args) if args.driver_units else child_pool(args)
        print(json.dumps(report))
        return 0
    units = 5_000 if args.quick and args.units == 20_000 else args.units
    sizes = (MEMORY_GOAL_UNITS, FLAT_UNITS) if args.quick else (5_000, MEMORY_GOAL_UNITS, FLAT_UNITS)
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}
    started, start = datetime.datetime.now().astimezone(), time.perf_counter()
    print(
        f"driver bench ({'quick' if args.quick else 'full'}) {started:%Y-%m-%d %H:%M %Z}; {machine['cpus']} cpus, "
        f"Python {machine['python']}; {args.items_per_model} items per model",
        flush=True,
    )
    profile_dir = Path(args.profile).resolve() if args.profile else None
    if profile_dir is not None:
        profile_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="medpool-driver-bench-") as tmp:
        trees = {"": REPO_ROOT, **dict(baseline_tree(b, "bench/driver_bench.py") for b in args.baseline)}
        bench = Workbench(Path(tmp), args.items_per_model, profile_dir, trees)
        driver = driver_rows(bench, units, max(args.reps, 3)) if args.only in (None, "driver") else []
        throughput = throughput_rows(bench, units, args.reps) if args.only in (None, "throughput") else []
        memory = memory_rows(bench, sizes) if args.only in (None, "memory") else []
    total_s = time.perf_counter() - start
    print()
    print(format_tables(driver, throughput, memory))
    print(f"\ntotal {total_s:.1f} s")
    if args.json:
        write_json_report(
            args.json,
            "bench.driver_bench",
            started,
            quick=args.quick,
            machine=machine,
            total_s=total_s,
            sizes={"units": units, "memory_units": list(sizes), "items_per_model": args.items_per_model},
            rows=[
                *({"driver": r} for r in driver),
                *throughput,
                *({"memory": r} for r in memory),
                *({"flat": r} for r in flat_rows(memory)),
            ],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
