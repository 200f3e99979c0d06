"""The report's HTML cells: every text escaped on the way in, numbers formatted, bars drawn with CSS.

Kept apart from the page so that every section module uses one escaping rule (:func:`esc`,
``html.escape`` with quotes) and none imports the page that lists it.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

from routing.report.markdown import fmt


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def table(head: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """A table from already-escaped cell HTML (``head`` is escaped here)."""
    head_html = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(cells) + "</tr>" for cells in rows)
    return f'<table class="{esc(cls)}"><thead><tr>{head_html}</tr></thead><tbody>{body}</tbody></table>'


def td(text: Any, num: bool = False) -> str:
    return f'<td class="num">{esc(text)}</td>' if num else f"<td>{esc(text)}</td>"


def pct(x: float, lo: float, hi: float) -> float:
    return 0.0 if hi <= lo else max(0.0, min(100.0, 100.0 * (x - lo) / (hi - lo)))


def ci_bar(stat: dict[str, Any] | None, lo: float = 0.0, hi: float = 1.0) -> str:
    if not stat or stat.get("value") is None:
        return "<td></td>"
    v, (a, b) = stat["value"], stat["ci"]
    a, b = (v if a is None else a), (v if b is None else b)
    left, right = pct(a, lo, hi), pct(b, lo, hi)
    return (
        f'<td><div class="bar"><div class="ci" style="left:{left:.1f}%;width:{max(right - left, 0.5):.1f}%"></div>'
        f'<div class="pt" style="left:{pct(v, lo, hi):.1f}%"></div></div></td>'
    )


def ci_text(stat: dict[str, Any] | None, digits: int = 3) -> str:
    if not stat or stat.get("value") is None:
        return "–"
    return f"{fmt(stat['value'], digits)} [{fmt(stat['ci'][0], digits)}, {fmt(stat['ci'][1], digits)}]"
