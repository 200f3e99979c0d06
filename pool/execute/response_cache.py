"""Response cache shared across runs: one SQLite file, keyed by :func:`pool.execute.cache_key.cache_key`.

Why only successes: a response with ``error_class`` set (connection, timeout, 429, 5xx, auth,
client error, unparsable body) says nothing about the model — caching it would turn a passing
outage into a permanent answer. An answered-but-bad response (empty, truncated by length) *is*
the model's answer to that exact request and is cached like any other.

Location: ``cache_dir`` argument, else ``$MEDPOOL_CACHE_DIR``, else ``~/.cache/medpool``; the
file is ``responses.sqlite`` in that directory. Several runs may share it at once (WAL + busy
timeout, see :mod:`pool.store.sqlite_db`). The first answer stored under a key wins.

Write-behind (``ResponseCache(..., write_behind=True)``, what a run uses): puts are held in memory
and written together, one transaction per ``WRITE_BEHIND_ROWS`` puts or per ``WRITE_BEHIND_S``,
and on :meth:`~ResponseCache.flush` / close. A transaction per answer was a twelfth of the
driver's CPU per result. Lookups see held puts. What a SIGKILL can lose is the held puts only:
cache entries, never results — the run store commits every result before its worker moves on,
and a resume reads the store, not the cache; a later run asks those few requests again.

Max age: a hosted model can change behind the same id, so a nightly run asks again for answers
older than its ``--cache-max-age`` (:meth:`ResponseCache.lookup`), and the fresh answer replaces
the stale one. Judge verdicts are not aged (judge drift is measured by ``--anchor-sample``).

Token logprobs (a judge's, asked with ``top_logprobs``) are kept with the answer in the ``logprobs``
column (JSON, ``runners.base.logprobs_to_json``; NULL when the answer has none), so a cached verdict
weighs exactly as the fresh one did. A cache file written before the column existed gets it on open.
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

from pool.store.sqlite_db import SqliteHandle, connect, transaction, utc_now_iso
from runners.base import GenerationResponse, logprobs_from_json, logprobs_to_json

CACHE_FILENAME = "responses.sqlite"
WRITE_BEHIND_ROWS, WRITE_BEHIND_S = 64, 1.0  # a held put is written after at most this many puts or seconds

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key               TEXT PRIMARY KEY,
    text              TEXT NOT NULL,
    finish_reason     TEXT,
    prompt_tokens     INTEGER,
    completion_tokens INTEGER,
    latency_s         REAL NOT NULL,
    server_timing_s   REAL,
    created_at        TEXT NOT NULL,
    logprobs          TEXT
)
"""

_REPLACE = (
    "DO UPDATE SET text = excluded.text, finish_reason = excluded.finish_reason, prompt_tokens ="
    " excluded.prompt_tokens, completion_tokens = excluded.completion_tokens, latency_s = excluded.latency_s,"
    " server_timing_s = excluded.server_timing_s, created_at = excluded.created_at, logprobs = excluded.logprobs"
)

CACHE_ENV = "MEDPOOL_CACHE_DIR"


def default_cache_dir() -> Path:
    """``$MEDPOOL_CACHE_DIR`` if set, else ``~/.cache/medpool``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "medpool"


def age_seconds(created_at: str) -> float:
    """Seconds since an ISO-8601 UTC timestamp written by :func:`utc_now_iso`."""
    stamp = datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return (datetime.now(UTC) - stamp).total_seconds()


def _as_stored(response: GenerationResponse) -> GenerationResponse:
    """What a lookup returns for ``response`` once written: the stored fields, no attempts."""
    return GenerationResponse(
        text=response.text,
        finish_reason=response.finish_reason,
        prompt_tokens=response.prompt_tokens,
        completion_tokens=response.completion_tokens,
        latency_s=response.latency_s,
        attempts=(),
        server_timing_s=response.server_timing_s,
        token_logprobs=response.token_logprobs,
    )


class ResponseCache(SqliteHandle):
    """get/put of successful responses. Use from one thread (the event loop); see RunStore."""

    def __init__(self, cache_dir: Path | str | None = None, *, write_behind: bool = False) -> None:
        directory = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        self.path = directory / CACHE_FILENAME
        self._conn = connect(self.path)
        with transaction(self._conn):
            self._conn.execute(_SCHEMA)
            columns = {row[1] for row in self._conn.execute("PRAGMA table_info(responses)")}
            if "logprobs" not in columns:  # a cache file from before token logprobs were kept
                self._conn.execute("ALTER TABLE responses ADD COLUMN logprobs TEXT")
        self.write_behind = write_behind
        self._held: dict[str, tuple[GenerationResponse, bool, str]] = {}  # key -> (response, replace, created_at)
        self._held_since = 0.0

    def get(self, key: str) -> GenerationResponse | None:
        """The stored answer, with no attempts (nothing was sent), or None on a miss."""
        return self.lookup(key)[0]

    def lookup(self, key: str, max_age_s: float | None = None) -> tuple[GenerationResponse | None, bool]:
        """(stored answer or None, stale?): an entry older than ``max_age_s`` is a miss marked stale,
        so the fresh answer replaces it (``put(..., replace=True)``)."""
        held = self._held.get(key)
        if held is not None:  # put tonight, not yet written: fresh by definition
            return _as_stored(held[0]), False
        row = self._conn.execute("SELECT * FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None, False
        if max_age_s is not None and age_seconds(row["created_at"]) > max_age_s:
            return None, True
        return GenerationResponse(
            text=row["text"],
            finish_reason=row["finish_reason"],
            prompt_tokens=row["prompt_tokens"],
            completion_tokens=row["completion_tokens"],
            latency_s=row["latency_s"],
            attempts=(),
            server_timing_s=row["server_timing_s"],
            token_logprobs=logprobs_from_json(json.loads(row["logprobs"])) if row["logprobs"] else None,
        ), False

    def put(self, key: str, response: GenerationResponse, replace: bool = False) -> bool:
        """Store a successful response; returns whether an entry was written (with write-behind:
        held, unless a put under that key is held already). The first answer under a key wins,
        unless ``replace`` (a stale entry asked again)."""
        if not response.ok:
            return False
        if not self.write_behind:
            return self._write([(key, (response, replace, utc_now_iso()))]) == 1
        if key in self._held and not replace:
            return False
        now = time.monotonic()
        if not self._held:
            self._held_since = now
        self._held[key] = (response, replace, utc_now_iso())
        if len(self._held) >= WRITE_BEHIND_ROWS or now - self._held_since >= WRITE_BEHIND_S:
            self.flush()
        return True

    def flush(self) -> None:
        """Write every held put (write-behind) in one transaction."""
        if self._held:
            held, self._held = self._held, {}
            self._write(list(held.items()))

    def _write(self, entries: list[tuple[str, tuple[GenerationResponse, bool, str]]]) -> int:
        written = 0
        with transaction(self._conn):
            for replace in (False, True):
                rows = [
                    (
                        key,
                        r.text,
                        r.finish_reason,
                        r.prompt_tokens,
                        r.completion_tokens,
                        r.latency_s,
                        r.server_timing_s,
                        created_at,
                        None if r.token_logprobs is None else json.dumps(logprobs_to_json(r.token_logprobs)),
                    )
                    for key, (r, again, created_at) in entries
                    if again is replace
                ]
                if rows:
                    conflict = _REPLACE if replace else "DO NOTHING"
                    written += self._conn.executemany(
                        "INSERT INTO responses (key, text, finish_reason, prompt_tokens, completion_tokens, latency_s,"
                        " server_timing_s, created_at, logprobs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                        f" ON CONFLICT(key) {conflict}",
                        rows,
                    ).rowcount
        return written

    def close(self) -> None:
        try:
            self.flush()
        finally:
            super().close()

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
