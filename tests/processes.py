"""Watching processes and run stores from a test: live (not zombie) processes by command line, a
store's row count while another process writes it, and waiting for a condition."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path


def alive(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie lingers until init reaps it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def pids_with(*markers: bytes) -> list[int]:
    """Live processes whose command line contains every marker."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if all(marker in cmdline for marker in markers) and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def count_results(db: Path) -> int:
    """Rows in a run store's results table; 0 while it cannot be read yet (read-only: a store not
    created yet is not created here, under the run that is about to)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def eventually(condition: Callable[[], bool], timeout_s: float) -> bool:
    """Whether ``condition`` became true within ``timeout_s`` (checked every 10 ms)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
