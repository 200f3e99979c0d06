"""SQLite settings shared by the run store and the response cache.

Both databases are opened the same way so that a run killed with SIGKILL at any moment can be
reopened with nothing committed lost and nothing half-written visible:

- ``journal_mode=WAL``: a commit appends the transaction to ``*.sqlite-wal``; readers (an export,
  a second process sharing the cache) never block the writer. After a crash the next open replays
  committed frames from the WAL and ignores an uncommitted tail — recovery is automatic.
- ``synchronous=NORMAL``: with WAL, a commit is a ``write()`` into the WAL file (no fsync per
  commit). The bytes are then in the OS page cache, which survives the death of our *process*, so
  every committed transaction survives SIGKILL. Only an OS crash or power loss can drop the last
  few commits — and even then the database stays consistent (the WAL is checksummed). That is
  the right trade for a results store that can redo a unit: ``FULL`` would fsync every result.
- a busy timeout, so a second connection (the cache shared by concurrent runs, an export while a
  run writes) waits for the lock instead of failing with "database is locked".

WAL needs shared memory between processes, so these files must live on a local filesystem (not
NFS/SMB).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Self

BUSY_TIMEOUT_S = 30.0


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if needed) a WAL database in autocommit mode; use :func:`transaction`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # isolation_level=None: the sqlite3 module issues no implicit BEGINs, so every transaction
    # boundary is the explicit one in `transaction` below.
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        conn.close()
        raise RuntimeError(f"{path}: SQLite refused WAL mode (got {mode!r}); use a local disk")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One atomic write: all statements inside commit together or not at all.

    ``BEGIN IMMEDIATE`` takes the write lock up front, so a busy database makes us wait (busy
    timeout) at the start rather than fail half-way through.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


class SqliteHandle:
    """A class owning one connection (``self._conn``): close it, or use it as a context manager."""

    _conn: sqlite3.Connection

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


_LAST_SECOND: list[Any] = [None, ""]  # (whole second, its formatted date and time): stamps repeat it many times


def utc_now_iso() -> str:
    """UTC timestamp with milliseconds, e.g. ``2025-01-31T02:14:05.123+00:00`` (``datetime.isoformat``'s
    layout). A run stamps every result two or three times, so the second's text is formatted once."""
    now = time.time()
    second = int(now)
    if second != _LAST_SECOND[0]:
        _LAST_SECOND[:] = [second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")]
    return f"{_LAST_SECOND[1]}.{int((now - second) * 1000):03d}+00:00"
