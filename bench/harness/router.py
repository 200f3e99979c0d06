"""The router as its CLI runs it: ``python -m routing.serve`` in a subprocess, started on a free port and
stopped by its pid; and the first run of a pool of FAKE specialists for it to serve.

Shared by the router tests and ``python -m bench.router_bench``. The specialists' upstream is the
caller's: the tests serve ``tests.fakes.specialists`` in their own process, the benchmark starts
``python -m tests.fakes.serve_specialists`` as a process of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from bench.harness.specialists import write_specialist_pool, write_suite

REPO = Path(__file__).resolve().parents[2]


@contextmanager
def running_router(run_dir: Path, work: Path, *extra: str, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """``python -m routing.serve --run RUN_DIR --port 0`` until the block ends; yields its base URL (``…/v1``)."""
    port_file = work / f"router-{time.monotonic_ns()}.port"
    log = (work / f"{port_file.stem}.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "routing.serve",
            "--run",
            str(run_dir),
            "--port",
            "0",
            "--port-file",
            str(port_file),
            *extra,
        ],
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"router did not start: {(work / f'{port_file.stem}.log').read_text()}")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port_file.read_text()}/v1"
        assert proc.poll() is None, "the router died while serving"
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        log.close()


def first_run(work: Path, base_url: str, per_task: int = 60) -> tuple[Path, dict]:
    """``pool.run`` of the three FAKE specialists on a training suite; (run folder, question key)."""
    key = write_suite(work / "train.jsonl", per_task, "train")
    pool = write_specialist_pool(work / "pool-1.yaml", base_url)
    run = work / "run-1"
    proc = subprocess.run(
        [sys.executable, "-m", "pool.run", "--pool", str(pool), "--data", str(work / "train.jsonl"), "--out", str(run)],
        check=False,
        cwd=REPO,
        env={**os.environ, "MEDPOOL_CACHE_DIR": str(work / "cache")},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run, key
