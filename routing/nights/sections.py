"""The report's night-over-night sections: "Since last night" (``compare.json``) and "Trends" (the run index).

Both are spliced into ``report.html`` (:func:`routing.report.page.splice_section`) after the build,
since the comparison and the index entry are made once the run's own files exist. Every model,
bucket, run and judge text passes through :func:`routing.report.html.esc`; the charts are inline SVG
(:func:`routing.nights.trends.sparkline_svg`), so the page still needs no network and runs no script.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from eval.items.scores import FAMILIES
from routing.nights.flips import flips_html
from routing.nights.trends import sparkline_svg
from routing.report.html import esc, table, td
from routing.report.markdown import fmt


def _signed(x: float | None) -> str:
    return "–" if x is None else f"{x:+.3f}"


def _share(cached: Mapping[str, Any]) -> str:
    return (
        "unknown" if cached.get("share") is None else f"{cached['share']:.0%} ({cached['cached']}/{cached['answers']})"
    )


def _difference(d: Mapping[str, Any]) -> str:
    return f"{_signed(d['diff'])} [{_signed(d['ci'][0])}, {_signed(d['ci'][1])}]"


@dataclass(frozen=True)
class DeltaColumn:
    """One column of the "Since last night" tables: its heading and its cell's text, taken from one
    ``compare.json`` delta (:class:`routing.nights.compare.Delta`); the text is escaped by :func:`td`."""

    head: str
    text: Callable[[Mapping[str, Any]], Any]
    num: bool = False  # right-aligned, tabular figures


DELTA_COLUMNS: tuple[DeltaColumn, ...] = (
    DeltaColumn("bucket", lambda d: d["bucket"]),
    DeltaColumn("model", lambda d: d["model"]),
    DeltaColumn("base", lambda d: fmt(d["base"]), num=True),
    DeltaColumn("new", lambda d: fmt(d["new"]), num=True),
    DeltaColumn("Δ new − base [95% CI]", lambda d: _difference(d), num=True),
    DeltaColumn("paired n", lambda d: d["n"], num=True),
    DeltaColumn("test", lambda d: d["test"]),
    DeltaColumn("p (Holm)", lambda d: f"{d['p_holm']:.3g}", num=True),
    DeltaColumn("status", lambda d: d.get("status", "")),
    DeltaColumn("MDD (80% power)", lambda d: "–" if d.get("mdd") is None else fmt(d["mdd"]), num=True),
)
DELTA_HEAD = [*(c.head for c in DELTA_COLUMNS), ""]  # the last column: the direction's tags


def _tags(d: Mapping[str, Any]) -> str:
    tag = {
        "regression": '<span class="tag none">worse</span>',
        "improvement": '<span class="tag ok">better</span>',
    }.get(d["direction"], "")
    flag = ' <span class="tag none">beyond threshold</span>' if d["beyond_threshold"] else ""
    return f"<td>{tag}{flag}</td>"


def _delta_rows(deltas: list[Mapping[str, Any]]) -> list[list[str]]:
    return [[*(td(c.text(d), c.num) for c in DELTA_COLUMNS), _tags(d)] for d in deltas]


def since_last_night_section(doc: Mapping[str, Any]) -> str:
    """The comparison with the previous comparable run (``Comparison.to_json()``)."""
    base, new = doc["base"], doc["new"]
    if doc["regressions"]:
        verdict = (
            f'<span class="tag none">{esc(doc["regressions"])} significant regression(s) '
            f"beyond {esc(doc['threshold'])}</span>"
        )
    elif any(d["direction"] == "regression" for d in doc["deltas"]):
        verdict = '<span class="tag tie">significant regressions, none beyond the threshold</span>'
    else:
        verdict = '<span class="tag ok">no significant regression</span>'
    out = [
        '<h2 id="since-last-night">Since last night</h2>',
        (
            f"<p>{verdict} — run {esc(new['run_id'])} against {esc(base['run_id'])} ({esc(base['created_at'])}): "
            f"{esc(doc['significant'])} significant change(s) of {esc(doc['tested'])} tested; "
            "paired items scored with the same model and judge identity; "
            f"Holm-adjusted, α = {esc(doc['alpha'])}. Data {'the same' if doc['same_data'] else 'DIFFERENT'}, "
            f"pool {'the same' if doc['same_pool'] else 'changed'}.</p>"
        ),
        f'<p class="small">Answers from the response cache: base {esc(_share(base["cached"]))}, '
        f"new {esc(_share(new['cached']))}"
        + (
            f"; {esc(doc['cache']['cached_in_both'])} of {esc(doc['cache']['paired_answers'])} "
            "compared answers were cached in both runs (the same text: only scoring can differ)"
            if (doc.get("cache") or {}).get("cached_in_both")
            else ""
        )
        + ".</p>",
    ]
    blocked = [(f, e) for f, e in doc["families"].items() if not e["comparable"]]
    if blocked:
        out.append(
            "<ul>"
            + "".join(
                f'<li><span class="tag none">not comparable</span> {esc(f)}: {esc(e["reason"])}</li>'
                for f, e in blocked
            )
            + "</ul>"
        )
    models = doc["models"]
    changes = (
        [f"added: {m['name']}" for m in models["added"]]
        + [f"removed: {m['name']}" for m in models["removed"]]
        + [f"identity changed: {m['name']} ({', '.join(m['fields'])}) — not paired" for m in models["changed"]]
    )
    if changes:
        out.append('<ul class="small">' + "".join(f"<li>{esc(c)}</li>" for c in changes) + "</ul>")
    significant = [d for d in doc["deltas"] if d["significant"]]
    if significant:
        out.append(table(DELTA_HEAD, _delta_rows(significant), "compare"))
    decisions = doc["decisions"]
    if decisions.get("changes"):
        out.append("<h3>Routing decisions changed</h3>")
        out.append(
            table(
                ["decision", "was", "now", "why"],
                (
                    [td(c["id"]), td(c["base_model"] or "–"), td(c["new_model"] or "–"), td(c["reason"])]
                    for c in decisions["changes"]
                ),
                "compare-decisions",
            )
        )
    elif not decisions.get("compared"):
        out.append(f'<p class="small muted">Routing decisions not compared: {esc(decisions.get("reason", ""))}</p>')
    flips = flips_html(doc)
    if flips:
        out.append(flips)
    if doc["deltas"]:
        out.append(
            f"<details><summary>All {esc(len(doc['deltas']))} comparisons</summary>"
            + table(DELTA_HEAD, _delta_rows(list(doc["deltas"])), "compare-all")
            + "</details>"
        )
    return "\n".join(out)


def trends_section(trends: Mapping[str, Any]) -> str:
    """Per model (rows) and family (columns), the score over the last comparable nights as an SVG chart."""
    runs, series = trends["runs"], trends["series"]
    if not series:
        return ""
    families = [f for f in FAMILIES if any(s["family"] == f for s in series)]
    by_model: dict[str, dict[str, Mapping[str, Any]]] = {}
    for s in series:
        by_model.setdefault(s["model"], {})[s["family"]] = s
    rows = []
    for model, per in sorted(by_model.items()):
        cells = [td(model)]
        for family in families:
            s = per.get(family)
            if s is None:
                cells.append('<td class="muted">–</td>')
                continue
            last = s["points"][-1]
            note = "" if last["run"] == len(runs) - 1 else " (not in this run)"
            cells.append(
                f"<td>{sparkline_svg(s['points'], runs, f'{model} · {family}')}<br>"
                f'<span class="small">{esc(fmt(last["value"]))}{esc(note)}</span></td>'
            )
        rows.append(cells)
    missing = sum(r["missing"] for r in runs)
    note = (
        f'<p class="small muted">The last {esc(len(runs))} finished night(s) on the same data (fingerprint '
        f"{esc(trends.get('data_fingerprint') or '–')}), "
        f"oldest left: {esc(runs[0]['run_id'])} … {esc(runs[-1]['run_id'])}"
        + (f" ({esc(missing)} run folder(s) moved or deleted; their scores come from the index)" if missing else "")
        + ". Line: the family score (mean item value); band: its 95% CI. "
        "The line breaks where the model or judge identity changed (red dashes) or the model was not run; "
        "hover a point for its run, CI and n.</p>"
    )
    return '<h2 id="trends">Trends</h2>' + note + table(["model", *families], rows, "trends")
