"""Trends: each model's score per family over the last N comparable nights, and its inline SVG chart.

*Comparable nights* are the finished runs in the index with the current run's data fingerprint,
created no later than it, the last ``last`` of them (the current run included). A point is the
run's family score for the model (:mod:`routing.nights.run_scores`: mean item value with its 95% CI),
read from the index, so a deleted run folder keeps its point. The line breaks — a new *segment*
starts — where the model identity or the judge identity differs from the previous point, or where
the model has no score in the previous night: those scores do not measure the same thing.

The chart is plain inline SVG: no script, no external reference, every text (model, family, run
id) escaped; a point's details are in its ``<title>`` (shown on hover, read by screen readers).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from routing.nights.history import IndexEntry, comparable_entries, read_index, read_summary_json, snapshot

DEFAULT_LAST = 14
WIDTH, HEIGHT, PAD = 130, 48, 5


def build_trends(entries: Sequence[IndexEntry], current: IndexEntry, last: int = DEFAULT_LAST) -> dict[str, Any]:
    """``{runs: [{run_id, created_at, missing}], series: [{model, family, points}]}`` (pure; module docstring).

    A point: ``{run, run_id, value, ci, n, identity, judge, segment, break}``; ``run`` indexes
    ``runs``; ``break`` says why a new segment started (null for the first point).
    """
    earlier = comparable_entries(entries, current.data_fingerprint, current.created_at, current.run_id)
    nights = [*earlier, current][-max(1, last) :]
    series: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for index, night in enumerate(nights):
        for model, families in sorted(night.scores.items()):
            for family, point in sorted(families.items()):
                if point.get("value") is None:
                    continue
                series.setdefault((model, family), []).append(
                    {
                        "run": index,
                        "run_id": night.run_id,
                        "value": point["value"],
                        "ci": point.get("ci") or [None, None],
                        "n": point.get("n"),
                        "identity": point.get("identity"),
                        "judge": point.get("judge"),
                    }
                )
    out = []
    for (model, family), points in sorted(series.items()):
        segment = 0
        for i, point in enumerate(points):
            reason = None
            if i:
                previous = points[i - 1]
                if point["run"] != previous["run"] + 1:
                    reason = "no score in the night before"
                elif point["identity"] != previous["identity"]:
                    reason = "model identity changed"
                elif point["judge"] != previous["judge"]:
                    reason = "judge changed"
            segment += reason is not None
            point.update(segment=segment, **{"break": reason})
        out.append({"model": model, "family": family, "points": points})
    runs = [{"run_id": e.run_id, "created_at": e.created_at, "missing": e.missing} for e in nights]
    return {"data_fingerprint": current.data_fingerprint, "last": last, "runs": runs, "series": out}


def trend_data(root: Path, run_dir: Path, last: int = DEFAULT_LAST) -> dict[str, Any] | None:
    """Trends for ``run_dir`` from ``root``'s index (the run itself read from its folder if not indexed yet);
    None when there is nothing to draw (no index)."""
    entries = read_index(Path(root))
    if not entries:
        return None
    run_id = read_summary_json(Path(run_dir))["run_id"]
    current = next((e for e in entries if e.run_id == run_id), None) or snapshot(Path(root), Path(run_dir))
    return build_trends(entries, current, last)


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _y(value: float) -> float:
    return PAD + (1.0 - min(1.0, max(0.0, value))) * (HEIGHT - 2 * PAD)


def _x(run: int, n_runs: int) -> float:
    return WIDTH / 2 if n_runs <= 1 else PAD + run * (WIDTH - 2 * PAD) / (n_runs - 1)


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def sparkline_svg(points: Sequence[Mapping[str, Any]], runs: Sequence[Mapping[str, Any]], label: str) -> str:
    """One series as an inline SVG (y: score 0–1; x: the nights in ``runs``, oldest left).

    Per segment: the 95% CI as a band (whiskers for a lone point) and the scores as a line; a red
    dashed rule marks an identity or judge change.
    """
    n_runs = len(runs)
    parts = [
        f'<svg class="trend" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-label="{_esc(label)}">',
        f"<title>{_esc(label)}</title>",
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#f6f8fa"/>',
        f'<line x1="0" x2="{WIDTH}" y1="{_y(0.5):.1f}" y2="{_y(0.5):.1f}" stroke="#d0d7de" stroke-dasharray="2,2"/>',
    ]
    segments: dict[int, list[Mapping[str, Any]]] = {}
    for point in points:
        segments.setdefault(int(point["segment"]), []).append(point)
        if point.get("break") in ("model identity changed", "judge changed"):
            x = (_x(point["run"], n_runs) + _x(point["run"] - 1, n_runs)) / 2
            parts.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{HEIGHT}" stroke="#c0392b" stroke-dasharray="3,2"/>'
            )
    for members in segments.values():
        coords = [(_x(p["run"], n_runs), p) for p in members]
        bounded = [(x, p) for x, p in coords if None not in p["ci"]]
        if len(bounded) >= 2:
            upper = " ".join(f"{x:.1f},{_y(p['ci'][1]):.1f}" for x, p in bounded)
            lower = " ".join(f"{x:.1f},{_y(p['ci'][0]):.1f}" for x, p in reversed(bounded))
            parts.append(f'<polygon points="{upper} {lower}" fill="#7aa7d8" fill-opacity="0.35"/>')
        elif bounded:
            x, p = bounded[0]
            parts.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{_y(p["ci"][0]):.1f}" y2="{_y(p["ci"][1]):.1f}" '
                'stroke="#7aa7d8" stroke-width="3"/>'
            )
        if len(coords) >= 2:
            line = " ".join(f"{x:.1f},{_y(p['value']):.1f}" for x, p in coords)
            parts.append(f'<polyline points="{line}" fill="none" stroke="#0b3d75" stroke-width="1.5"/>')
    for point in points:
        lo, hi = point["ci"]
        tip = f"{runs[point['run']]['run_id']}: {_fmt(point['value'])} [{_fmt(lo)}, {_fmt(hi)}] n={point['n']}" + (
            f" — {point['break']}" if point.get("break") else ""
        )
        parts.append(
            f'<circle cx="{_x(point["run"], n_runs):.1f}" cy="{_y(point["value"]):.1f}" r="2.5" fill="#0b3d75">'
            f"<title>{_esc(tip)}</title></circle>"
        )
    parts.append("</svg>")
    return "".join(parts)
