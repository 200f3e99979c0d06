"""argparse ``type=`` callables for the project's CLIs: one place for "a number in this range".

Each returns the parsed value or raises :class:`argparse.ArgumentTypeError` with a message that says
what was expected, so ``--sample -3`` or ``--alpha 2`` fails with exit 2 naming the flag, never
starts a run. ``pool.run`` uses these too (pool imports routing; routing imports no pool module).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def integer(minimum: int) -> Callable[[str], int]:
    """An integer ≥ ``minimum`` (a negative count is a typo, not a run)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def number(
    low: float = -math.inf,
    high: float = math.inf,
    *,
    open_low: bool = False,
    open_high: bool = False,
    what: str = "a number",
) -> Callable[[str], float]:
    """A finite float in [low, high] (``open_low`` / ``open_high`` exclude the ends)."""
    shown = f"{'(' if open_low else '['}{low:g}, {high:g}{')' if open_high else ']'}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        below = value <= low if open_low else value < low
        above = value >= high if open_high else value > high
        if not math.isfinite(value) or below or above:
            raise argparse.ArgumentTypeError(f"must be {what} in {shown}, got {text}")
        return value

    return parse


def duration(text: str) -> float | None:
    """Seconds, or a number with s/m/h/d, or ``never`` (None)."""
    cleaned = text.strip().lower()
    if cleaned == "never":
        return None
    scale = _UNITS.get(cleaned[-1:], None)
    digits = cleaned[:-1] if scale else cleaned
    try:
        value = float(digits) * (scale or 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a duration such as 12h, 90m, 3600 or never, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite duration >= 0, got {text}")
    return value


SECONDS = number(0.0, open_low=True, what="a number of seconds")
NON_NEGATIVE = number(0.0)
UNIT_INTERVAL = number(0.0, 1.0)
OPEN_FRACTION = number(0.0, 1.0, open_low=True, open_high=True, what="a fraction")
SCORE_DIFFERENCE = number(0.0, 1.0, what="a score difference (scores are fractions, e.g. 0.05)")
