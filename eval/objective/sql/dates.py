"""Oracle date semantics on SQLite text: every date is canonical ``YYYY-MM-DD HH:MM:SS``.

SQLite has no date type. One fixed-width text form for every DATE and TIMESTAMP (a DATE at midnight
included) makes ``=``, ``<`` and ``ORDER BY`` on the text agree with Oracle's comparisons of dates,
so these functions (registered by `eval.objective.sql.functions`) take any ISO-like date text and always
return that form. NULL in gives NULL out, as in Oracle.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from typing import Any

from sqlglot.dialects.oracle import Oracle
from sqlglot.time import format_time

CANONICAL = "%Y-%m-%d %H:%M:%S"
_TEMPORAL_TEXT = re.compile(
    r"^(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?$"
)


def parse_temporal(value: Any) -> dt.datetime | None:
    """'YYYY-MM-DD[ HH:MM[:SS[.ffffff]]]' (or with '/' or 'T') -> datetime; anything else -> None."""
    if not isinstance(value, str):
        return None
    match = _TEMPORAL_TEXT.match(value.strip())
    if not match:
        return None
    year, month, day, hour, minute, second, fraction = match.groups()
    try:
        return dt.datetime(
            int(year),
            int(month),
            int(day),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            int((fraction or "0").ljust(6, "0")),
        )
    except ValueError:
        return None


def canonical(moment: dt.datetime) -> str:
    return moment.strftime(CANONICAL)


def _temporal_or_fail(value: Any, function: str) -> dt.datetime:
    moment = parse_temporal(value)
    if moment is None:
        raise ValueError(f"{function}: {value!r} is not a date")
    return moment


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
    fields = {
        "YEAR": moment.year,
        "MONTH": moment.month,
        "DAY": moment.day,
        "HOUR": moment.hour,
        "MINUTE": moment.minute,
        "SECOND": moment.second + moment.microsecond / 1e6,
    }
    if unit.upper() not in fields:
        raise ValueError(f"EXTRACT({unit} FROM ...) is not supported")
    return fields[unit.upper()]
