"""``python -m bench.router_bench``: the latency the router adds over a direct call, at 64 requests in flight.

Setup (all FAKE, all on 127.0.0.1): a first ``pool.run`` of the three FAKE specialists (their own process,
``tests.fakes.serve_specialists``) builds a run and its manifest; then a FAKE upstream runs as its own
process (``tests.fakes.serve_openai``, answering after ``--upstream-latency`` seconds, a stand-in for a
model) and the router (``python -m routing.serve``, its CLI) serves the run with every model on that
upstream. The bench process sends the same chat requests, ``--concurrency`` at a time, in interleaved
rounds to three arms:

- ``direct``: straight to the upstream (the baseline);
- ``router (hint)``: through the router with an ``x-medpool-bucket`` hint (no classification);
- ``router (classifier)``: through the router, the bucket guessed from the question.

Reported per arm: p50 and p99 of the whole-request latency seen by the client, the added latency
(arm − direct, per percentile) and the ratio (arm / direct); and the router's own time per request
as its ``medpool_router_overhead_seconds`` histogram counts it (request latency minus the upstream
wait, bucketed: reported as the bucket bound the percentile falls under). Goals: added p50 ≤ 1 ms,
p99 ≤ 5 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np

from bench.harness.measure import write_json_report
from bench.harness.router import first_run, running_router
from bench.harness.specialists import write_suite
from bench.harness.upstream import FakeServerProcess

ARMS = ("direct", "router (hint)", "router (classifier)")


def write_pool(path: Path, upstream: str) -> Path:
    models = "".join(f"  - {{name: {m}, backend: fake, model: {m}, max_tokens: 8}}\n" for m in ("card", "endo", "gen"))
    path.write_text(
        f'backends:\n  fake: {{type: openai, base_url: "{upstream}", max_concurrency: 64}}\nmodels:\n{models}',
        encoding="utf-8",
    )
    return path


async def one_round(
    session: aiohttp.ClientSession, url: str, bodies: list[bytes], headers: dict[str, str], concurrency: int
) -> list[float]:
    queue = list(reversed(bodies))
    latencies: list[float] = []

    async def worker() -> None:
        while queue:
            body = queue.pop()
            started = time.perf_counter()
            async with session.post(url, data=body, headers=headers) as response:
                await response.read()
                if response.status != 200:
                    raise SystemExit(f"FAILED: {url} answered {response.status}")
            latencies.append(time.perf_counter() - started)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies


def histogram_percentiles(metrics: str, name: str, quantiles: tuple[float, ...]) -> list[str]:
    bounds, counts = [], []
    for line in metrics.splitlines():
        if line.startswith(f"{name}_bucket"):
            bound = line.split('le="', 1)[1].split('"', 1)[0]
            bounds.append(bound)
            counts.append(int(line.rsplit(" ", 1)[1]))
    total = counts[-1] if counts else 0
    return [
        next(
            (
                f"≤ {float(b) * 1000:g} ms" if b != "+Inf" else "> last bound"
                for b, c in zip(bounds, counts, strict=True)
                if c >= q * total
            ),
            "-",
        )
        for q in quantiles
    ]


async def measure(
    upstream: str, router: str, questions: list[str], rounds: int, per_round: int, concurrency: int
) -> dict[str, Any]:
    urls = {
        "direct": upstream + "/chat/completions",
        "router (hint)": router + "/chat/completions",
        "router (classifier)": router + "/chat/completions",
    }
    headers = {"direct": {}, "router (hint)": {"x-medpool-bucket": "exam/task/T1"}, "router (classifier)": {}}
    bodies = [
        json.dumps({"model": "card", "messages": [{"role": "user", "content": q}], "max_tokens": 8}).encode()
        for q in questions
    ]
    latencies: dict[str, list[float]] = {arm: [] for arm in ARMS}
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        for arm in ARMS:  # warm-up: connections, caches
            await one_round(
                session,
                urls[arm],
                bodies[:concurrency],
                {"Content-Type": "application/json", **headers[arm]},
                concurrency,
            )
        order = list(ARMS)
        for r in range(rounds):
            for arm in order[r % 3 :] + order[: r % 3]:
                batch = [bodies[(r * per_round + i) % len(bodies)] for i in range(per_round)]
                latencies[arm] += await one_round(
                    session, urls[arm], batch, {"Content-Type": "application/json", **headers[arm]}, concurrency
                )
        async with session.get(router.removesuffix("/v1") + "/metrics") as response:
            metrics = await response.text()
    out: dict[str, Any] = {
        "arms": {},
        "router_overhead": histogram_percentiles(metrics, "medpool_router_overhead_seconds", (0.5, 0.99)),
    }
    base = np.percentile(latencies["direct"], [50, 99])
    for arm in ARMS:
        p = np.percentile(latencies[arm], [50, 99])
        out["arms"][arm] = {
            "n": len(latencies[arm]),
            "p50_ms": p[0] * 1000,
            "p99_ms": p[1] * 1000,
            "added_p50_ms": (p[0] - base[0]) * 1000,
            "added_p99_ms": (p[1] - base[1]) * 1000,
            "ratio_p50": p[0] / base[0],
            "ratio_p99": p[1] / base[1],
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.router_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=6, help="interleaved rounds per arm (default %(default)s)")
    parser.add_argument("--per-round", type=int, default=640, help="requests per arm per round (default %(default)s)")
    parser.add_argument(
        "--upstream-latency", type=float, default=0.2, help="seconds the FAKE upstream takes (default %(default)s)"
    )
    parser.add_argument("--quick", action="store_true", help="2 rounds of 128 requests")
    parser.add_argument("--json", metavar="FILE", help="also write the rows and machine details as JSON")
    args = parser.parse_args()
    rounds, per_round = (2, 128) if args.quick else (args.rounds, args.per_round)
    started, clock = datetime.datetime.now(datetime.UTC), time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        key = write_suite(work / "train.jsonl", 60, "train")
        specialists = FakeServerProcess(work, module="tests.fakes.serve_specialists", args=[str(work / "train.jsonl")])
        try:
            run, _ = first_run(work, specialists.base_url)
        finally:
            specialists.stop()
        questions = [q for q, item in key.items() if item["task"] == "T1"]
        upstream = FakeServerProcess(work, args.upstream_latency)
        try:
            pool = write_pool(work / "bench-pool.yaml", upstream.base_url)
            with running_router(run, work, "--pool", str(pool)) as router:
                result = asyncio.run(measure(upstream.base_url, router, questions, rounds, per_round, args.concurrency))
        finally:
            upstream.stop()
    print(
        f"router bench: {args.concurrency} in flight, FAKE upstream latency {args.upstream_latency * 1000:g} ms, "
        f"{rounds} rounds × {per_round} requests per arm, {os.cpu_count()} cores"
    )
    print(
        f"{'arm':22} {'p50 ms':>8} {'p99 ms':>8} {'added p50':>10} {'added p99':>10} "
        f"{'ratio p50':>10} {'ratio p99':>10}"
    )
    for arm, row in result["arms"].items():
        print(
            f"{arm:22} {row['p50_ms']:8.2f} {row['p99_ms']:8.2f} "
            f"{row['added_p50_ms']:10.2f} {row['added_p99_ms']:10.2f} "
            f"{row['ratio_p50']:10.3f} {row['ratio_p99']:10.3f}"
        )
    print(
        f"router's own time per request (its overhead histogram): p50 {result['router_overhead'][0]}, "
        f"p99 {result['router_overhead'][1]}"
    )
    if args.json:
        machine = {"python": platform.python_version(), "cores": os.cpu_count(), "platform": platform.platform()}
        write_json_report(
            args.json,
            "bench.router_bench",
            started,
            quick=args.quick,
            machine=machine,
            total_s=time.perf_counter() - clock,
            sizes={
                "concurrency": args.concurrency,
                "rounds": rounds,
                "per_round": per_round,
                "upstream_latency_s": args.upstream_latency,
            },
            rows=[{"arm": a, **r} for a, r in result["arms"].items()],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
