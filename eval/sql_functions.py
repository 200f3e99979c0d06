"""Oracle functions SQLite lacks, as SQLite user functions (registered per connection).

sqlglot transpiles Oracle to SQLite but leaves some calls as they are (``STR_TO_DATE``, ``ADD_MONTHS``,
``REGEXP_SUBSTR``...), and `eval.sql_dialect` rewrites a few more into calls named ``ORA_*`` here
(date arithmetic, ``TO_CHAR`` with a format, ``LISTAGG``, ``EXTRACT``). SQLite has no date type, so
every date and timestamp is canonical text ``YYYY-MM-DD HH:MM:SS`` (a DATE at midnight included):
one fixed-width form makes ``=``, ``<`` and ``ORDER BY`` on the text agree with Oracle's comparisons
of dates. Every function returning a date returns that form; NULL in gives NULL out, as in Oracle.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
import sqlite3
import statistics
from collections.abc import Callable
from typing import Any

from sqlglot.dialects.oracle import Oracle
from sqlglot.time import format_time

CANONICAL = "%Y-%m-%d %H:%M:%S"
_TEMPORAL_TEXT = re.compile(r"^(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?$")
_POSIX_CLASSES = {"[:digit:]": r"0-9", "[:alpha:]": r"^\W\d_", "[:alnum:]": r"^\W_", "[:space:]": r"\s",
                  "[:upper:]": r"A-Z", "[:lower:]": r"a-z", "[:punct:]": r"!-/:-@\[-`{-~"}  # fmt: skip


def parse_temporal(value: Any) -> dt.datetime | None:
    """'YYYY-MM-DD[ HH:MM[:SS[.ffffff]]]' (or with '/' or 'T') -> datetime; anything else -> None."""
    if not isinstance(value, str):
        return None
    match = _TEMPORAL_TEXT.match(value.strip())
    if not match:
        return None
    year, month, day, hour, minute, second, fraction = match.groups()
    try:
        return dt.datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                           int((fraction or "0").ljust(6, "0")))  # fmt: skip
    except ValueError:
        return None


def canonical(moment: dt.datetime) -> str:
    return moment.strftime(CANONICAL)


def _temporal_or_fail(value: Any, function: str) -> dt.datetime:
    moment = parse_temporal(value)
    if moment is None:
        raise ValueError(f"{function}: {value!r} is not a date")
    return moment


def _nullsafe(function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any) -> Any:
        return None if args and args[0] is None else function(*args)

    return wrapper


# --- dates --------------------------------------------------------------------------------------


def date_add(value: Any, days: Any) -> str | None:
    """Oracle ``date + n``: n days, fractions as hours/minutes."""
    if days is None:
        return None
    return canonical(_temporal_or_fail(value, "date + n") + dt.timedelta(days=float(days)))


def date_add_interval(value: Any, amount: Any, unit: str) -> str | None:
    """``date + INTERVAL 'n' UNIT``; YEAR/MONTH go through ADD_MONTHS's calendar rule."""
    if amount is None:
        return None
    unit, amount = unit.upper(), float(amount)
    if unit in ("YEAR", "MONTH"):
        return add_months(value, amount * (12 if unit == "YEAR" else 1))
    seconds = {"DAY": 86400, "HOUR": 3600, "MINUTE": 60, "SECOND": 1}.get(unit)
    if seconds is None:
        raise ValueError(f"INTERVAL unit {unit!r} is not supported")
    return canonical(_temporal_or_fail(value, "date + INTERVAL") + dt.timedelta(seconds=amount * seconds))


def days_between(left: Any, right: Any) -> float | None:
    """Oracle ``date1 - date2``: the difference in days (fractional when times differ)."""
    if right is None:
        return None
    delta = _temporal_or_fail(left, "date - date") - _temporal_or_fail(right, "date - date")
    return delta.total_seconds() / 86400


def add_months(value: Any, months: Any) -> str | None:
    """ADD_MONTHS: same day of month, clipped to the month's end; the last day stays the last day."""
    if months is None:
        return None
    moment = _temporal_or_fail(value, "ADD_MONTHS")
    total = moment.year * 12 + moment.month - 1 + int(float(months))
    year, month = divmod(total, 12)
    last = calendar.monthrange(year, month + 1)[1]
    at_end = moment.day == calendar.monthrange(moment.year, moment.month)[1]
    return canonical(moment.replace(year=year, month=month + 1, day=last if at_end else min(moment.day, last)))


def months_between(left: Any, right: Any) -> float | None:
    """MONTHS_BETWEEN: whole months when both days match or both are month ends, else /31 for the rest."""
    if right is None:
        return None
    a, b = _temporal_or_fail(left, "MONTHS_BETWEEN"), _temporal_or_fail(right, "MONTHS_BETWEEN")
    months = (a.year - b.year) * 12 + a.month - b.month
    a_end = a.day == calendar.monthrange(a.year, a.month)[1]
    b_end = b.day == calendar.monthrange(b.year, b.month)[1]
    if a.day == b.day or (a_end and b_end):
        return float(months)
    seconds_a = a.hour * 3600 + a.minute * 60 + a.second
    seconds_b = b.hour * 3600 + b.minute * 60 + b.second
    return months + (a.day - b.day + (seconds_a - seconds_b) / 86400) / 31


def last_day(value: Any) -> str:
    moment = _temporal_or_fail(value, "LAST_DAY")
    return canonical(moment.replace(day=calendar.monthrange(moment.year, moment.month)[1]))


def truncate_date(unit: Any, value: Any) -> str | None:
    """TRUNC(date, unit) / DATE_TRUNC(unit, date): DD (default), MM, YYYY/YEAR, Q, IW, HH, MI."""
    if value is None:
        return None
    moment = _temporal_or_fail(value, "TRUNC")
    unit = str(unit or "DD").upper()
    if unit in ("YYYY", "YEAR", "YY", "Y", "SYYYY"):
        moment = moment.replace(month=1, day=1, hour=0, minute=0, second=0)
    elif unit in ("MM", "MONTH", "MON"):
        moment = moment.replace(day=1, hour=0, minute=0, second=0)
    elif unit in ("Q", "QUARTER"):
        moment = moment.replace(month=(moment.month - 1) // 3 * 3 + 1, day=1, hour=0, minute=0, second=0)
    elif unit in ("IW", "WEEK"):
        moment = (moment - dt.timedelta(days=moment.weekday())).replace(hour=0, minute=0, second=0)
    elif unit in ("HH", "HH24", "HOUR"):
        moment = moment.replace(minute=0, second=0)
    elif unit in ("MI", "MINUTE"):
        moment = moment.replace(second=0)
    else:
        moment = moment.replace(hour=0, minute=0, second=0)
    return canonical(moment.replace(microsecond=0))


def trunc(value: Any, detail: Any = None) -> Any:
    """TRUNC of a number (to ``detail`` decimals) or of a date (to the unit ``detail``)."""
    if value is None:
        return None
    if isinstance(value, str) and parse_temporal(value):
        return truncate_date(detail, value)
    number, places = float(value), int(detail or 0)
    factor = 10**places
    truncated = int(number * factor) / factor
    return int(truncated) if places <= 0 else truncated


def str_to_datetime(text: Any, python_format: Any = None) -> str | None:
    """TO_DATE/TO_TIMESTAMP after sqlglot mapped the Oracle mask to strptime codes; lenient fallback
    to ISO-like text, as Oracle is lenient about separators."""
    if text is None:
        return None
    if python_format:
        try:
            return canonical(dt.datetime.strptime(str(text).strip(), str(python_format)))
        except ValueError:
            pass
    return canonical(_temporal_or_fail(text, "TO_DATE"))


def to_canonical(value: Any) -> Any:
    """CAST(x AS DATE/TIMESTAMP): a date-like text becomes canonical; other values pass through."""
    moment = parse_temporal(value)
    return canonical(moment) if moment else value


def oracle_mask_to_strftime(mask: str) -> str:
    """'YYYY-MM-DD HH24:MI:SS' -> '%Y-%m-%d %H:%M:%S' via sqlglot's Oracle mapping (FM dropped)."""
    return format_time(mask.replace("FM", "").replace("fm", ""), Oracle.TIME_MAPPING, Oracle.TIME_TRIE) or ""


def to_char(value: Any, mask: Any = None) -> str | None:
    """TO_CHAR(date, mask) with the date mask; TO_CHAR(number, mask) with as many decimals as the
    mask has after its '.'; no mask -> the plain text."""
    if value is None:
        return None
    moment = parse_temporal(value) if isinstance(value, str) else None
    if mask is None:
        return str(value)
    if moment is not None:
        return moment.strftime(oracle_mask_to_strftime(str(mask)))
    if isinstance(value, (int, float)) or re.fullmatch(r"\s*-?\d+(\.\d+)?\s*", str(value)):
        places = len(str(mask).split(".", 1)[1]) if "." in str(mask) else 0
        return f"{float(value):.{places}f}"
    return str(value)


def validate_conversion(value: Any, type_name: str, mask: Any = None) -> int:
    """VALIDATE_CONVERSION(x AS type, mask): 1 when x converts (NULL does), else 0. Dates must fit
    the mask exactly (strptime); numbers must parse; any other type converts."""
    if value is None:
        return 1
    text = str(value).strip()
    if type_name.startswith(("DATE", "TIMESTAMP")):
        try:
            if mask is not None:
                dt.datetime.strptime(text, oracle_mask_to_strftime(str(mask)))
            elif parse_temporal(text) is None:
                return 0
        except ValueError:
            return 0
        return 1
    if type_name.startswith(("NUMBER", "INT", "FLOAT", "DEC", "BINARY")):
        try:
            float(text)
        except ValueError:
            return 0
    return 1


def extract(unit: str, value: Any) -> int | float | None:
    """EXTRACT(unit FROM date)."""
    if value is None:
        return None
    moment = _temporal_or_fail(value, "EXTRACT")
    fields = {"YEAR": moment.year, "MONTH": moment.month, "DAY": moment.day, "HOUR": moment.hour,
              "MINUTE": moment.minute, "SECOND": moment.second + moment.microsecond / 1e6}  # fmt: skip
    if unit.upper() not in fields:
        raise ValueError(f"EXTRACT({unit} FROM ...) is not supported")
    return fields[unit.upper()]


# --- text and regular expressions ---------------------------------------------------------------


def _pattern(pattern: str, flags: Any = None) -> re.Pattern[str]:
    """Oracle POSIX pattern -> Python: bracket classes like [[:digit:]] mapped; flags i, c, n, m, x."""
    for posix, python in _POSIX_CLASSES.items():
        pattern = pattern.replace(posix, python)
    options = 0
    for flag in str(flags or ""):
        options = {"i": options | re.IGNORECASE, "c": options & ~re.IGNORECASE, "n": options | re.DOTALL,
                   "m": options | re.MULTILINE, "x": options | re.VERBOSE}.get(flag, options)  # fmt: skip
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


def regexp_replace(value: Any, pattern: Any, replacement: Any = "", position: int = 1, occurrence: int = 0,
                   flags: Any = None) -> str | None:  # fmt: skip
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
        sort_key = [(key is None, key if not desc else _Reversed(key)) for key, desc in zip(keys[::2], keys[1::2])]
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
AGGREGATES: dict[str, tuple[int, type]] = {"ORA_LISTAGG": (-1, ListAgg), "MEDIAN": (1, Median), "STDDEV": (1, StdDev),
                                           "VARIANCE": (1, Variance)}  # fmt: skip


def register_oracle_functions(connection: sqlite3.Connection) -> None:
    """Add every function above to ``connection`` (SQLite functions are per connection)."""
    for name, (arity, function) in SCALARS.items():
        connection.create_function(name, arity, function, deterministic=True)
    for name, (arity, aggregate) in AGGREGATES.items():
        connection.create_aggregate(name, arity, aggregate)
