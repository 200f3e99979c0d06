"""``python -m pool.run`` and the FAKE OpenAI server each in a process of its own, as a user starts them:
the fake's base URL once it listens (and the release of the requests it holds), the run with its own
response cache and a terminal's signal dispositions, and a stop that shows why a run still runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fake_pool import REPO


class ServedFake:
    """The fake in its own process: its base URL, and (when started holding) the release of held requests."""

    def __init__(self, tmp_path: Path, *extra: str) -> None:
        port_file = tmp_path / f"port{len(list(tmp_path.glob('port*')))}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fakes.serve_openai", str(port_file), "--latency", "0.05", *extra], cwd=REPO
        )
        deadline = time.monotonic() + 20
        while not port_file.exists():
            assert self.proc.poll() is None and time.monotonic() < deadline, "fake server did not start"
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{port_file.read_text()}/v1"

    def release(self) -> None:
        self.proc.send_signal(signal.SIGUSR1)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def _as_from_a_terminal() -> None:
    """In the child, before exec: SIGINT and SIGQUIT at their defaults, as a shell starts a
    foreground command. Signals a process ignores are inherited across exec, and this test process
    is sometimes caught ignoring both for a moment (what C's system() does while a command runs):
    a run started then ignored its Ctrl-C (seen in /proc: SigIgn with SIGINT and SIGQUIT set)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def run_cli(*args: str, cache_dir: Path, **kwargs) -> subprocess.Popen:
    """``python -m pool.run ARGS`` started (see :func:`start_cli`)."""
    return start_cli("pool.run", *args, cache_dir=cache_dir, **kwargs)


def start_cli(module: str, *args: str, cache_dir: Path, **kwargs) -> subprocess.Popen:
    """``python -m MODULE ARGS`` started from the repository with its own response cache, as from a
    terminal; stdout and stderr piped as text."""
    # faulthandler: a run that hangs can be made to print every thread's stack (see stop_or_dump)
    env = {**os.environ, "MEDPOOL_CACHE_DIR": str(cache_dir), "PYTHONFAULTHANDLER": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=REPO,
        env=env,
        preexec_fn=_as_from_a_terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def stop_or_dump(proc: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """``proc.communicate(timeout)``; a process still running then fails the test with its signal
    state (/proc) and, through faulthandler on SIGABRT, the stack of each of its threads."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with open(f"/proc/{proc.pid}/status", encoding="ascii") as f:
            state = [line.strip() for line in f if line.startswith(("SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt"))]
        proc.send_signal(signal.SIGABRT)
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"still running {timeout:g} s later; signal state {state}; its stderr:\n{err[-6000:]}")
