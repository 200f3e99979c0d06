"""The report's "Quality vs cost" section (:mod:`routing.boards.frontier`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from routing.report.html import esc, table, td
from routing.report.markdown import fmt


def frontier_section(frontier: Mapping[str, Sequence[Mapping[str, Any]]] | None) -> str:
    """Quality vs cost per family (routing.boards.frontier); shown when at least one model has a price."""
    if not frontier or not any(p["mean_cost"] is not None for points in frontier.values() for p in points):
        return ""
    out = [
        '<h2 id="cost">Quality vs cost</h2>',
        '<p class="small muted">Per family: mean score and mean cost per item at the pool file\'s prices. ★ marks the '
        "frontier — no other priced model is at least as good and at most as dear. Point estimates: the family "
        "decisions above say which differences are significant. – : no price.</p>",
    ]
    for family, points in frontier.items():
        rows = (
            [
                td(("★ " if p["on_frontier"] else "") + p["model"]),
                td(p["n"], True),
                td(fmt(p["score"]), True),
                td("–" if p["mean_cost"] is None else f"{p['mean_cost']:.6g}", True),
                td(fmt(p["median_latency_s"], 2), True),
            ]
            for p in points
        )
        out.append(
            f"<h3>{esc(family)}</h3>"
            + table(["model", "items", "score", "cost per item", "median latency (s)"], rows, "frontier")
        )
    return "\n".join(out)
