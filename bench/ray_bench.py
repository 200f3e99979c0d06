"""Benchmark the Ray executor's overhead per request against the local executor.

The same N planned units go through the same driver (:class:`pool.execute.scheduler.Scheduler`: store, one
transaction per result) to the same FAKE OpenAI-compatible server (its own process, fixed latency),
once with :class:`pool.execute.executor.LocalExecutor` and once with :class:`pool.execute.ray_executor.RayExecutor`
on a loopback-only Ray cluster (``bench.harness.ray_cluster``: head with 2 CPUs, every address 127.0.0.1).
``ratio = ray req/s / local req/s``; the overhead per request is ``1/ray_rate − 1/local_rate``
(wall time per request at that concurrency) and the driver's CPU per request is shown beside it.
Rows: latency 0 ms (pure overhead) at concurrency 64 and 256 (the driver keeps 2 × that in flight),
and 100 ms (a realistic model) at 64.

    python -m bench.ray_bench            # 2,000 units per row (about 1–2 minutes with the cluster start)
    python -m bench.ray_bench --quick    # 400 units per row
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bench.harness.ray_cluster import loopback_cluster, non_loopback_connections
from bench.harness.upstream import FakeServerProcess
from bench.scheduler_bench import bench_items, jobs_for, openai_pool
from pool.execute.progress import ProgressDisplay
from pool.execute.session import Session
from pool.plan import Plan
from pool.store.run_store import RunStore


async def one_run(
    executor: str, base_url: str, n: int, concurrency: int, workdir: Path, address: str | None
) -> tuple[float, float]:
    """(requests per second, driver CPU ms per request) for n units through the driver and ``executor``."""
    config = openai_pool(base_url, concurrency)
    run_dir = workdir / f"{executor}-{time.monotonic_ns()}"
    plan = Plan(config, tuple(config.models), bench_items(n))
    with RunStore(run_dir) as store:
        store.begin_run(run_dir.name, pool_fingerprint="bench", data_fingerprint="bench", options={})
        store.save_plan(run_dir.name, plan.units())
        pending = store.pending_units(run_dir.name)
        progress = ProgressDisplay(Counter(u.model for u in pending), stream=io.StringIO(), interactive=False)
        async with Session.open(
            config,
            config.models,
            run_dir,
            run_id=run_dir.name,
            store=store,
            executor=executor,
            ray_address=address,
            progress=progress,
        ) as session:
            endpoint = session.endpoints["fake"]
            started, cpu = time.perf_counter(), time.process_time()
            counters = await session.send({"fake": jobs_for(plan, endpoint, {"fake-model"}, pending)})
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        results = store.results(run_dir.name)
    if counters.recorded != n or any(r.status != "ok" for r in results):
        raise RuntimeError(
            f"{executor}: {counters.recorded} of {n} recorded, statuses {Counter(r.status for r in results)}"
        )
    return n / wall, 1000 * cpu / n


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ray_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="400 units per row instead of 2,000")
    parser.add_argument("--units", type=int, help="units per row")
    args = parser.parse_args(argv)
    n = args.units or (400 if args.quick else 2000)
    rows = []
    with tempfile.TemporaryDirectory(prefix="raybench") as tmp, loopback_cluster(num_cpus=2) as cluster:
        os.environ.update(cluster.env)
        for latency_ms, concurrency in ((0, 64), (0, 256), (100, 64)):
            fake = FakeServerProcess(Path(tmp), latency_s=latency_ms / 1000)
            try:
                asyncio.run(one_run("local", fake.base_url, 50, concurrency, Path(tmp), None))  # warm-up
                local = asyncio.run(one_run("local", fake.base_url, n, concurrency, Path(tmp), None))
                ray = asyncio.run(one_run("ray", fake.base_url, n, concurrency, Path(tmp), cluster.address))
            finally:
                fake.stop()
            rows.append((latency_ms, concurrency, local, ray))
        leaks = non_loopback_connections()
    print(f"Ray executor vs local executor, {n} units per row, same driver and store, FAKE server in its own process")
    print(
        "| latency | concurrency | local req/s | ray req/s | ratio | overhead per request "
        "| driver CPU ms/req local / ray |"
    )
    print("|---|---|---|---|---|---|---|")
    for latency_ms, concurrency, (local_rate, local_cpu), (ray_rate, ray_cpu) in rows:
        overhead_ms = 1000 * (1 / ray_rate - 1 / local_rate)
        print(
            f"| {latency_ms} ms | {concurrency} | {local_rate:.0f} | {ray_rate:.0f} | {ray_rate / local_rate:.2f} | "
            f"{overhead_ms:+.2f} ms | {local_cpu:.2f} / {ray_cpu:.2f} |"
        )
    print(f"Ray connections to non-loopback addresses: {len(leaks)}")
    return 0 if not leaks else 1


if __name__ == "__main__":
    sys.exit(main())
