"""Response cache shared across runs: one SQLite file, keyed by :func:`pool.cache_key.cache_key`.

Why only successes: a response with ``error_class`` set (connection, timeout, 429, 5xx, auth,
client error, unparsable body) says nothing about the model — caching it would turn a passing
outage into a permanent answer. An answered-but-bad response (empty, truncated by length) *is*
the model's answer to that exact request and is cached like any other.

Location: ``cache_dir`` argument, else ``$MEDPOOL_CACHE_DIR``, else ``~/.cache/medpool``; the
file is ``responses.sqlite`` in that directory. Several runs may share it at once (WAL + busy
timeout, see :mod:`pool.sqlite_db`). The first answer stored under a key wins.
"""

from __future__ import annotations

import os
from pathlib import Path

from pool.sqlite_db import SqliteHandle, connect, transaction, utc_now_iso
from runners.base import GenerationResponse

CACHE_FILENAME = "responses.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key               TEXT PRIMARY KEY,
    text              TEXT NOT NULL,
    finish_reason     TEXT,
    prompt_tokens     INTEGER,
    completion_tokens INTEGER,
    latency_s         REAL NOT NULL,
    server_timing_s   REAL,
    created_at        TEXT NOT NULL
)
"""


CACHE_ENV = "MEDPOOL_CACHE_DIR"


def default_cache_dir() -> Path:
    """``$MEDPOOL_CACHE_DIR`` if set, else ``~/.cache/medpool``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "medpool"


class ResponseCache(SqliteHandle):
    """get/put of successful responses. Use from one thread (the event loop); see RunStore."""

    def __init__(self, cache_dir: Path | str | None = None) -> None:
        directory = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        self.path = directory / CACHE_FILENAME
        self._conn = connect(self.path)
        with transaction(self._conn):
            self._conn.execute(_SCHEMA)

    def get(self, key: str) -> GenerationResponse | None:
        """The stored answer, with no attempts (nothing was sent), or None on a miss."""
        row = self._conn.execute("SELECT * FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return GenerationResponse(
            text=row["text"],
            finish_reason=row["finish_reason"],
            prompt_tokens=row["prompt_tokens"],
            completion_tokens=row["completion_tokens"],
            latency_s=row["latency_s"],
            attempts=(),
            server_timing_s=row["server_timing_s"],
        )

    def put(self, key: str, response: GenerationResponse) -> bool:
        """Store a successful response; returns whether a new entry was written."""
        if not response.ok:
            return False
        with transaction(self._conn):
            cur = self._conn.execute(
                "INSERT INTO responses (key, text, finish_reason, prompt_tokens,"
                " completion_tokens, latency_s, server_timing_s, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO NOTHING",
                (
                    key,
                    response.text,
                    response.finish_reason,
                    response.prompt_tokens,
                    response.completion_tokens,
                    response.latency_s,
                    response.server_timing_s,
                    utc_now_iso(),
                ),
            )
        return cur.rowcount == 1

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

