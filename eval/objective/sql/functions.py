"""Oracle functions SQLite lacks, as SQLite user functions (registered per connection).

sqlglot transpiles Oracle to SQLite but leaves some calls as they are (``STR_TO_DATE``, ``ADD_MONTHS``,
``REGEXP_SUBSTR``...), and `eval.objective.sql.dialect` rewrites a few more into calls named ``ORA_*`` here
(date arithmetic, ``TO_CHAR`` with a format, ``LISTAGG``, ``EXTRACT``). The date functions are in
`eval.objective.sql.dates`; this module adds regular expressions, padding and aggregates, and registers all.
"""

from __future__ import annotations

import re
import sqlite3
import statistics
from collections.abc import Callable
from typing import Any

from eval.objective.sql.dates import (
    add_months,
    date_add,
    date_add_interval,
    days_between,
    extract,
    last_day,
    months_between,
    str_to_datetime,
    to_canonical,
    to_char,
    trunc,
    truncate_date,
    validate_conversion,
)

_WHOLE_POSIX_CLASSES = {"[[:alpha:]]": r"[^\W\d_]", "[[:alnum:]]": r"[^\W_]"}  # any script's letters
_POSIX_CLASSES = {
    "[:digit:]": r"0-9",
    "[:alpha:]": r"a-zA-Z",
    "[:alnum:]": r"a-zA-Z0-9",
    "[:space:]": r"\s",
    "[:upper:]": r"A-Z",
    "[:lower:]": r"a-z",
    "[:punct:]": r"!-/:-@\[-`{-~",
}


def _nullsafe(function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any) -> Any:
        return None if args and args[0] is None else function(*args)

    return wrapper


# --- text and regular expressions ---------------------------------------------------------------


def _pattern(pattern: str, flags: Any = None) -> re.Pattern[str]:
    """Oracle POSIX pattern -> Python: bracket classes like [[:digit:]] mapped; flags i, c, n, m, x."""
    for posix, python in (*_WHOLE_POSIX_CLASSES.items(), *_POSIX_CLASSES.items()):
        pattern = pattern.replace(posix, python)
    options = 0
    for flag in str(flags or ""):
        options = {
            "i": options | re.IGNORECASE,
            "c": options & ~re.IGNORECASE,
            "n": options | re.DOTALL,
            "m": options | re.MULTILINE,
            "x": options | re.VERBOSE,
        }.get(flag, options)
    return re.compile(pattern, options)


def regexp_like(value: Any, pattern: Any, flags: Any = None) -> int | None:
    if value is None or pattern is None:
        return None
    return int(_pattern(str(pattern), flags).search(str(value)) is not None)


def regexp_substr(value: Any, pattern: Any, position: int = 1, occurrence: int = 1, flags: Any = None) -> str | None:
    if value is None or pattern is None:
        return None
    matches = list(_pattern(str(pattern), flags).finditer(str(value), int(position) - 1))
    return matches[int(occurrence) - 1].group(0) if len(matches) >= int(occurrence) else None


def regexp_instr(value: Any, pattern: Any, position: int = 1, occurrence: int = 1) -> int | None:
    if value is None or pattern is None:
        return None
    matches = list(_pattern(str(pattern)).finditer(str(value), int(position) - 1))
    return matches[int(occurrence) - 1].start() + 1 if len(matches) >= int(occurrence) else 0


def regexp_replace(
    value: Any, pattern: Any, replacement: Any = "", position: int = 1, occurrence: int = 0, flags: Any = None
) -> str | None:
    """Oracle's \\1 back-references are Python's; occurrence 0 replaces all."""
    if value is None or pattern is None:
        return value
    text, start = str(value), int(position) - 1
    compiled, replacement = _pattern(str(pattern), flags), str(replacement or "")
    if int(occurrence) == 0:
        return text[:start] + compiled.sub(replacement, text[start:])
    matches = list(compiled.finditer(text, start))
    if len(matches) < int(occurrence):
        return text
    hit = matches[int(occurrence) - 1]
    return text[: hit.start()] + hit.expand(replacement) + text[hit.end() :]


def regexp_count(value: Any, pattern: Any, position: int = 1, flags: Any = None) -> int | None:
    if value is None or pattern is None:
        return None
    return sum(1 for _ in _pattern(str(pattern), flags).finditer(str(value), int(position) - 1))


def pad(left: bool) -> Callable[..., str | None]:
    def padded(value: Any, width: Any, fill: Any = " ") -> str | None:
        if value is None or width is None:
            return None
        text, width, fill = str(value), int(width), str(fill or " ")
        if len(text) >= width:
            return text[:width]
        filler = (fill * width)[: width - len(text)]
        return filler + text if left else text + filler

    return padded


# --- aggregates ---------------------------------------------------------------------------------


class ListAgg:
    """ORA_LISTAGG(distinct, value, separator, key1, descending1, key2, descending2, ...): LISTAGG ...
    WITHIN GROUP (ORDER BY keys); NULL values skipped; no keys -> arrival order."""

    def __init__(self) -> None:
        self.items: list[tuple[list[tuple[int, Any]], str]] = []
        self.separator, self.distinct = ",", False

    def step(self, distinct: Any, value: Any, separator: Any, *keys: Any) -> None:
        self.distinct, self.separator = bool(distinct), "" if separator is None else str(separator)
        if value is None:
            return
        sort_key = [
            (key is None, key if not desc else _Reversed(key)) for key, desc in zip(keys[::2], keys[1::2], strict=False)
        ]
        self.items.append((sort_key, str(value)))  # type: ignore[arg-type]

    def finalize(self) -> str | None:
        ordered = [text for _, text in sorted(self.items, key=lambda item: item[0])]
        if self.distinct:
            ordered = list(dict.fromkeys(ordered))
        return self.separator.join(ordered) if ordered else None


class _Reversed:
    """Sort key wrapper that inverts comparisons (for DESC keys of mixed types)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: _Reversed) -> bool:
        return other.value < self.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and other.value == self.value


class _Collect:
    function: Callable[[list[float]], float] = staticmethod(statistics.median)  # type: ignore[assignment]
    minimum = 1

    def __init__(self) -> None:
        self.values: list[float] = []

    def step(self, value: Any) -> None:
        if value is not None:
            self.values.append(float(value))

    def finalize(self) -> float | None:
        return type(self).function(self.values) if len(self.values) >= type(self).minimum else None


class Median(_Collect):
    function = staticmethod(statistics.median)


class StdDev(_Collect):
    """Oracle STDDEV is the sample standard deviation, 0 for a single value."""

    function = staticmethod(lambda values: statistics.stdev(values) if len(values) > 1 else 0.0)


class Variance(_Collect):
    function = staticmethod(lambda values: statistics.variance(values) if len(values) > 1 else 0.0)


SCALARS: dict[str, tuple[int, Callable[..., Any]]] = {
    "ORA_DATE_ADD": (2, _nullsafe(date_add)),
    "ORA_DATE_ADD_INTERVAL": (3, _nullsafe(date_add_interval)),
    "ORA_DAYS_BETWEEN": (2, _nullsafe(days_between)),
    "ORA_TO_CHAR": (2, to_char),
    "ORA_EXTRACT": (2, lambda unit, value: extract(unit, value)),
    "ORA_CANON_TS": (1, to_canonical),
    "ORA_VALIDATE_CONVERSION": (3, validate_conversion),
    "ADD_MONTHS": (2, _nullsafe(add_months)),
    "MONTHS_BETWEEN": (2, _nullsafe(months_between)),
    "LAST_DAY": (1, _nullsafe(last_day)),
    "DATE_TRUNC": (2, truncate_date),
    "TIMESTAMP_TRUNC": (2, lambda value, unit: truncate_date(unit, value)),
    "TRUNC": (-1, trunc),
    "STR_TO_DATE": (-1, str_to_datetime),
    "STR_TO_TIME": (-1, str_to_datetime),
    "REGEXP": (2, lambda pattern, value: regexp_like(value, pattern)),
    "REGEXP_LIKE": (-1, regexp_like),
    "REGEXP_SUBSTR": (-1, regexp_substr),
    "REGEXP_INSTR": (-1, regexp_instr),
    "REGEXP_REPLACE": (-1, regexp_replace),
    "REGEXP_COUNT": (-1, regexp_count),
    "LPAD": (-1, pad(left=True)),
    "RPAD": (-1, pad(left=False)),
    "INITCAP": (-1, lambda value, *_: None if value is None else str(value).title()),
}
AGGREGATES: dict[str, tuple[int, type]] = {
    "ORA_LISTAGG": (-1, ListAgg),
    "MEDIAN": (1, Median),
    "STDDEV": (1, StdDev),
    "VARIANCE": (1, Variance),
}


def register_oracle_functions(connection: sqlite3.Connection) -> None:
    """Add every function above to ``connection`` (SQLite functions are per connection)."""
    for name, (arity, function) in SCALARS.items():
        connection.create_function(name, arity, function, deterministic=True)
    for name, (arity, aggregate) in AGGREGATES.items():
        connection.create_aggregate(name, arity, aggregate)
