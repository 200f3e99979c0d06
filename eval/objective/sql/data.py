"""Deterministic synthetic rows for a schema, shaped so that a reference query's filters select rows.

A check is only as sharp as its data: on empty or uniform tables every query "matches". So:

- every table gets 60-120 rows (seeded), its key column unique;
- key-like columns (``*_id``, ``*_no``, ``*_code``) draw from one value pool per name, and a column
  that names another table's key (same name, or ``关联<TABLE>`` in its description) draws from that
  table's keys, 90% hits, 5% orphans, 5% NULL -- so joins hit and INNER vs LEFT JOIN differ;
- literals the reference compares a column with (``= 'S20230815001'``, ``IN (...)``, ``LIKE '%肺炎%'``,
  ``>= DATE '2024-01-01'``, ``> 10.0``) are planted in about a third of the rows, so WHERE clauses
  select something and their boundaries (``<`` vs ``<=``) are exercised; example values quoted in a
  column's description ('草稿', '已完成') join the column's vocabulary;
- dates spread over 2023-2024 widened by the planted dates, canonical text (`eval.objective.sql.functions`);
  start/end and admission/discharge pairs are in order in 90% of rows.

The seed is sha256(schema text + reference text + seed), so the same item always builds the same rows.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
import re
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from eval.objective.sql.dates import canonical, parse_temporal, str_to_datetime
from eval.objective.sql.schema import Column, Schema, Table

ROWS_MIN, ROWS_MAX = 60, 120
PLANTED_SHARE = 0.35  # rows that take the reference's literals
NULL_SHARE, ORPHAN_SHARE = 0.05, 0.05
DEFAULT_RANGE = (dt.datetime(2023, 1, 1), dt.datetime(2024, 12, 31))
_KEY_NAME = re.compile(r"(^id$|_id$|id$|_no$|_code$|^code$|_key$)", re.IGNORECASE)
_QUOTED = re.compile(r"['‘’“”\"]([^'‘’“”\"]{1,40})['‘’“”\"]")
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike)
_WRAPPERS = (exp.Trim, exp.Upper, exp.Lower, exp.Paren, exp.Cast, exp.Coalesce, exp.Anonymous)
_ORDERED_PAIRS = (("start", "end"), ("begin", "end"), ("admi", "discharge"), ("order_time", "exec_time"))
_PLAIN_ALTERNATIVES = re.compile(r"[^\\^$.*+?()\[\]{}|]+(\|[^\\^$.*+?()\[\]{}|]+)*")


@dataclass(frozen=True)
class SyntheticDatabase:
    """A built database as bytes (``sqlite3.Connection.deserialize`` restores it) and its clock."""

    image: bytes
    now: str  # what SYSDATE / SYSTIMESTAMP read: noon of the last day of the date range
    row_counts: Mapping[str, int]


def _column_of(node: exp.Expression) -> exp.Column | None:
    while isinstance(node, _WRAPPERS) and not isinstance(node, exp.Column):
        node = node.this if not isinstance(node, exp.Anonymous) else (node.expressions[0] if node.expressions else None)
        if node is None:
            return None
    return node if isinstance(node, exp.Column) else None


def _literal_value(node: exp.Expression) -> Any:
    """A comparison's constant side as a Python value (dates canonical); None if not a constant."""
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return -float(node.this.this)
    if isinstance(node, exp.Literal):
        return node.this if node.is_string else float(node.this)
    if isinstance(node, (exp.StrToDate, exp.StrToTime)) and isinstance(node.this, exp.Literal):
        fmt = node.args.get("format")
        try:
            return str_to_datetime(node.this.this, fmt.this if isinstance(fmt, exp.Literal) else None)
        except ValueError:
            return None
    if isinstance(node, exp.DateStrToDate) and isinstance(node.this, exp.Literal):
        moment = parse_temporal(node.this.this)
        return canonical(moment) if moment else None
    return None


def _like_values(pattern: str) -> list[str]:
    """'%肺炎%' -> ['肺炎', 'x肺炎x']: an exact hit and one that only the wildcard reaches."""
    return [pattern.replace("%", "").replace("_", "x"), pattern.replace("%", "x").replace("_", "x")]


def literal_hints(trees: Iterable[exp.Expression]) -> dict[str, list[Any]]:
    """{column name (case-folded): literals compared with it} over the Oracle trees of the reference."""
    hints: dict[str, list[Any]] = {}

    def add(column: exp.Column | None, values: Iterable[Any]) -> None:
        if column is not None:
            bucket = hints.setdefault(column.name.lower(), [])
            bucket.extend(v for v in values if v is not None and v not in bucket)

    for tree in trees:
        for node in tree.find_all(exp.StrPosition, exp.Anonymous):  # INSTR(col, 'text') > 0
            column, needle = (
                (node.this, node.args.get("substr"))
                if isinstance(node, exp.StrPosition)
                else ((node.expressions + [None, None])[:2] if node.name.upper() == "INSTR" else (None, None))
            )
            if isinstance(column, exp.Column) and isinstance(needle, exp.Literal) and needle.is_string:
                add(column, [f"x{needle.this}x"])
        for node in tree.find_all(*_COMPARISONS, exp.In, exp.Between, exp.RegexpLike):
            if isinstance(node, exp.In):
                add(_column_of(node.this), [_literal_value(v) for v in node.expressions])
            elif isinstance(node, exp.Between):
                add(_column_of(node.this), [_literal_value(node.args["low"]), _literal_value(node.args["high"])])
            elif isinstance(node, exp.RegexpLike):
                pattern = _literal_value(node.expression)
                if isinstance(pattern, str) and _PLAIN_ALTERNATIVES.fullmatch(pattern):
                    add(_column_of(node.this), [f"x{word}" for word in pattern.split("|")])
            else:
                for side, other in ((node.this, node.expression), (node.expression, node.this)):
                    value = _literal_value(other)
                    if value is None:
                        continue
                    if isinstance(node, (exp.Like, exp.ILike)) and isinstance(value, str):
                        add(_column_of(side), _like_values(value))
                    elif isinstance(value, float) and isinstance(node, (exp.GT, exp.GTE, exp.LT, exp.LTE)):
                        step = 1.0 if value.is_integer() else 0.1
                        add(_column_of(side), [value, value - step, value + step])
                    else:
                        add(_column_of(side), [value])
    return hints


class _Generator:
    """Column values for one schema; every draw goes through one seeded ``random.Random``."""

    def __init__(self, schema: Schema, hints: Mapping[str, list[Any]], rng: random.Random) -> None:
        self.schema, self.hints, self.rng = schema, hints, rng
        moments = [
            m for values in hints.values() for v in values if (m := parse_temporal(v)) and 1990 <= m.year <= 2035
        ]
        lo = min([DEFAULT_RANGE[0], *(m - dt.timedelta(days=180) for m in moments)])
        hi = max([DEFAULT_RANGE[1], *(m + dt.timedelta(days=180) for m in moments)])
        self.range = (
            lo.replace(hour=0, minute=0, second=0, microsecond=0),
            hi.replace(hour=0, minute=0, second=0, microsecond=0),
        )
        self.sizes = {
            t.name: len(t.rows) if t.rows is not None else rng.randint(ROWS_MIN, ROWS_MAX) for t in schema.tables
        }
        self.pools: dict[str, list[Any]] = {}  # column key -> key values
        self.parents: dict[tuple[str, str], str] = {}  # (table, column key) -> pool key
        self.parent_tables: dict[tuple[str, str], str] = {}  # (table, column key) -> the table it points at
        self.indexes: dict[str, dict[Any, tuple[Any, ...]]] = {}

    def key_pools(self) -> None:
        for table in self.schema.tables:
            key = table.primary_key
            if key is None:
                continue
            if table.rows is not None:
                index = table.columns.index(key)
                self.pools[key.key] = [row[index] for row in table.rows]
            else:
                self.pools[key.key] = self._fresh_keys(key, self.sizes[table.name])
        for table in self.schema.tables:
            for column in table.columns:
                if column.primary_key:
                    continue
                parent = self._parent_table(table, column)
                if parent:
                    self.parents[(table.name, column.key)] = parent.primary_key.key  # type: ignore[union-attr]
                    self.parent_tables[(table.name, column.key)] = parent.name
                elif _KEY_NAME.search(column.name):
                    size = max(8, max(self.sizes.values()) // 3)
                    self.pools.setdefault(column.key, self._fresh_keys(column, size))
                    self.parents[(table.name, column.key)] = column.key

    def _fresh_keys(self, column: Column, count: int) -> list[Any]:
        planted = [v for v in self.hints.get(column.key, []) if not isinstance(v, float) or column.family != "text"]
        if column.family in ("integer", "real"):
            fresh: list[Any] = list(range(1, count + 1))
            planted = [int(v) if float(v).is_integer() else v for v in planted if isinstance(v, (int, float))]
        else:
            prefix = "".join(part[0] for part in column.name.split("_") if part).upper() or "K"
            fresh = [f"{prefix}{i:05d}" for i in range(1, count + 1)]
            planted = [str(v) for v in planted]
        keys = list(dict.fromkeys(planted[:count] + fresh))[:count]
        self.rng.shuffle(keys)
        return keys

    def _parent_table(self, table: Table, column: Column) -> Table | None:
        """The table whose key this column holds: same name as its key, or named after 关联 in the description."""
        for other in self.schema.tables:
            if other is table or other.primary_key is None:
                continue
            named = re.search(rf"关联\s*{re.escape(other.name)}\b", column.description, re.IGNORECASE)
            if other.primary_key.key == column.key or (_KEY_NAME.search(column.name) and named):
                return other
        return None

    def value(self, table: Table, column: Column, planted: bool) -> Any:
        rng, hints = self.rng, self.hints.get(column.key, [])
        pool_key = self.parents.get((table.name, column.key))
        if planted and hints and rng.random() < 0.8:
            return _coerce(column, rng.choice(hints))
        if rng.random() < NULL_SHARE:
            return None
        if pool_key is not None:
            pool = self.pools[pool_key]
            if rng.random() < ORPHAN_SHARE:
                return f"ORPHAN{rng.randint(1, 999):03d}" if column.family == "text" else -rng.randint(1, 999)
            return rng.choice(pool)
        return self._free_value(column)

    def _free_value(self, column: Column) -> Any:
        rng, (lo, hi) = self.rng, self.range
        if column.family in ("date", "timestamp"):
            moment = lo + dt.timedelta(days=rng.randint(0, (hi - lo).days))
            if column.family == "timestamp":
                moment += dt.timedelta(seconds=rng.randint(0, 86399))
            return canonical(moment)
        digits = re.findall(r"\d+", column.sql_type)
        precision, scale = (int(digits[0]) if digits else 3), (int(digits[1]) if len(digits) > 1 else 0)
        if column.family == "integer":
            return rng.randint(0, 1 if precision == 1 else min(10**precision - 1, 200))
        if column.family == "real":
            top = 1.0 if precision - scale <= 1 else float(min(10 ** (precision - scale) - 1, 200))
            return round(rng.uniform(0, top), scale or 2)
        if re.search(r"YYYY|HH24|yyyy", column.description):
            moment = lo + dt.timedelta(days=rng.randint(0, (hi - lo).days), seconds=rng.randint(0, 86399))
            return canonical(moment) if rng.random() < 0.85 else rng.choice(["2023/13/45 25:61:00", "20230101", "N/A"])
        examples = [m for m in _QUOTED.findall(column.description) if not re.search(r"YYYY|\(|\)", m)]
        vocabulary = examples + [f"{column.name.lower()}_{k}" for k in range(1, 7)]
        return rng.choice(vocabulary)

    def rows(self, table: Table, done: Mapping[str, list[tuple[Any, ...]]]) -> list[tuple[Any, ...]]:
        """The table's rows; a row whose key is a planted literal is a planted row, and a row that
        points at a parent row copies the parent's other key columns it shares (80%), so a join on
        two keys (surgery_id and patient_id) finds consistent pairs."""
        if table.rows is not None:
            return [tuple(row) for row in table.rows]
        count, key = self.sizes[table.name], table.primary_key
        key_hints = set(map(str, self.hints.get(key.key, []))) if key else set()
        out = []
        for index in range(count):
            key_value = self.pools[key.key][index] if key else None
            planted = str(key_value) in key_hints or self.rng.random() < PLANTED_SHARE
            row = [key_value if c is key else self.value(table, c, planted) for c in table.columns]
            self._inherit(table, row, done)
            self._order_dates(table, row)
            out.append(tuple(row))
        return out

    def _inherit(self, table: Table, row: list[Any], done: Mapping[str, list[tuple[Any, ...]]]) -> None:
        for position, column in enumerate(table.columns):
            parent = self.schema.table(self.parent_tables.get((table.name, column.key), ""))
            if parent is None or parent.name not in done:
                continue
            parent_row = self._index(parent, done).get(row[position])
            if parent_row is None:
                continue
            parent_keys = {c.key: i for i, c in enumerate(parent.columns) if not c.primary_key}
            for other, sibling in enumerate(table.columns):
                shared = sibling.key in parent_keys and (table.name, sibling.key) in self.parents
                if (
                    other != position
                    and shared
                    and row[other] not in self.hints.get(sibling.key, [])
                    and self.rng.random() < 0.8
                ):
                    row[other] = parent_row[parent_keys[sibling.key]]

    def _order_dates(self, table: Table, row: list[Any]) -> None:
        """start <= end, admission <= discharge in 90% of rows: real records mostly are, and a
        check for the anomalies then selects the few that are not."""
        temporal = [(i, c.key) for i, c in enumerate(table.columns) if c.family in ("date", "timestamp")]
        for early_word, late_word in _ORDERED_PAIRS:
            early = [i for i, name in temporal if early_word in name]
            late = [i for i, name in temporal if late_word in name]
            for i, j in zip(early, late, strict=False):
                if row[i] is not None and row[j] is not None and row[j] < row[i] and self.rng.random() < 0.9:
                    row[i], row[j] = row[j], row[i]

    def _index(self, table: Table, done: Mapping[str, list[tuple[Any, ...]]]) -> dict[Any, tuple[Any, ...]]:
        if table.name not in self.indexes:
            position = table.columns.index(table.primary_key)  # type: ignore[arg-type]
            self.indexes[table.name] = {row[position]: row for row in done[table.name]}
        return self.indexes[table.name]

    def generate(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every table's rows, parents before the tables pointing at them (schema order otherwise)."""
        done: dict[str, list[tuple[Any, ...]]] = {}
        pending = list(self.schema.tables)
        while pending:
            ready = [
                t
                for t in pending
                if all(p in done or p == t.name for (child, _), p in self.parent_tables.items() if child == t.name)
            ] or pending[:1]
            table = ready[0]
            done[table.name] = self.rows(table, done)
            pending.remove(table)
        return done


def _coerce(column: Column, value: Any) -> Any:
    """A planted literal in the column's own form: canonical dates, whole numbers as int, text as text."""
    if column.family in ("date", "timestamp"):
        moment = parse_temporal(value)
        return canonical(moment) if moment else value
    if column.family == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if column.family == "text" and isinstance(value, float):
        return str(int(value)) if value.is_integer() else str(value)
    return value


def _affinity(column: Column) -> str:
    return {"integer": "INTEGER", "real": "REAL"}.get(column.family, "TEXT")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def build_database(schema: Schema, hints: Mapping[str, list[Any]], seed_text: str, seed: int = 0) -> SyntheticDatabase:
    """Create, fill and serialise the database (plus a one-row DUAL table unless the schema has one)."""
    digest = hashlib.sha256(f"{seed_text}\x00{seed}".encode()).digest()
    generator = _Generator(schema, hints, random.Random(int.from_bytes(digest[:8], "big")))
    generator.key_pools()
    connection = sqlite3.connect(":memory:")
    try:
        counts, generated = {}, generator.generate()
        for table in schema.tables:
            columns = ", ".join(f"{_quote(c.name)} {_affinity(c)}" for c in table.columns)
            connection.execute(f"CREATE TABLE {_quote(table.name)} ({columns})")
            rows = generated[table.name]
            marks = ", ".join("?" for _ in table.columns)
            connection.executemany(f"INSERT INTO {_quote(table.name)} VALUES ({marks})", rows)
            counts[table.name] = len(rows)
            for column in table.columns:
                if column.primary_key or (table.name, column.key) in generator.parents:
                    index = _quote(f"ix_{table.name}_{column.name}")
                    connection.execute(f"CREATE INDEX {index} ON {_quote(table.name)} ({_quote(column.name)})")
        if schema.table("DUAL") is None:
            connection.execute("CREATE TABLE DUAL (DUMMY TEXT)")
            connection.execute("INSERT INTO DUAL VALUES ('X')")
        connection.commit()
        now = canonical(generator.range[1].replace(hour=12))
        return SyntheticDatabase(connection.serialize(), now, counts)
    finally:
        connection.close()
