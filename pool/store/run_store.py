"""The run store: ``RUN_DIR/run.sqlite``, the single source of truth for what a run has done.

Why it is built this way: a nightly run may be SIGKILLed at any moment and resumed. So every
result is committed in its own transaction (or a small batch) as soon as it exists, the
primary key (run_id, model, item_id, stage) makes a second record of a unit impossible, and the
planned units are stored so a resumed run computes its remaining work as *plan minus results*.
Connection settings and crash-safety reasoning: :mod:`pool.store.sqlite_db`.

Tables::

    runs     (run_id PK, created_at, updated_at, pool_fingerprint, data_fingerprint,
              options_json, status 'running'|'finished'|'interrupted', resumes)
    plan     (run_id, model, item_id, stage, seq, answerer)     PK (run_id, model, item_id, stage)
    results  (run_id, model, item_id, stage, status 'ok'|'error'|'infra_error', error_class,
              error_detail, attempts, retries, latency_s, server_timing_s, prompt_tokens,
              completion_tokens, finish_reason, text, request_json, cache_key, cached 0|1,
              started_at, finished_at, extra JSON, answered_by, endpoint)
                                                                PK (run_id, model, item_id, stage)
    superseded_infra_errors (the unit, error_class, error_detail, attempts, retries, latency_s,
              started_at, finished_at, replaced_at) — infra_error rows replaced on a retry
              resume, kept so request and retry counts stay honest
    model_failures (run_id, model, reason, marked_at)           PK (run_id, model)

``plan.answerer`` is the pool model that must answer a unit (the candidate for ``answer``, the
judge for ``judge:…`` stages) and ``results.answered_by`` the one that did: :meth:`RunStore.record`
refuses a row whose answerer is not the planned one (:class:`WrongAnswererError`), so no code path
— resume, rescore, a cache hit — can store a candidate's text as a verdict.

A run killed by SIGKILL is left with ``status='running'``; :meth:`RunStore.begin_run` on the same
run_id resumes it and counts the resume.

Concurrency: the scheduler is one asyncio process. Store calls are synchronous and made from the
event-loop thread — each is one small indexed write and, with WAL + ``synchronous=NORMAL``, no
fsync, so it costs well under a millisecond and needs no writer thread or queue. The sqlite3
connection refuses use from another thread (``check_same_thread``), which enforces this.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pool.store.outcome import Result, Unit
from pool.store.sqlite_db import SqliteHandle, connect, transaction, utc_now_iso
from pool.store.tallies import StoreTallies, read_tallies

RUN_DB_FILENAME = "run.sqlite"
SCHEMA_VERSION = 2
RunStatus = Literal["running", "finished", "interrupted"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id           TEXT PRIMARY KEY,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    pool_fingerprint TEXT NOT NULL,
    data_fingerprint TEXT NOT NULL,
    options_json     TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('running', 'finished', 'interrupted')),
    resumes          INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS plan (
    run_id  TEXT NOT NULL,
    model   TEXT NOT NULL,
    item_id TEXT NOT NULL,
    stage   TEXT NOT NULL,
    seq     INTEGER NOT NULL,
    answerer TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, model, item_id, stage)
);
CREATE INDEX IF NOT EXISTS plan_by_seq ON plan (run_id, seq);
CREATE TABLE IF NOT EXISTS results (
    run_id            TEXT NOT NULL,
    model             TEXT NOT NULL,
    item_id           TEXT NOT NULL,
    stage             TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('ok', 'error', 'infra_error')),
    error_class       TEXT,
    error_detail      TEXT NOT NULL DEFAULT '',
    attempts          INTEGER NOT NULL CHECK (attempts >= 0),
    retries           INTEGER NOT NULL CHECK (retries >= 0),
    latency_s         REAL,
    server_timing_s   REAL,
    prompt_tokens     INTEGER,
    completion_tokens INTEGER,
    finish_reason     TEXT,
    text              TEXT NOT NULL,
    request_json      TEXT NOT NULL,
    cache_key         TEXT,
    cached            INTEGER NOT NULL CHECK (cached IN (0, 1)),
    started_at        TEXT NOT NULL,
    finished_at       TEXT NOT NULL,
    extra             TEXT NOT NULL DEFAULT '{}',
    answered_by       TEXT NOT NULL DEFAULT '',
    endpoint          TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, model, item_id, stage)
);
CREATE TABLE IF NOT EXISTS superseded_infra_errors (
    run_id       TEXT NOT NULL,
    model        TEXT NOT NULL,
    item_id      TEXT NOT NULL,
    stage        TEXT NOT NULL,
    error_class  TEXT,
    error_detail TEXT NOT NULL,
    attempts     INTEGER NOT NULL,
    retries      INTEGER NOT NULL,
    latency_s    REAL,
    started_at   TEXT NOT NULL,
    finished_at  TEXT NOT NULL,
    replaced_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS model_failures (
    run_id    TEXT NOT NULL,
    model     TEXT NOT NULL,
    reason    TEXT NOT NULL,
    marked_at TEXT NOT NULL,
    PRIMARY KEY (run_id, model)
);
"""

_RESULT_COLUMNS = (
    "run_id",
    "model",
    "item_id",
    "stage",
    "status",
    "error_class",
    "error_detail",
    "attempts",
    "retries",
    "latency_s",
    "server_timing_s",
    "prompt_tokens",
    "completion_tokens",
    "finish_reason",
    "text",
    "request_json",
    "cache_key",
    "cached",
    "started_at",
    "finished_at",
    "extra",
    "answered_by",
    "endpoint",
)
_UNIT_WHERE = "run_id = ? AND model = ? AND item_id = ? AND stage = ?"
# The answerer check rides on the insert (one statement per result, not a SELECT before each): a row
# goes in only if its unit was not planned for another model. A row that did not go in is looked at
# again, to tell a finished unit (left alone) from a wrong answerer (refused).
_PLANNED_FOR_ANOTHER = (
    f"SELECT 1 FROM plan WHERE {_UNIT_WHERE} AND answerer IS NOT NULL AND answerer != '' AND answerer IS NOT ?"
)
_INSERT_RESULT = (
    f"INSERT INTO results ({', '.join(_RESULT_COLUMNS)})"
    f" SELECT {', '.join('?' * len(_RESULT_COLUMNS))} WHERE NOT EXISTS ({_PLANNED_FOR_ANOTHER})"
    " ON CONFLICT (run_id, model, item_id, stage) DO "
)
_INSERT_NEW = _INSERT_RESULT + "NOTHING"
_INSERT_OR_REPLACE_INFRA = (
    _INSERT_RESULT
    + "UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _RESULT_COLUMNS[4:])
    + " WHERE results.status = 'infra_error'"
)
_SUPERSEDE_INFRA = (
    "INSERT INTO superseded_infra_errors SELECT run_id, model, item_id, stage, error_class,"
    " error_detail, attempts, retries, latency_s, started_at, finished_at, ?"
    f" FROM results WHERE {_UNIT_WHERE} AND status = 'infra_error'"
)


# Rows per page when the plan is written or results and pending units are read (bounded memory).
_CHUNK_ROWS = 1000
_INSERT_PLAN = (
    "INSERT INTO plan (run_id, model, item_id, stage, seq, answerer)"
    " SELECT ?, ?, ?, ?, COALESCE((SELECT MAX(seq) FROM plan WHERE run_id = ?), -1) + 1, ?"
    " WHERE true ON CONFLICT DO NOTHING"  # WHERE: SQLite's rule for an upsert on INSERT … SELECT
)
_PENDING_FROM = (
    "plan p LEFT JOIN results r ON r.run_id = p.run_id AND r.model = p.model AND r.item_id = p.item_id"
    " AND r.stage = p.stage WHERE p.run_id = ? AND (r.status IS NULL OR (? AND r.status = 'infra_error'))"
)


def _stage_filter(stage: str | None) -> str:
    return "" if stage is None else " AND p.stage = ?"


# Columns added in schema version 2 (version 1 stores are upgraded in place when opened).
_V2_COLUMNS = (
    ("plan", "answerer TEXT NOT NULL DEFAULT ''"),
    ("results", "answered_by TEXT NOT NULL DEFAULT ''"),
    ("results", "endpoint TEXT NOT NULL DEFAULT ''"),
)


class WrongAnswererError(RuntimeError):
    """A result for a unit came from a model other than the one the plan assigned to it."""


class StoreFormatError(RuntimeError):
    """``run.sqlite`` is not a run store this version can read (garbage, foreign, or newer)."""


class RunMismatchError(RuntimeError):
    """A resume was asked with a different pool or data than the run was planned with."""


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    created_at: str
    updated_at: str
    pool_fingerprint: str
    data_fingerprint: str
    options: dict[str, Any]
    status: RunStatus
    resumes: int  # how many times begin_run found this run already there


# A result row is read in Result's own field order (``_SELECT_RESULT``) and written in the
# table's column order; both conversions run once per result, so they index instead of building dicts.
_RESULT_FIELDS = tuple(f.name for f in dataclasses.fields(Result))
_SELECT_RESULT = f"SELECT {', '.join(_RESULT_FIELDS)} FROM results"
_FIELD = {name: i for i, name in enumerate(_RESULT_FIELDS)}
_SELECT_ANSWER_FIELDS = ", ".join("'' AS request_json" if name == "request_json" else name for name in _RESULT_FIELDS)
_column_values = operator.attrgetter(*_RESULT_COLUMNS)
_COLUMN_CACHED, _COLUMN_EXTRA = _RESULT_COLUMNS.index("cached"), _RESULT_COLUMNS.index("extra")


def _result_params(r: Result) -> list[Any]:
    values = list(_column_values(r))
    values[_COLUMN_CACHED] = int(r.cached)
    values[_COLUMN_EXTRA] = json.dumps(r.extra, sort_keys=True) if r.extra else "{}"
    return values


def _row_to_result(row: Sequence[Any]) -> Result:
    """A row of ``_SELECT_RESULT`` (a tuple or sqlite3.Row) as a Result."""
    values = list(row)
    values[_FIELD["cached"]] = bool(values[_FIELD["cached"]])
    extra = values[_FIELD["extra"]]
    values[_FIELD["extra"]] = {} if extra == "{}" else json.loads(extra)
    return Result(*values)


def _required_columns() -> dict[str, set[str]]:
    """Each table's columns, read off ``_SCHEMA`` (one place for the shape of the store)."""
    tables: dict[str, set[str]] = {}
    for statement in _SCHEMA.split(";"):
        words = statement.split()
        if words[:2] == ["CREATE", "TABLE"]:
            name = words[5].split("(")[0]
            body = statement[statement.index("(") + 1 :]
            tables[name] = {
                line.split()[0]
                for line in body.splitlines()
                if line.strip() and line.split()[0].islower() and line.split()[0] != ")"
            }
    return tables


def _check_columns(conn: sqlite3.Connection, path: Path, version: int = SCHEMA_VERSION) -> None:
    added_later = {(t, c.split()[0]) for t, c in _V2_COLUMNS} if version == 1 else set()
    for table, columns in _required_columns().items():
        wanted = {c for c in columns if (table, c) not in added_later}
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if not wanted <= have:
            raise StoreFormatError(
                f"{path}: table {table!r} is not a medpool run table (missing "
                f"{', '.join(sorted(wanted - have))}); pass the folder of a medpool run"
            )


def _check_existing_store(path: Path) -> None:
    """Read-only look at ``path``: a medpool run store of a known version, or StoreFormatError."""
    if not path.is_file():
        raise StoreFormatError(f"{path}: no run store there; pass the folder of an earlier run")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version not in (1, SCHEMA_VERSION):
                raise StoreFormatError(
                    f"{path}: not a medpool run store (schema version {version}); pass the folder of a medpool run"
                )
            _check_columns(conn, path, version)
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise StoreFormatError(f"{path}: not a run store ({exc}); pass the folder of a medpool run") from exc


def _row_to_run(row: sqlite3.Row, path: Path) -> RunInfo:
    values = dict(row)  # sqlite3.Row maps column names to values
    try:
        options = json.loads(values.pop("options_json"))
    except json.JSONDecodeError as exc:
        raise StoreFormatError(
            f"{path}: run {values.get('run_id')!r} has unreadable options ({exc}); start a new run with --out"
        ) from None
    if not isinstance(options, dict):
        raise StoreFormatError(
            f"{path}: run {values.get('run_id')!r}: its options are not a mapping; start a new run with --out"
        )
    return RunInfo(options=options, **values)


class RunStore(SqliteHandle):
    """Exactly-once result storage for the runs in one run directory."""

    def __init__(self, run_dir: Path | str, *, create: bool = True) -> None:
        """Open (``create``: or create) the store; ``create=False`` refuses, without writing to it,
        a file that is not already a medpool run store — ``--resume`` must not alter a stranger's file."""
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / RUN_DB_FILENAME
        if not create:
            _check_existing_store(self.path)
        try:
            self._conn = connect(self.path)
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:  # a garbage or truncated file
            raise StoreFormatError(f"{self.path}: not a run store ({exc}); pass the folder of a medpool run") from exc
        if version not in (0, 1, SCHEMA_VERSION):
            self._conn.close()
            raise StoreFormatError(f"{self.path}: schema version {version}, this medpool reads up to {SCHEMA_VERSION}")
        try:
            with transaction(self._conn):
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._conn.execute(statement)
                if version == 1:
                    for table, column in _V2_COLUMNS:
                        self._conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
                self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            _check_columns(self._conn, self.path)
        except (sqlite3.DatabaseError, StoreFormatError) as exc:  # same-named tables of another shape
            self._conn.close()
            if isinstance(exc, StoreFormatError):
                raise
            raise StoreFormatError(f"{self.path}: not a run store this version can use ({exc})") from exc

    # -- runs ---------------------------------------------------------------------------------

    def begin_run(
        self, run_id: str, *, pool_fingerprint: str, data_fingerprint: str, options: Mapping[str, Any]
    ) -> RunInfo:
        """Create the run, or resume it (status back to running, ``resumes`` + 1).

        Raises :class:`RunMismatchError` when resuming with another pool or data: the stored
        results would answer different questions.
        """
        now = utc_now_iso()
        with transaction(self._conn):
            row = self._conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                self._conn.execute(
                    "INSERT INTO runs (run_id, created_at, updated_at, pool_fingerprint,"
                    " data_fingerprint, options_json, status) VALUES (?, ?, ?, ?, ?, ?, 'running')",
                    (
                        run_id,
                        now,
                        now,
                        pool_fingerprint,
                        data_fingerprint,
                        json.dumps(dict(options), sort_keys=True, default=str),
                    ),
                )
            else:
                for name, new in (("pool", pool_fingerprint), ("data", data_fingerprint)):
                    old = row[f"{name}_fingerprint"]
                    if old != new:
                        raise RunMismatchError(
                            f"{self.path}: run {run_id!r} was planned with {name} fingerprint"
                            f" {old}, now {new} (the file changed since); "
                            "start a new run with --out instead of resuming"
                        )
                self._conn.execute(
                    "UPDATE runs SET status = 'running', updated_at = ?, resumes = resumes + 1 WHERE run_id = ?",
                    (now, run_id),
                )
        info = self.get_run(run_id)
        assert info is not None
        return info

    def set_run_status(self, run_id: str, status: RunStatus) -> None:
        with transaction(self._conn):
            cur = self._conn.execute(
                "UPDATE runs SET status = ?, updated_at = ? WHERE run_id = ?",
                (status, utc_now_iso(), run_id),
            )
        if cur.rowcount != 1:
            raise KeyError(f"{self.path}: no run {run_id!r}")

    def get_run(self, run_id: str) -> RunInfo | None:
        row = self._conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else _row_to_run(row, self.path)

    def runs(self) -> list[RunInfo]:
        rows = self._conn.execute("SELECT * FROM runs ORDER BY created_at, run_id").fetchall()
        return [_row_to_run(r, self.path) for r in rows]

    # -- plan ---------------------------------------------------------------------------------

    def save_plan(self, run_id: str, units: Iterable[Unit], answerer: str | None = None) -> int:
        """Add units to the run's plan in one transaction; already planned units are ignored.

        ``answerer`` is the pool model that must answer them (default: each unit's own model).
        Returns how many were new. Safe to call again on resume or to add later stages. ``units``
        is read lazily and inserted in chunks, so a plan of 10⁶ units is never a list here; each
        new unit takes the next ``seq`` (read off the ``plan_by_seq`` index), so plan order has no gaps.
        """
        added = 0
        with transaction(self._conn):
            chunk: list[tuple[str, str, str, str, str, str]] = []
            for unit in units:
                chunk.append((run_id, unit.model, unit.item_id, unit.stage, run_id, answerer or unit.model))
                if len(chunk) == _CHUNK_ROWS:
                    added += self._conn.executemany(_INSERT_PLAN, chunk).rowcount
                    chunk.clear()
            if chunk:
                added += self._conn.executemany(_INSERT_PLAN, chunk).rowcount
        return added

    def planned_units(self, run_id: str) -> list[Unit]:
        rows = self._conn.execute(
            "SELECT model, item_id, stage FROM plan WHERE run_id = ? ORDER BY seq", (run_id,)
        ).fetchall()
        return [Unit(*r) for r in rows]

    def pending_counts(
        self, run_id: str, *, retry_infra_errors: bool = False, stage: str | None = None
    ) -> dict[str, int]:
        """How many units :meth:`pending_units` would return, per model (plan order of first appearance)."""
        rows = self._conn.execute(
            f"SELECT p.model, COUNT(*), MIN(p.seq) AS first FROM {_PENDING_FROM}{_stage_filter(stage)}"
            " GROUP BY p.model ORDER BY first",
            (run_id, int(retry_infra_errors), *((stage,) if stage is not None else ())),
        ).fetchall()
        return {r[0]: r[1] for r in rows}

    def planned_answerer(self, run_id: str, unit: Unit) -> str | None:
        """The pool model the plan assigned to ``unit`` (None: not planned, or a version-1 plan)."""
        row = self._conn.execute(
            f"SELECT answerer FROM plan WHERE {_UNIT_WHERE}", (run_id, unit.model, unit.item_id, unit.stage)
        ).fetchone()
        return row[0] or None if row is not None else None

    def pending_units(self, run_id: str, *, retry_infra_errors: bool = False) -> list[Unit]:
        """Planned units without a finished result, in plan order.

        ``ok`` and ``error`` rows are finished. An ``infra_error`` row is finished too, unless
        ``retry_infra_errors`` — then the unit is pending again and :meth:`record` with the same
        flag replaces that row.
        """
        return list(self.iter_pending_units(run_id, retry_infra_errors=retry_infra_errors))

    def iter_pending_units(
        self,
        run_id: str,
        *,
        retry_infra_errors: bool = False,
        stage: str | None = None,
        models: Iterable[str] | None = None,
    ) -> Iterator[Unit]:
        """:meth:`pending_units`, optionally of one stage and some models, read a page at a time.

        Each page is its own short query (keyset on ``seq``), so no statement stays open while
        results are written between pages — an open read would pin the WAL and let it grow all
        run long. A unit recorded after the iteration started and not yet reached is skipped.
        """
        names = tuple(models) if models is not None else None
        where = _PENDING_FROM + _stage_filter(stage)
        if names is not None:
            where += f" AND p.model IN ({', '.join('?' * len(names))})"
        args = (run_id, int(retry_infra_errors), *((stage,) if stage is not None else ()), *(names or ()))
        after = -1
        while True:
            rows = self._conn.execute(
                f"SELECT p.model, p.item_id, p.stage, p.seq FROM {where} AND p.seq > ? ORDER BY p.seq LIMIT ?",
                (*args, after, _CHUNK_ROWS),
            ).fetchall()
            for row in rows:
                yield Unit(row[0], row[1], row[2])
            if len(rows) < _CHUNK_ROWS:
                return
            after = rows[-1][3]

    # -- results ------------------------------------------------------------------------------

    def record(self, result: Result, *, retry_infra_errors: bool = False) -> bool:
        """Write one result in its own transaction; returns whether it was written.

        A unit that already has a row is left alone (``ON CONFLICT DO NOTHING``) — a finished
        result is never overwritten. With ``retry_infra_errors`` an existing ``infra_error`` row
        (only) is replaced, and the old one moved to ``superseded_infra_errors``.
        """
        return self.record_many([result], retry_infra_errors=retry_infra_errors) == 1

    def record_many(self, results: Iterable[Result], *, retry_infra_errors: bool = False) -> int:
        """Write a small batch atomically (all or none survive a crash); returns rows written.

        Raises :class:`WrongAnswererError` (writing nothing) when a row's ``answered_by`` is not the
        answerer its unit was planned with.
        """
        written = 0
        with transaction(self._conn):
            for r in results:
                params = [*_result_params(r), r.run_id, r.model, r.item_id, r.stage, r.answered_by]
                if retry_infra_errors:
                    self._conn.execute(_SUPERSEDE_INFRA, (utc_now_iso(), r.run_id, r.model, r.item_id, r.stage))
                    cur = self._conn.execute(_INSERT_OR_REPLACE_INFRA, params)
                else:
                    cur = self._conn.execute(_INSERT_NEW, params)
                if cur.rowcount == 0:  # finished already, or refused by the answerer check: which?
                    expected = self.planned_answerer(r.run_id, r.unit)
                    if expected is not None and r.answered_by != expected:
                        raise WrongAnswererError(  # the transaction rolls back what it wrote
                            f"{self.path}: refusing {r.unit}: planned to be answered by {expected!r},"
                            f" got a row from {r.answered_by or '(unknown)'!r}"
                        )
                written += cur.rowcount
        return written

    def get_result(self, run_id: str, unit: Unit) -> Result | None:
        row = self._conn.execute(
            f"{_SELECT_RESULT} WHERE {_UNIT_WHERE}",
            (run_id, unit.model, unit.item_id, unit.stage),
        ).fetchone()
        return None if row is None else _row_to_result(row)

    def results(self, run_id: str) -> list[Result]:
        """All results of a run, sorted by (model, item_id, stage)."""
        return list(self.iter_results(run_id))

    def iter_results(self, run_id: str, *, stage: str | None = None, requests: bool = True) -> Iterator[Result]:
        """:meth:`results` (optionally of one stage), read a page at a time in the same order;
        ``requests=False`` leaves ``request_json`` empty (an export or a scorer does not read it).

        Pages are keyed on the primary key (no statement stays open between them, see
        :meth:`iter_pending_units`), so memory stays one page however large the run.
        """
        select = _SELECT_RESULT if requests else f"SELECT {_SELECT_ANSWER_FIELDS} FROM results"
        for row in self._pages(select, run_id, stage):
            yield _row_to_result(row)

    def iter_result_keys(self, run_id: str, stage: str) -> Iterator[tuple[str, str]]:
        """(model, item_id) of one stage's rows, in :meth:`iter_results`' order, read from the primary
        key's index alone (a reader that has most rows already, see ``pool.score.arrival.ArrivalRows``)."""
        for row in self._pages("SELECT model, item_id, stage FROM results", run_id, stage):
            yield row[0], row[1]

    def _pages(self, select: str, run_id: str, stage: str | None) -> Iterator[Sequence[Any]]:
        """The rows of ``select`` (its columns naming model, item_id and stage) in (model, item_id,
        stage) order, a page at a time."""
        where, args = ("run_id = ? AND stage = ?", (run_id, stage)) if stage is not None else ("run_id = ?", (run_id,))
        cursor = self._conn.cursor()
        cursor.row_factory = None  # plain tuples: cheaper than sqlite3.Row, read by position
        rows = cursor.execute(
            f"{select} WHERE {where} ORDER BY model, item_id, stage LIMIT ?", (*args, _CHUNK_ROWS)
        ).fetchall()
        if not rows:
            return
        names = [d[0] for d in cursor.description]
        model, item_id, stage_at = names.index("model"), names.index("item_id"), names.index("stage")
        while rows:
            yield from rows
            if len(rows) < _CHUNK_ROWS:
                return
            last = rows[-1]
            rows = cursor.execute(
                f"{select} WHERE {where} AND (model, item_id, stage) > (?, ?, ?) "
                "ORDER BY model, item_id, stage LIMIT ?",
                (*args, last[model], last[item_id], last[stage_at], _CHUNK_ROWS),
            ).fetchall()

    def results_after(self, run_id: str, stage: str, rowid: int, limit: int = _CHUNK_ROWS) -> list[tuple[int, Result]]:
        """(rowid, result) of up to ``limit`` rows of one stage written after the row ``rowid``, in
        write order: what a reader tailing a live run has not seen yet. An infra error replaced by a
        retry keeps its rowid, so it does not come back. ``request_json`` is left empty: a reader
        scoring answers does not need the requests, a third of a row's bytes."""
        cursor = self._conn.cursor()
        cursor.row_factory = None
        # The unary + keeps SQLite off the primary key's index: with it, every call scanned all of
        # the run's rows and sorted them (a poll a few times a second made a run quadratic).
        rows = cursor.execute(
            f"SELECT rowid, {_SELECT_ANSWER_FIELDS} FROM results"
            " WHERE rowid > ? AND +run_id = ? AND +stage = ? ORDER BY rowid LIMIT ?",
            (rowid, run_id, stage, limit),
        ).fetchall()
        return [(row[0], _row_to_result(row[1:])) for row in rows]

    def set_extra(self, run_id: str, unit: Unit, extra: Mapping[str, Any]) -> None:
        """Replace a result's ``extra`` JSON (scores and the like, added by later stages)."""
        with transaction(self._conn):
            cur = self._conn.execute(
                f"UPDATE results SET extra = ? WHERE {_UNIT_WHERE}",
                (json.dumps(dict(extra), sort_keys=True), run_id, unit.model, unit.item_id, unit.stage),
            )
        if cur.rowcount != 1:
            raise KeyError(f"{self.path}: no result for {unit} in run {run_id!r}")

    def tallies(self, run_id: str) -> StoreTallies:
        """The counts and medians ``summary.json`` reports, computed in SQL (:mod:`pool.store.tallies`)."""
        return read_tallies(self._conn, run_id)

    def superseded_infra_errors(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._conn.execute(
            "SELECT * FROM superseded_infra_errors WHERE run_id = ? ORDER BY replaced_at", (run_id,)
        ).fetchall()
        return [dict(r) for r in rows]

    # -- model failures -----------------------------------------------------------------------

    def mark_model_failed(self, run_id: str, model: str, reason: str) -> None:
        """Record why a whole model was given up on (e.g. server never came up); last wins."""
        with transaction(self._conn):
            self._conn.execute(
                "INSERT INTO model_failures (run_id, model, reason, marked_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (run_id, model) DO UPDATE SET reason = excluded.reason,"
                " marked_at = excluded.marked_at",
                (run_id, model, reason, utc_now_iso()),
            )

    def failed_models(self, run_id: str) -> dict[str, str]:
        rows = self._conn.execute(
            "SELECT model, reason FROM model_failures WHERE run_id = ? ORDER BY model", (run_id,)
        ).fetchall()
        return {r["model"]: r["reason"] for r in rows}
