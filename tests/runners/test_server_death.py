"""A managed llama.cpp server that dies mid-run (here: SIGSEGV, as a CPU-trap crash ends it) stops
the run at once with its cause — the backend, the signal, the log — charges nothing to its models,
and ``--resume`` with a healthy server finishes with exactly the results of an uninterrupted run.

The run is held in a known state before the crash: the server is stopped (SIGSTOP) once the first
answer is recorded, so the run cannot finish before the crash lands, on any machine.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.local_models import requires_llama
from tests.processes import count_results

REPO = Path(__file__).resolve().parents[2]
ITEMS = 12

pytestmark = requires_llama

POOL = """backends:
  local:
    type: llamacpp
    max_concurrency: 1
models:
  - name: smollm2-135m
    backend: local
    gguf: smollm2-135m-instruct
    max_tokens: 8
"""


def _command(pool: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pool.run",
        "--pool",
        str(pool),
        "--limit",
        str(ITEMS),
        "--no-judge",
        "--no-routing",
        "--no-cache",
        "--out",
        str(out),
    ]


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "MEDPOOL_CACHE_DIR": str(tmp / "cache")}


def _rows(run_dir: Path) -> list[tuple]:
    lines = (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return [
        (r["model"], r["item_id"], r["stage"], r["status"], r["error_class"], r["text"]) for r in map(json.loads, lines)
    ]


def _server_pid(run_dir: Path, run: subprocess.Popen) -> int:
    deadline = time.monotonic() + 300
    while True:
        pid_files = list(run_dir.glob("llamacpp-local*.pid"))
        if pid_files:
            return int(json.loads(pid_files[0].read_text(encoding="utf-8"))["pid"])
        assert run.poll() is None, run.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "no managed server started"
        time.sleep(0.05)


def test_a_server_crash_is_named_charges_nothing_and_resume_completes_the_run(tmp_path, write_pool):
    pool = write_pool(POOL, name="pool.yaml")
    reference = subprocess.run(
        _command(pool, tmp_path / "reference"),
        cwd=REPO,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert reference.returncode == 0, reference.stderr[-3000:]

    run_dir = tmp_path / "crashed"
    run = subprocess.Popen(
        _command(pool, run_dir), cwd=REPO, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    server = _server_pid(run_dir, run)
    deadline = time.monotonic() + 300
    while count_results(run_dir / "run.sqlite") < 1:
        assert run.poll() is None, run.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "no answer recorded"
        time.sleep(0.02)
    os.kill(server, signal.SIGSTOP)  # the run now waits on a server that answers nothing
    held_at = count_results(run_dir / "run.sqlite")
    assert held_at < ITEMS
    os.kill(server, signal.SIGSEGV)
    os.kill(server, signal.SIGCONT)  # the pending SIGSEGV is delivered: the server dies of it
    _, err = run.communicate(timeout=120)

    assert run.returncode == 1, err[-3000:]
    assert "backend 'local'" in err and "SIGSEGV (signal 11)" in err
    assert str(run_dir / "llamacpp-local.log") in err and f"--resume {run_dir}" in err
    assert "model marked failed" not in err and "Cannot connect" not in err
    with sqlite3.connect(run_dir / "run.sqlite") as conn:
        infra = conn.execute("SELECT COUNT(*) FROM results WHERE status = 'infra_error'").fetchone()[0]
        recorded = conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    assert infra == 0 and held_at <= recorded < ITEMS  # nothing charged to the model; the rest pending

    resumed = subprocess.run(
        [sys.executable, "-m", "pool.run", "--resume", str(run_dir)],
        cwd=REPO,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert _rows(run_dir) == _rows(tmp_path / "reference")
