"""Execution-checked SQL: run the reference's and the model's SQL on the same synthetic database and
compare what they return (a query) or leave behind (an UPDATE/INSERT/DELETE).

Why execution: two SQL texts that differ in aliases, join order or NVL-vs-COALESCE mean the same, and a
judge model cannot be trusted to see that; the rows can. The suite writes Oracle; the database is
SQLite, built in memory from the schema the question describes (`eval.objective.sql.schema`) with seeded rows
that the reference's filters select (`eval.objective.sql.data`). Dialect translation is a library's job, so
sqlglot (a dependency for this reason alone; >= 30 because the rewrites name its Oracle tree nodes)
transpiles Oracle to SQLite (`eval.objective.sql.dialect`), and SQLite user functions supply what SQLite lacks
(`eval.objective.sql.functions`).

Which SQL counts (`eval.objective.sql.extract` finds the blocks): the first block of the answer that runs --
fenced blocks in order, else bare statements. A block holding UPDATE/INSERT/DELETE/MERGE is a data
change: its changes run in order (its SELECTs, e.g. before/after checks, are skipped) and the result
is every table's contents afterwards. Otherwise the block's first SELECT/WITH that runs is the
query. PL/SQL is never run, and a block holding PL/SQL does not run (its SELECTs are checks of
what the PL/SQL did, not the answer). A broken first attempt is skipped in favour of a later block that
runs, but the first that runs is final: a model cannot offer several and have the best one taken.

Comparison (`eval.objective.sql.compare`): rows as multisets of normalised values, column names ignored and
column order free; in order, up to ties of the sort keys, when the reference's outermost query has
ORDER BY (the reference is run a second time with its sort keys as extra columns to find the ties).

The data: when the reference selects no row (or changes none) on the first database, up to
DATA_ATTEMPTS databases are built from successive seeds and the first where it does is kept; an
empty reference result would let every query of the same shape match. ``details`` says whether the
kept one is informative (``reference_informative``).

Outcomes: match / mismatch (passed True / False), model_sql_invalid and no_sql_found (passed False:
the model gave no usable SQL), reference_not_executable (passed None: the item cannot be checked).
"""

from __future__ import annotations

import functools
import json
import sqlite3
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlglot import exp

from eval._checks import require_str
from eval.objective.sql.compare import Execution, compare, informative, normalise
from eval.objective.sql.data import SyntheticDatabase, build_database, literal_hints
from eval.objective.sql.dialect import SqlDialectError, parse_oracle, to_sqlite
from eval.objective.sql.extract import SqlBlock, find_sql_blocks
from eval.objective.sql.functions import register_oracle_functions
from eval.objective.sql.schema import Schema, SchemaError, schema_for_question

Outcome = Literal["match", "mismatch", "model_sql_invalid", "no_sql_found", "reference_not_executable"]
OUTCOMES: tuple[Outcome, ...] = ("match", "mismatch", "model_sql_invalid", "no_sql_found", "reference_not_executable")
TIME_LIMIT_S = 2.0  # per statement; a runaway cross join is stopped, not waited for
ROW_CAP = 10_000  # a result longer than this is an error, not a comparison
ERROR_CHARS = 300
DATA_ATTEMPTS = 3  # databases (seeded in turn) built until the reference selects or changes rows
DIALECT = "oracle->sqlite"


@dataclass(frozen=True)
class SqlCheck:
    outcome: Outcome
    passed: bool | None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PreparedItem:
    """Everything a check needs that does not depend on the model: built once per item and cached."""

    database: SyntheticDatabase | None
    temporal: frozenset[str]
    reference: Execution | None
    initial_state: Mapping[str, Counter]
    problem: str | None  # why the reference cannot be run
    data_attempts: int = 1  # databases built until the reference returned rows or changed data


class StatementFailed(Exception):
    """A statement could not be transpiled or run; the message says which and why."""


def _truncate(text: str) -> str:
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"


def _deny_attach(action: int, *_: Any) -> int:
    """Model SQL never reaches outside its in-memory database (ATTACH would open a file)."""
    return sqlite3.SQLITE_DENY if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH) else sqlite3.SQLITE_OK


def _open(database: SyntheticDatabase) -> sqlite3.Connection:
    connection = sqlite3.connect(":memory:", isolation_level=None)
    connection.deserialize(database.image)
    register_oracle_functions(connection)
    connection.set_authorizer(_deny_attach)
    return connection


def _run(connection: sqlite3.Connection, sql: str) -> tuple[list[tuple[Any, ...]], int]:
    """(rows, number of columns) of one statement, stopped after TIME_LIMIT_S (progress handler) or
    past ROW_CAP rows."""
    deadline = time.monotonic() + TIME_LIMIT_S
    connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 2_000)
    try:
        cursor = connection.execute(sql)
        rows, width = cursor.fetchmany(ROW_CAP + 1), len(cursor.description or ())
    except sqlite3.OperationalError as error:
        if str(error) == "interrupted":
            raise StatementFailed(f"stopped after the {TIME_LIMIT_S:g} s time limit") from error
        raise StatementFailed(f"SQLite: {error}") from error
    except sqlite3.Error as error:
        raise StatementFailed(f"SQLite: {error}") from error
    finally:
        connection.set_progress_handler(None, 0)
    if len(rows) > ROW_CAP:
        raise StatementFailed(f"more than {ROW_CAP} rows")
    return rows, width


def _transpile(
    text: str, temporal: frozenset[str], now: str, keep_tree: bool
) -> tuple[exp.Expression | None, bool, str]:
    """(the Oracle tree if ``keep_tree``, whether the outermost query has ORDER BY, the SQLite text)."""
    try:
        tree = parse_oracle(text)
        ordered = tree.args.get("order") is not None
        return (tree if keep_tree else None), ordered, to_sqlite(tree, temporal, now, copy=keep_tree)
    except SqlDialectError as error:
        raise StatementFailed(str(error)) from error


def _snapshot(connection: sqlite3.Connection, schema_tables: tuple[str, ...]) -> dict[str, Counter]:
    return {
        name: Counter(tuple(map(normalise, row)) for row in _run(connection, f'SELECT * FROM "{name}"')[0])
        for name in schema_tables
    }


def _order_keys(tree: exp.Expression) -> list[exp.Expression] | None:
    """The outermost ORDER BY's keys as expressions over the FROM clause (aliases and positions
    resolved to their projections), or None when the query is unordered or not a plain SELECT."""
    order = tree.args.get("order")
    if not isinstance(tree, exp.Select) or order is None:
        return None
    projections = tree.expressions
    aliases = {p.alias.lower(): p.this for p in projections if isinstance(p, exp.Alias)}
    keys = []
    for ordered in order.expressions:
        key = ordered.this
        if (
            isinstance(key, exp.Literal)
            and not key.is_string
            and key.this.isdigit()
            and 0 < int(key.this) <= len(projections)
        ):
            key = projections[int(key.this) - 1]
            key = key.this if isinstance(key, exp.Alias) else key
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in aliases:
            key = aliases[key.name.lower()]
        keys.append(key.copy())
    return keys


def _ties(
    connection: sqlite3.Connection, tree: exp.Expression, width: int, temporal: frozenset[str], now: str
) -> tuple[tuple[tuple[Any, ...], ...], tuple[int, ...]] | None:
    """Rerun an ordered query with its sort keys as extra columns: (rows, lengths of equal-key runs)."""
    keys = _order_keys(tree)
    if not keys or tree.args.get("distinct"):
        return None
    widened = tree.copy()
    for index, key in enumerate(keys):
        widened.select(exp.alias_(key, f"__order_key_{index}"), copy=False)
    try:
        rows = _run(connection, to_sqlite(widened, temporal, now))[0]
    except (StatementFailed, SqlDialectError):
        return None
    runs: list[int] = []
    previous = object()
    for row in rows:
        key = tuple(map(normalise, row[width:]))
        if runs and key == previous:
            runs[-1] += 1
        else:
            runs.append(1)
        previous = key
    return tuple(tuple(map(normalise, row[:width])) for row in rows), tuple(runs)


def _run_block(
    block: SqlBlock, database: SyntheticDatabase, temporal: frozenset[str], tables: tuple[str, ...], with_ties: bool
) -> tuple[Execution | None, list[str]]:
    """Execute one block by the rule in the module docstring: (execution or None, errors met).
    Tie runs are the reference's business only (``with_ties``): a model's rows are compared to them."""
    errors: list[str] = []
    changes = [s for s in block.statements if s.kind == "dml"]
    if any(s.kind == "plsql" for s in block.statements):
        return None, [f"block {block.index}: PL/SQL is not executed (only SQL statements are)"]
    connection = _open(database)
    try:
        if changes:
            texts = []
            for statement in changes:
                try:
                    _, _, sql = _transpile(statement.text, temporal, database.now, keep_tree=False)
                    _run(connection, sql)
                    texts.append(sql)
                except StatementFailed as error:
                    return None, [f"block {block.index}: {_truncate(str(error))}"]
            return Execution("state", block.index, ";\n".join(texts), state=_snapshot(connection, tables)), errors
        for statement in (s for s in block.statements if s.kind == "query"):
            try:
                tree, ordered, sql = _transpile(statement.text, temporal, database.now, keep_tree=with_ties)
                raw, width = _run(connection, sql)
            except StatementFailed as error:
                errors.append(f"block {block.index}: {_truncate(str(error))}")
                continue
            rows = tuple(tuple(map(normalise, row)) for row in raw)
            tied = _ties(connection, tree, width, temporal, database.now) if ordered and tree is not None else None
            if tied is not None and Counter(tied[0]) == Counter(rows):
                rows, ties = tied
            else:
                ties = None
            return Execution("query", block.index, sql, rows, width, ordered, ties), errors
        return None, errors
    finally:
        connection.close()


def first_execution(
    blocks: list[SqlBlock],
    database: SyntheticDatabase,
    temporal: frozenset[str],
    tables: tuple[str, ...],
    with_ties: bool = False,
) -> tuple[Execution | None, list[str]]:
    """The first block that runs, and the errors of the blocks before it."""
    errors: list[str] = []
    for block in blocks:
        # Model SQL is untrusted input: whatever fails while running it is that answer's invalid SQL.
        try:
            execution, block_errors = _run_block(block, database, temporal, tables, with_ties)
        except Exception as error:  # noqa: BLE001 -- recorded with its type, never swallowed silently
            execution, block_errors = None, [f"block {block.index}: {type(error).__name__}: {_truncate(str(error))}"]
        errors.extend(block_errors)
        if execution is not None:
            return execution, errors
    return None, errors


def _fixture_key(fixture: Mapping[str, Any] | str | None) -> str | None:
    if fixture is None or isinstance(fixture, str):
        return fixture
    return json.dumps(fixture, ensure_ascii=False, default=str)  # key order kept: it is the column order


@functools.lru_cache(maxsize=256)
def _prepare(
    question: str, reference_answer: str, fixture_key: str | None, fixture_is_ddl: bool, seed: int
) -> PreparedItem:
    fixture = fixture_key if fixture_is_ddl or fixture_key is None else json.loads(fixture_key)
    empty: dict[str, Counter] = {}
    try:
        schema: Schema = schema_for_question(question, fixture)
    except SchemaError as error:
        return PreparedItem(None, frozenset(), None, empty, f"schema: {error}")
    temporal = schema.temporal_columns()
    blocks = find_sql_blocks(reference_answer)
    if not blocks:
        return PreparedItem(None, temporal, None, empty, "no SQL found in the reference answer")
    trees = []
    for statement in (s for block in blocks for s in block.statements if s.kind in ("query", "dml")):
        try:
            trees.append(parse_oracle(statement.text))
        except SqlDialectError:
            continue
    hints, tables = literal_hints(trees), tuple(t.name for t in schema.tables)
    for attempt in range(DATA_ATTEMPTS):
        seed_text = question + "\x00" + reference_answer + (f"\x00{attempt}" if attempt else "")
        database = build_database(schema, hints, seed_text, seed)
        reference, errors = first_execution(blocks, database, temporal, tables, with_ties=True)
        connection = _open(database)
        try:
            initial = _snapshot(connection, tables)
        finally:
            connection.close()
        if reference is None or informative(reference, initial):
            break
    problem = None if reference else "no reference block runs: " + "; ".join(errors or ["no SQL statement in it"])
    return PreparedItem(database, temporal, reference, initial, problem, attempt + 1)


def check_sql(
    question: str,
    reference_answer: str,
    model_answer: str,
    *,
    fixture: Mapping[str, Any] | str | None = None,
    seed: int = 0,
) -> SqlCheck:
    """Run the reference's and the model's SQL on the item's synthetic database and compare them.

    ``fixture`` replaces the schema in the question (DDL text or {"tables": {...}}, see
    `eval.objective.sql.schema.schema_from_fixture`); ``seed`` changes the synthetic rows. The database and
    the reference's result are cached per (question, reference, fixture, seed).
    """
    for name, value in (("question", question), ("reference_answer", reference_answer), ("model_answer", model_answer)):
        require_str(name, value)
    prepared = _prepare(question, reference_answer, _fixture_key(fixture), isinstance(fixture, str), seed)
    details: dict[str, Any] = {"dialect": DIALECT, "seed": seed}
    if prepared.reference is None or prepared.database is None:
        return SqlCheck("reference_not_executable", None, {**details, "reason": prepared.problem})
    reference = prepared.reference
    details.update(
        reference_mode=reference.mode,
        reference_block=reference.block,
        reference_sql=_truncate(reference.sql),
        tables=dict(prepared.database.row_counts),
        data_attempts=prepared.data_attempts,
    )
    blocks = find_sql_blocks(model_answer)
    if not blocks:
        return SqlCheck("no_sql_found", False, {**details, "reason": "no SQL block or statement in the answer"})
    tables = tuple(prepared.database.row_counts)
    model, errors = first_execution(blocks, prepared.database, prepared.temporal, tables)
    if errors:
        details["model_errors"] = errors[:5]
    if model is None:
        return SqlCheck("model_sql_invalid", False, {**details, "reason": "none of the answer's SQL blocks runs"})
    details.update(model_mode=model.mode, model_block=model.block, model_sql=_truncate(model.sql))
    equal, comparison = compare(reference, model, prepared.initial_state)
    details.update(comparison)
    details["reference_informative"] = informative(reference, prepared.initial_state)
    return SqlCheck("match" if equal else "mismatch", equal, details)
