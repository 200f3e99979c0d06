"""Benchmark the pool scheduler: its own overhead, how well it fills a backend limit, and real llama.cpp.

(a) overhead: N requests through the whole pool path (pool YAML → Plan → RunStore plan/pending →
    a run ``Session`` (backends and scheduler) with ``OpenAICompatRunner``, no response cache, results in
    SQLite) against a bare aiohttp loop (256 workers, one ClientSession, ``TCPConnector(limit=256)``,
    posting the same payloads and ``json.loads``-ing each body), both at concurrency 256 against the
    same zero-latency fake server. The fake runs in its own process (``tests.fakes.serve_openai``:
    this bench reuses the test fake on purpose) so its CPU is not on our event loop; with 2 cores
    that is one core each. ``ratio = ours req/s / bare req/s`` from interleaved runs in one process
    (best of ``reps``). Client CPU per request (``time.process_time``) is reported beside it, because
    when the fake is the bottleneck throughput hides our cost. Peak memory: a separate, untimed pass
    of each path with ``tracemalloc`` on during the run only, so inputs built before it (plan,
    units, payloads) are excluded; Python allocations only, SQLite's own C heap is not seen.
(b) limit utilisation: the fake in its own process with ``--latency L`` behind a lane with
    ``max_concurrency=C``; ``ratio = achieved req/s / (C / L)``, with the bare loop at the same C in
    the same conditions beside it (the fake and the client's event loop cost a few ms per request
    by themselves). A second row asks for C=256 against an in-process upstream (``bench.harness.upstream``,
    whose ``max_in_flight`` is readable) to show aiohttp's default connection pool (100 per session)
    capping a lane above 100.
(c) real llama.cpp: the session starts the managed server with smollm2 (and qwen in a full
    run); one warm-up request per model is excluded; then K short chat requests (max_tokens 32,
    distinct prompts) at concurrency 1. ``ratio = Σ server total time / wall``, the server's own
    per-request time read from its log (``parse_server_timings`` after the warm-up's log offset).

    python -m bench.scheduler_bench                  # full, ~2 min on 2 cores
    python -m bench.scheduler_bench --quick          # small smoke run, < 60 s
    python -m bench.scheduler_bench --only a --profile 25 --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import datetime
import functools
import io
import json
import os
import platform
import pstats
import resource
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import aiohttp

from bench.harness.measure import write_json_report
from bench.harness.upstream import CountingUpstream, FakeServerProcess
from pool.config import PoolConfig, parse_pool
from pool.execute.endpoints import BackendEndpoint
from pool.execute.executor import Job
from pool.execute.progress import ProgressDisplay
from pool.execute.session import Session
from pool.plan import Plan, answer_request
from pool.store.run_store import RunStore
from runners.llamacpp.server import parse_server_timings
from runners.protocols.openai_compat import build_payload

TOPICS = (
    "hypertension",
    "type 2 diabetes",
    "asthma",
    "anaemia",
    "migraine",
    "gout",
    "pneumonia",
    "hypothyroidism",
    "atrial fibrillation",
    "sepsis",
    "osteoporosis",
    "psoriasis",
    "glaucoma",
    "appendicitis",
    "tuberculosis",
    "epilepsy",
    "heart failure",
    "cirrhosis",
    "malaria",
    "celiac disease",
    "scabies",
    "shingles",
    "pancreatitis",
    "stroke",
)
LOCAL_MODELS = {"smollm2-135m": "smollm2-135m-instruct", "qwen2.5-coder-0.5b": "qwen2.5-coder-0.5b-instruct"}


@dataclass(frozen=True)
class Sizes:
    overhead_requests: int = 20_000
    overhead_concurrency: int = 256
    overhead_reps: int = 2
    memory_pass: bool = True
    limit_requests: int = 3_200
    limit_concurrency: int = 64
    limit_latency_s: float = 0.1
    cap_requests: int = 1_536  # the C=256 row, at cap_latency_s
    cap_latency_s: float = 0.5
    llama_requests: int = 20
    llama_models: tuple[str, ...] = ("smollm2-135m", "qwen2.5-coder-0.5b")


FULL = Sizes()
QUICK = Sizes(
    overhead_requests=2_000,
    overhead_reps=1,
    memory_pass=False,
    limit_requests=640,
    cap_requests=512,
    llama_requests=5,
    llama_models=("smollm2-135m",),
)


@dataclass
class Row:
    part: str
    workload: str
    ours: str
    reference: str
    ratio: float
    goal: str
    notes: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BenchItem:
    """The two things the planner needs from an item (see pool.plan.PromptItem)."""

    id: str
    question: str

    def chat_messages(self) -> tuple[dict[str, str], ...]:
        return ({"role": "user", "content": self.question},)

    def completion_prompt(self) -> str:
        return f"Question: {self.question}\nAnswer:"


def bench_items(n: int) -> tuple[BenchItem, ...]:
    """n distinct short questions (distinct so no two requests share a cache key or a whole prompt)."""
    return tuple(
        BenchItem(f"bench/q/{i:06d}", f"In one sentence, what is {TOPICS[i % len(TOPICS)]}? (case {i})")
        for i in range(n)
    )


def openai_pool(base_url: str, concurrency: int) -> PoolConfig:
    return parse_pool(
        f"backends:\n  fake:\n    type: openai\n    base_url: {base_url}\n"
        f"    max_concurrency: {concurrency}\n"
        "defaults:\n  max_tokens: 32\nmodels:\n  - name: fake-model\n    backend: fake\n",
        "<bench pool>",
    )


def llama_pool(models: Sequence[str]) -> PoolConfig:
    entries = "".join(f"  - name: {name}\n    backend: local\n    gguf: {LOCAL_MODELS[name]}\n" for name in models)
    return parse_pool(
        "backends:\n  local:\n    type: llamacpp\n    max_concurrency: 1\n    n_threads: 2\n"
        f"defaults:\n  temperature: 0\n  max_tokens: 32\nmodels:\n{entries}",
        "<bench pool>",
    )


def jobs_for(plan: Plan, endpoint: BackendEndpoint, model_names: set[str], units: Sequence[Any]) -> Iterator[Job]:
    """Lazy jobs in plan order, built as pool.run builds them."""
    models, items = {m.name: m for m in plan.models}, plan.items_by_id
    for unit in units:
        if unit.model in model_names:
            model = models[unit.model]
            yield Job(unit, answer_request(model, items[unit.item_id]), endpoint.type, endpoint.identities[model.name])


@dataclass
class PoolRun:
    """A planned run in a fresh store, as pool.run sets one up (begin_run, save_plan, pending)."""

    config: PoolConfig
    items: tuple[BenchItem, ...]
    run_dir: Path

    def __post_init__(self) -> None:
        self.plan = Plan(self.config, tuple(self.config.models), self.items)
        self.store = RunStore(self.run_dir)
        self.run_id = self.run_dir.name
        self.store.begin_run(self.run_id, pool_fingerprint="bench", data_fingerprint="bench", options={})
        self.store.save_plan(self.run_id, self.plan.units())
        self.pending = self.store.pending_units(self.run_id)

    def session(self) -> AbstractAsyncContextManager[Session]:
        """The run's session, as pool.run opens one (no response cache: every request is sent)."""
        totals = Counter(u.model for u in self.pending)
        progress = ProgressDisplay(totals, stream=io.StringIO(), interactive=False, interval_s=30.0)
        return Session.open(
            self.config,
            self.plan.models,
            self.run_dir,
            run_id=self.run_id,
            store=self.store,
            progress=progress,
            max_consecutive_failures=5,
        )

    def check(self, n: int, model: str | None = None, allowed: tuple[str, ...] = ("ok",)) -> list[Any]:
        """The model's stored results; raises unless there are n, all ``allowed`` (failures time nothing)."""
        results = [r for r in self.store.results(self.run_id) if model is None or r.model == model]
        statuses = Counter(r.status for r in results)
        if len(results) != n or set(statuses) - set(allowed):
            raise RuntimeError(f"{self.run_dir}: expected {n} results with status in {allowed}, got {dict(statuses)}")
        return results


class InFlightCounter:
    """A runner proxy counting concurrent ``generate`` calls (the lane's side of the limit)."""

    def __init__(self, runner: Any) -> None:
        self.runner, self.in_flight, self.max_in_flight = runner, 0, 0

    async def generate(self, request: Any) -> Any:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self.runner.generate(request)
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        await self.runner.aclose()


@dataclass(frozen=True)
class Timed:
    requests: int
    wall_s: float
    cpu_s: float
    mean_latency_s: float = 0.0  # per request, as the client saw it
    max_in_flight: int = 0  # concurrent calls seen by the client (0: not counted)
    peak_mb: float | None = None  # tracemalloc peak during the run, inputs excluded (when traced)

    @property
    def rate(self) -> float:
        return self.requests / self.wall_s

    @property
    def cpu_us_per_request(self) -> float:
        return 1e6 * self.cpu_s / self.requests


async def timed(
    run: Callable[[], Awaitable[int]], *, profile: cProfile.Profile | None = None, trace_memory: bool = False
) -> Timed:
    """Wall and CPU time of ``run()``; optionally under cProfile, or tracemalloc (then only the peak counts)."""
    if trace_memory:
        tracemalloc.start()
    if profile is not None:
        profile.enable()
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        n = await run()
        wall_s, cpu_s = time.perf_counter() - wall, time.process_time() - cpu
        peak_mb = tracemalloc.get_traced_memory()[1] / 1e6 if trace_memory else None
    finally:
        if profile is not None:
            profile.disable()
        if trace_memory:
            tracemalloc.stop()
    return Timed(n, wall_s, cpu_s, peak_mb=peak_mb)


async def pool_path(
    base_url: str,
    n: int,
    concurrency: int,
    workdir: Path,
    tag: str,
    profile: cProfile.Profile | None = None,
    trace_memory: bool = False,
) -> Timed:
    """Scheduler.run over n fresh units; only the run itself is timed (planning is not)."""
    run = PoolRun(openai_pool(base_url, concurrency), bench_items(n), workdir / tag)
    try:
        async with run.session() as session:
            (endpoint,) = session.endpoints.values()
            counter = endpoint.lane.runner = InFlightCounter(endpoint.lane.runner)  # the bench's own probe

            async def go() -> int:
                jobs = jobs_for(run.plan, endpoint, {"fake-model"}, run.pending)
                return (await session.send({endpoint.name: jobs})).recorded

            result = await timed(go, profile=profile, trace_memory=trace_memory)
        latencies = [r.latency_s for r in run.check(n)]
        return replace(result, mean_latency_s=sum(latencies) / n, max_in_flight=counter.max_in_flight)
    finally:
        run.store.close()


async def bare_loop(base_url: str, n: int, concurrency: int, trace_memory: bool = False) -> Timed:
    """The floor: same payloads, one session, `concurrency` workers, read + json.loads each body."""
    model = openai_pool(base_url, concurrency).models[0]
    payloads = [build_payload(answer_request(model, item)) for item in bench_items(n)]

    latency_sum = 0.0

    async def go() -> int:
        nonlocal latency_sum
        done = 0
        feed = iter(payloads)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:

            async def worker() -> None:
                nonlocal done, latency_sum
                for path, payload in feed:
                    sent = time.perf_counter()
                    async with session.post(base_url + path, json=payload) as resp:
                        body = await resp.read()
                    if resp.status != 200 or "choices" not in json.loads(body):
                        raise RuntimeError(f"bare loop: HTTP {resp.status}: {body[:200]!r}")
                    latency_sum += time.perf_counter() - sent
                    done += 1

            await asyncio.gather(*(worker() for _ in range(concurrency)))
        return done

    result = await timed(go, trace_memory=trace_memory)
    return replace(result, mean_latency_s=latency_sum / n)


def part_overhead(sizes: Sizes, workdir: Path, profile_top: int) -> list[Row]:
    n, c = sizes.overhead_requests, sizes.overhead_concurrency
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    fake = FakeServerProcess(workdir)
    try:
        asyncio.run(bare_loop(fake.base_url, min(n, 1000), c))  # warm both processes up
        ours: list[Timed] = []
        bare: list[Timed] = []
        for rep in range(sizes.overhead_reps):  # interleaved, so drift on a shared machine hits both
            bare.append(asyncio.run(bare_loop(fake.base_url, n, c)))
            ours.append(asyncio.run(pool_path(fake.base_url, n, c, workdir, f"overhead-{rep}")))
            print(f"    rep {rep}: ours {ours[-1].rate:,.0f} req/s, bare {bare[-1].rate:,.0f} req/s", flush=True)
        rss_delta_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
        peaks = {}
        if sizes.memory_pass:
            peaks["ours"] = asyncio.run(
                pool_path(fake.base_url, n, c, workdir, "overhead-mem", trace_memory=True)
            ).peak_mb
            peaks["bare"] = asyncio.run(bare_loop(fake.base_url, n, c, trace_memory=True)).peak_mb
        if profile_top:
            profile = cProfile.Profile()
            asyncio.run(pool_path(fake.base_url, n, c, workdir, "overhead-prof", profile))
            stats = pstats.Stats(profile, stream=sys.stderr).sort_stats("tottime")
            print(f"\ncProfile of Scheduler.run, {n:,} requests, top {profile_top} by own time:", file=sys.stderr)
            stats.print_stats(profile_top)
    finally:
        fake.stop()
    best_ours, best_bare = max(ours, key=lambda t: t.rate), max(bare, key=lambda t: t.rate)
    memory = f"; peak {peaks['ours']:.1f} vs {peaks['bare']:.1f} MB (tracemalloc)" if peaks else ""
    notes = (
        f"client CPU {best_ours.cpu_us_per_request:.0f} vs {best_bare.cpu_us_per_request:.0f} µs/req{memory}; "
        f"maxrss +{rss_delta_mb:.0f} MB"
    )
    data = {
        "ours": [t.__dict__ for t in ours],
        "bare": [t.__dict__ for t in bare],
        "tracemalloc_peak_mb": peaks,
        "maxrss_delta_mb": rss_delta_mb,
    }
    return [
        Row(
            "a",
            f"{n:,} req, concurrency {c}, zero latency",
            f"{best_ours.rate:,.0f} req/s",
            f"bare aiohttp {best_bare.rate:,.0f} req/s",
            best_ours.rate / best_bare.rate,
            "≥ 0.80",
            notes,
            data,
        )
    ]


async def capped_row(n: int, concurrency: int, latency_s: float, workdir: Path) -> tuple[Timed, int]:
    """In-process upstream, so the server's own max_in_flight (HTTP requests really open) is readable."""
    async with CountingUpstream(latency_s=latency_s) as upstream:
        result = await pool_path(upstream.base_url, n, concurrency, workdir, f"cap-{concurrency}")
        return result, upstream.max_in_flight


def part_limits(sizes: Sizes, workdir: Path) -> list[Row]:
    n, c, latency = sizes.limit_requests, sizes.limit_concurrency, sizes.limit_latency_s
    ideal = c / latency
    fake = FakeServerProcess(workdir, latency)
    try:
        asyncio.run(bare_loop(fake.base_url, c, c))  # connections and both processes warmed up
        bare = asyncio.run(bare_loop(fake.base_url, n, c))
        ours = asyncio.run(pool_path(fake.base_url, n, c, workdir, f"limit-{c}"))
    finally:
        fake.stop()
    rows = [
        Row(
            "b",
            f"{n:,} req, limit {c}, latency {latency * 1000:.0f} ms",
            f"{ours.rate:,.0f} req/s",
            f"ideal {ideal:,.0f} req/s",
            ours.rate / ideal,
            "≥ 0.95",
            f"bare aiohttp {bare.rate / ideal:.2f} of ideal; mean latency {ours.mean_latency_s * 1000:.1f} ms "
            f"(bare {bare.mean_latency_s * 1000:.1f}); max in flight {ours.max_in_flight} (client side)",
            {"ours": ours.__dict__, "bare": bare.__dict__, "ideal_rate": ideal},
        )
    ]
    n, latency = sizes.cap_requests, sizes.cap_latency_s
    capped, server_max = asyncio.run(capped_row(n, 256, latency, workdir))
    ideal = 256 / latency
    rows.append(
        Row(
            "b",
            f"{n:,} req, limit 256, latency {latency * 1000:.0f} ms (in-process fake)",
            f"{capped.rate:,.0f} req/s",
            f"ideal {ideal:,.0f} req/s",
            capped.rate / ideal,
            "(cap check)",
            f"server saw max {server_max} in flight; lane had {capped.max_in_flight} calls open",
            {**capped.__dict__, "ideal_rate": ideal, "server_max_in_flight": server_max},
        )
    )
    return rows


async def llama_rows(sizes: Sizes, workdir: Path) -> list[Row]:
    models = sizes.llama_models
    run = PoolRun(llama_pool(models), bench_items(sizes.llama_requests), workdir / "llama")
    rows = []
    try:
        async with run.session() as session:
            (endpoint,) = session.endpoints.values()
            assert endpoint.server_log is not None
            for model in run.plan.models:
                warm_up = answer_request(model, BenchItem("bench/q/warm", "What is a fever?"))
                response = await endpoint.lane.runner.generate(warm_up)  # loads the weights; excluded
                if not response.ok:
                    raise RuntimeError(f"{model.name}: warm-up failed: {response.error_class} {response.error_detail}")
                offset = endpoint.server_log.stat().st_size
                result = await timed(functools.partial(session_run, session, endpoint, run, model.name))
                timings = await read_timings(endpoint.server_log, offset, result.requests)
                results = run.check(result.requests, model.name, allowed=("ok", "error"))  # error: truncated at 32
                server_s = sum(t.total_s for t in timings)
                client_s = sum(r.latency_s or 0.0 for r in results)
                tokens = sum(r.completion_tokens or 0 for r in results)
                notes = (
                    f"Σ client latency {client_s:.2f} s; {tokens} completion tokens; "
                    f"statuses {dict(Counter(r.status for r in results))}"
                )
                rows.append(
                    Row(
                        "c",
                        f"{model.name}: {result.requests} chat req, max_tokens 32, concurrency 1",
                        f"wall {result.wall_s:.2f} s",
                        f"Σ server {server_s:.2f} s",
                        server_s / result.wall_s,
                        "≥ 0.95",
                        notes,
                        {
                            **result.__dict__,
                            "server_total_s": server_s,
                            "client_latency_s": client_s,
                            "server_timings_ms": [t.total_ms for t in timings],
                            "client_latencies_s": [r.latency_s for r in results],
                        },
                    )
                )
    finally:
        run.store.close()
    return rows


async def session_run(session: Session, endpoint: BackendEndpoint, run: PoolRun, model: str) -> int:
    """Results recorded for ``model``'s pending units (the session's counters add up over models)."""
    before = session.counters.recorded
    counters = await session.send({endpoint.name: jobs_for(run.plan, endpoint, {model}, run.pending)})
    return counters.recorded - before


def timings_after(log: Path, offset: int) -> list[Any]:
    with open(log, "rb") as handle:  # a small local file: no need for a thread
        handle.seek(offset)
        return parse_server_timings(handle.read().decode("utf-8", "replace"))


async def read_timings(log: Path, offset: int, expected: int) -> list[Any]:
    """The server prints a request's timing block as it finishes; allow the last one a moment."""
    deadline = time.monotonic() + 5
    while True:
        timings = timings_after(log, offset)
        if len(timings) >= expected or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    if len(timings) != expected:
        raise RuntimeError(f"{log}: {len(timings)} timing blocks after the warm-up, expected {expected}")
    return timings


def part_llama(sizes: Sizes, workdir: Path) -> list[Row]:
    return asyncio.run(llama_rows(sizes, workdir))


def format_table(rows: Sequence[Row]) -> str:
    header = ("part", "workload", "ours", "reference", "ratio", "goal", "notes")
    cells = [header] + [(r.part, r.workload, r.ours, r.reference, f"{r.ratio:.2f}", r.goal, r.notes) for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    right = {2, 3, 4}

    def line(row: Sequence[str]) -> str:
        return (
            "| "
            + " | ".join(
                c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
            + " |"
        )

    rule = "|" + "|".join(("-" * (w + 1) + ":") if i in right else "-" * (w + 2) for i, w in enumerate(widths)) + "|"
    return "\n".join([line(header), rule, *(line(r) for r in cells[1:])])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scheduler_bench",
        description="Scheduler overhead vs bare aiohttp (a), backend-limit utilisation (b), "
        "real llama.cpp wall vs server time (c). Ratios come from one process run.",
    )
    parser.add_argument("--quick", action="store_true", help="small smoke run (< 60 s)")
    parser.add_argument("--json", metavar="PATH", help="also write rows and machine details as JSON")
    parser.add_argument("--only", action="append", choices=("a", "b", "c"), help="run only this part (repeatable)")
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="(a) also profile one Scheduler run with cProfile; print the top N functions to stderr",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = QUICK if args.quick else FULL
    parts: dict[str, Callable[[Path], list[Row]]] = {
        "a": lambda d: part_overhead(sizes, d, args.profile),
        "b": lambda d: part_limits(sizes, d),
        "c": lambda d: part_llama(sizes, d),
    }
    machine = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "aiohttp": aiohttp.__version__,
        "platform": platform.platform(),
    }
    started, start = datetime.datetime.now().astimezone(), time.perf_counter()
    print(
        f"scheduler bench ({'quick' if args.quick else 'full'}) {started:%Y-%m-%d %H:%M %Z}; "
        f"{machine['cpus']} cpus, Python {machine['python']}, aiohttp {machine['aiohttp']}",
        flush=True,
    )
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="medpool-bench-") as tmp:
        for name, part in parts.items():
            if args.only and name not in args.only:
                continue
            part_start = time.perf_counter()
            try:
                rows.extend(part(Path(tmp)))
            except Exception as exc:  # noqa: BLE001 - report the failed part, keep the others' rows
                print(f"FAILED: part {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
                return 1
            print(f"  part {name}: done in {time.perf_counter() - part_start:.1f} s", flush=True)
    total_s = time.perf_counter() - start
    print()
    print(format_table(rows))
    print(f"\ntotal {total_s:.1f} s")
    if args.json:
        write_json_report(
            args.json,
            "bench.scheduler_bench",
            started,
            quick=args.quick,
            machine=machine,
            total_s=total_s,
            sizes=sizes.__dict__,
            rows=[r.__dict__ for r in rows],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
