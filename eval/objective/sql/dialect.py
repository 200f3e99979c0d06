"""Oracle SQL -> SQLite SQL: sqlglot's transpiler plus a few rewrites of its tree.

Dialect translation is a library's job, so sqlglot parses the Oracle text (``read="oracle"``) and
generates SQLite. What it cannot express in SQLite is rewritten on the parsed tree into calls of the
user functions in `eval.objective.sql.functions`, never by string surgery:

- date arithmetic: Oracle ``date ± n`` adds days and ``date - date`` counts days, but SQLite would
  add numbers to text. Which operands are dates is known from the schema (date/timestamp columns),
  from date-valued calls (TO_DATE, SYSDATE, TRUNC, ADD_MONTHS...) and from aliases of such values;
  those additions become ``ORA_DATE_ADD`` / ``ORA_DAYS_BETWEEN``;
- ``SYSDATE`` / ``SYSTIMESTAMP`` / ``CURRENT_DATE``: the pinned clock ``now`` (a check must not
  depend on the day it runs); ``DATE 'x'`` and ``CAST(x AS DATE)``: canonical date text;
- ``TO_CHAR(x, mask)`` (sqlglot drops the mask for SQLite), ``EXTRACT``, ``REGEXP_LIKE`` with flags,
  ``LISTAGG ... WITHIN GROUP (ORDER BY ...)`` (SQLite 3.40 has no ordered aggregates),
  ``DBMS_LOB.INSTR/SUBSTR/GETLENGTH``, ``VALIDATE_CONVERSION(x AS type, mask)``; ``a || b`` and
  ``TRIM`` follow Oracle's rule that '' is NULL;
- ``UPDATE t v SET v.col = ...``: the target column loses its qualifier, which SQLite rejects;
- ``WHERE ROWNUM <= n`` (also ``<``, ``=`` 1) becomes ``LIMIT n``; another ROWNUM is ROW_NUMBER().
  Oracle numbers rows before ORDER BY, LIMIT after it: the same rows when the query's order is
  total, as a top-n query's is meant to be.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError, SqlglotError

_DATE_VALUED = (
    exp.StrToDate,
    exp.StrToTime,
    exp.DateStrToDate,
    exp.CurrentDate,
    exp.CurrentTimestamp,
    exp.Systimestamp,
    exp.DateTrunc,
    exp.TimestampTrunc,
    exp.AddMonths,
    exp.LastDay,
)
_DATE_FUNCTIONS = frozenset(
    {
        "ORA_DATE_ADD",
        "ORA_DATE_ADD_INTERVAL",
        "ORA_CANON_TS",
        "ADD_MONTHS",
        "LAST_DAY",
        "TRUNC",
        "SYSDATE",
        "SYSTIMESTAMP",
        "LOCALTIMESTAMP",
        "NEXT_DAY",
    }
)
_NOW_FUNCTIONS = frozenset({"SYSDATE", "SYSTIMESTAMP", "LOCALTIMESTAMP", "CURRENT_TIMESTAMP"})
_LOB_FUNCTIONS = {"INSTR": "INSTR", "SUBSTR": "SUBSTR", "GETLENGTH": "LENGTH"}

logging.getLogger("sqlglot").setLevel(logging.ERROR)  # unsupported-feature warnings are handled below


class SqlDialectError(ValueError):
    """The text is not Oracle SQL that sqlglot can parse (the message carries sqlglot's reason)."""


def parse_oracle(sql: str) -> exp.Expression:
    """One Oracle statement -> sqlglot tree; SqlDialectError when it does not parse or is several."""
    try:
        trees = [tree for tree in sqlglot.parse(sql, read="oracle", error_level=ErrorLevel.RAISE) if tree is not None]
    except (ParseError, SqlglotError) as error:
        raise SqlDialectError(f"not parseable as Oracle SQL: {str(error).splitlines()[0][:200]}") from error
    if len(trees) != 1:
        raise SqlDialectError(f"expected one statement, found {len(trees)}")
    return trees[0]


def _call(name: str, *args: exp.Expression) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def is_temporal(node: exp.Expression, temporal_names: frozenset[str]) -> bool:
    """Whether ``node`` is date-valued in Oracle (see the module docstring for what counts)."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Column):
        return node.name.lower() in temporal_names
    if isinstance(node, _DATE_VALUED):
        return True
    if isinstance(node, exp.Cast):
        return node.to.this in (exp.DataType.Type.DATE, exp.DataType.Type.TIMESTAMP, exp.DataType.Type.DATETIME)
    if isinstance(node, exp.Anonymous):
        return node.name.upper() in _DATE_FUNCTIONS and (
            node.name.upper() != "TRUNC" or is_temporal(node.expressions[0], temporal_names)
        )
    if isinstance(node, (exp.Coalesce, exp.Greatest, exp.Least, exp.Max, exp.Min, exp.Case, exp.If)):
        return any(
            is_temporal(child, temporal_names)
            for child in node.iter_expressions()
            if not isinstance(child, (exp.Literal, exp.Null))
        )
    if isinstance(node, exp.Window):
        return node.this.name.upper() in ("LAG", "LEAD", "FIRST_VALUE", "LAST_VALUE", "MAX", "MIN") and any(
            is_temporal(arg, temporal_names) for arg in node.this.iter_expressions()
        )
    if isinstance(node, exp.Add):
        return is_temporal(node.this, temporal_names) != is_temporal(node.expression, temporal_names)
    if isinstance(node, exp.Sub):
        return is_temporal(node.this, temporal_names) and not is_temporal(node.expression, temporal_names)
    return False


def _by_type(tree: exp.Expression) -> dict[type, list[exp.Expression]]:
    """Every node of the tree grouped by class, in one walk (the rewrites below share it; a rewrite
    moves the children of the node it replaces, so the groups stay valid)."""
    groups: dict[type, list[exp.Expression]] = {}
    for node in tree.walk():
        groups.setdefault(type(node), []).append(node)
    return groups


def _nodes(groups: dict[type, list[exp.Expression]], *types: type) -> list[exp.Expression]:
    return [node for kind in types for node in groups.get(kind, ())]


def _temporal_aliases(groups: dict[type, list[exp.Expression]], temporal_names: frozenset[str]) -> frozenset[str]:
    """Add the names of aliases and CTE/subquery columns that hold a date (two passes reach aliases of aliases)."""
    names = set(temporal_names)
    for _ in range(2):
        for alias in _nodes(groups, exp.Alias):
            if is_temporal(alias.this, frozenset(names)):
                names.add(alias.alias.lower())
    return frozenset(names)


def _rewrite_arithmetic(groups: dict[type, list[exp.Expression]], names: frozenset[str]) -> None:
    """Date ± number, number + date, date - date -> ORA_* calls, deepest first so nesting composes."""
    nodes = sorted(_nodes(groups, exp.Add, exp.Sub), key=lambda node: -node.depth)
    for node in nodes:
        left, right = node.this, node.expression
        left_date, right_date = is_temporal(left, names), is_temporal(right, names)
        if not (left_date or right_date) or (isinstance(node, exp.Sub) and right_date and not left_date):
            continue  # number - date is an error in Oracle too: left for SQLite to compute as numbers
        if isinstance(node, exp.Sub) and left_date and right_date:
            node.replace(_call("ORA_DAYS_BETWEEN", left, right))
            continue
        date, amount = (left, right) if left_date else (right, left)
        negative = isinstance(node, exp.Sub)
        if isinstance(amount, exp.Interval):
            value = amount.this if not negative else exp.Neg(this=exp.Paren(this=amount.this))
            unit = exp.Literal.string(amount.unit.name if amount.unit else "DAY")
            node.replace(_call("ORA_DATE_ADD_INTERVAL", date, value, unit))
        else:
            node.replace(_call("ORA_DATE_ADD", date, exp.Neg(this=exp.Paren(this=amount)) if negative else amount))


def _rewrite_rownum(select: exp.Select) -> None:
    where = select.args.get("where")
    if where is None:
        return
    conjuncts = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
    for conjunct in conjuncts:
        if not isinstance(conjunct, (exp.LTE, exp.LT, exp.EQ)) or not isinstance(conjunct.expression, exp.Literal):
            continue
        if not (isinstance(conjunct.this, exp.Column) and conjunct.this.name.upper() == "ROWNUM"):
            continue
        limit = int(float(conjunct.expression.this)) - (1 if isinstance(conjunct, exp.LT) else 0)
        if isinstance(conjunct, exp.EQ) and limit != 1:
            continue
        remaining = [c for c in conjuncts if c is not conjunct]
        select.set("where", exp.Where(this=exp.and_(*remaining)) if remaining else None)
        select.limit(max(limit, 0), copy=False)
        return


def _rewrite_calls(groups: dict[type, list[exp.Expression]], now: str) -> None:
    def clock() -> exp.Expression:  # a call, not a bare literal, so that date arithmetic sees a date
        return _call("ORA_CANON_TS", exp.Literal.string(now))

    for node in _nodes(groups, exp.CurrentDate, exp.CurrentTimestamp, exp.Systimestamp):
        node.replace(clock())
    for node in _nodes(groups, exp.Anonymous):
        if node.name.upper() in _NOW_FUNCTIONS:
            node.replace(clock())
        elif (
            node.name.upper() == "VALIDATE_CONVERSION"
            and node.expressions
            and isinstance(node.expressions[0], exp.Alias)
        ):
            target = node.expressions[0]  # VALIDATE_CONVERSION(expr AS type[, mask]) parses as an alias
            node.replace(
                _call(
                    "ORA_VALIDATE_CONVERSION",
                    target.this,
                    exp.Literal.string(target.alias.upper()),
                    *(node.expressions[1:2] or [exp.Null()]),
                )
            )
    for node in _nodes(groups, exp.Column):
        if node.name.upper() in ("SYSDATE", "SYSTIMESTAMP", "LOCALTIMESTAMP") and not node.table:
            node.replace(clock())
    for node in _nodes(groups, exp.DateStrToDate):
        node.replace(_call("ORA_CANON_TS", node.this))
    for node in _nodes(groups, exp.Cast):
        if node.to.this in (exp.DataType.Type.DATE, exp.DataType.Type.TIMESTAMP, exp.DataType.Type.DATETIME):
            node.replace(_call("ORA_CANON_TS", node.this))
    for node in _nodes(groups, exp.ToChar):
        node.replace(_call("ORA_TO_CHAR", node.this, node.args.get("format") or exp.Null()))
    for node in _nodes(groups, exp.Extract):
        node.replace(_call("ORA_EXTRACT", exp.Literal.string(node.this.name), node.expression))
    for node in _nodes(groups, exp.RegexpLike):
        node.replace(
            _call("REGEXP_LIKE", node.this, node.expression, *([node.args["flag"]] if node.args.get("flag") else []))
        )
    for node in _nodes(groups, exp.Dot):
        call = node.expression
        if (
            isinstance(node.this, exp.Identifier)
            and node.this.name.upper() == "DBMS_LOB"
            and isinstance(call, exp.Anonymous)
        ):
            node.replace(_call(_LOB_FUNCTIONS.get(call.name.upper(), call.name), *call.expressions))
    empty = exp.Literal.string("")
    for node in _nodes(groups, exp.DPipe):  # Oracle: NULL || 'a' = 'a', and '' is NULL
        joined = exp.DPipe(
            this=exp.Coalesce(this=node.this, expressions=[empty.copy()]),
            expression=exp.Coalesce(this=node.expression, expressions=[empty.copy()]),
        )
        node.replace(exp.Nullif(this=joined, expression=empty.copy()))
    for node in _nodes(groups, exp.Trim):
        wrapper = exp.Nullif(expression=empty.copy())
        node.replace(wrapper)
        wrapper.set("this", node)


def _rewrite_listagg(groups: dict[type, list[exp.Expression]]) -> None:
    for node in _nodes(groups, exp.GroupConcat):
        inner, keys = node.this, []
        if isinstance(inner, exp.Order):
            keys = [
                arg
                for ordered in inner.expressions
                for arg in (ordered.this, exp.Literal.number(int(bool(ordered.args.get("desc")))))
            ]
            inner = inner.this
        distinct = isinstance(inner, exp.Distinct)
        value = inner.expressions[0] if distinct else inner
        separator = node.args.get("separator") or exp.Literal.string("")
        node.replace(_call("ORA_LISTAGG", exp.Literal.number(int(distinct)), value, separator, *keys))


def _unqualify_update_targets(tree: exp.Expression) -> None:
    """Oracle's ``UPDATE t v SET v.col = ...``: SQLite takes the alias but not a qualified target."""
    if isinstance(tree, exp.Update):
        for assignment in tree.expressions:
            if isinstance(assignment, exp.EQ) and isinstance(assignment.this, exp.Column) and assignment.this.table:
                assignment.set("this", exp.column(assignment.this.name, quoted=assignment.this.this.quoted))


def to_sqlite(tree: exp.Expression, temporal_names: Iterable[str], now: str, *, copy: bool = True) -> str:
    """The SQLite text of one parsed Oracle statement; ``copy=False`` rewrites ``tree`` in place
    (cheaper, for a tree the caller will not read again)."""
    if copy:
        tree = tree.copy()
    _unqualify_update_targets(tree)
    groups = _by_type(tree)
    names = _temporal_aliases(groups, frozenset(name.lower() for name in temporal_names))
    _rewrite_calls(groups, now)
    _rewrite_arithmetic(groups, names)
    _rewrite_listagg(groups)
    for select in _nodes(groups, exp.Select):
        _rewrite_rownum(select)
    for node in _nodes(groups, exp.Column):
        if node.name.upper() == "ROWNUM" and not node.table and node.parent is not None:
            node.replace(exp.Window(this=exp.RowNumber(), over="OVER"))
    try:
        return tree.sql(dialect="sqlite", unsupported_level=ErrorLevel.IGNORE)
    except SqlglotError as error:
        raise SqlDialectError(f"cannot be written as SQLite: {str(error)[:200]}") from error
