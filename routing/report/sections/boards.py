"""The report's leaderboards: one section per family (its buckets, with CI bars) and the specialty heatmap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eval.items.broad_areas import area_order
from routing.report.html import ci_bar, ci_text, esc, table, td
from routing.report.markdown import check_note, fmt, stale_note


def family_section(family: str, buckets: Sequence[dict[str, Any]], note: str | None = None) -> str:
    """One family's buckets; ``note``: what its scores are, when that needs saying (the live family's)."""
    out = [f'<h2 id="family-{esc(family)}">{esc(family)}</h2>']
    if note:
        out.append(f"<p>{esc(note)}</p>")
    for bucket in buckets:
        primary = bucket["primary"]
        extra = [
            m
            for m in (
                "pass_rate",
                "judge_pass_rate",
                "param_score",
                "safety",
                "accuracy",
                "safety_floor_rate",
                "unsupported_rate",
            )
            if m != primary and any(m in c["metrics"] for c in bucket["cells"])
        ]
        out.append(
            f'<h3>{esc(bucket["kind"])}: {esc(bucket["name"])} <span class="small muted">{esc(bucket["items"])} items, '
            f"{esc(', '.join(bucket['gold_types']))}</span></h3>"
        )
        out += [f'<p class="small muted">{esc(line)}</p>' for line in check_note(bucket) if line]
        out += [f'<p class="small"><span class="tag tie">{esc(line)}</span></p>' for line in stale_note(bucket) if line]
        rows = (
            [
                td(c["model"] + (" (estimated)" if c.get("estimated") else "")),
                td(c["n"], True),
                ci_bar(c["primary"]),
                td(ci_text(c["primary"]), True),
            ]
            + [td(ci_text(c["metrics"].get(m)), True) for m in extra]
            + [td(c["infra_errors"], True)]
            for c in bucket["cells"]
        )
        out.append(table(["model", "n", primary, "value [95% CI]", *extra, "infra"], rows, "board"))
    return "\n".join(out)


HEATMAP_KINDS = {
    "broad_area": "broad area",
    "system": "system",
    "domain": "domain",
}  # the specialty levels, widest first


def heatmap_section(buckets: Sequence[dict[str, Any]], min_n: int) -> str:
    """Specialty × model: the broad areas first (内科, 精神科, ...: the rollups the med-agent-verifier
    README's leaderboard leads with), then the domains and their systems as the leaderboard lists them."""
    specialty = [b for b in buckets if b["family"] == "specialty" and b["kind"] in HEATMAP_KINDS]
    areas = sorted((b for b in specialty if b["kind"] == "broad_area"), key=lambda b: area_order(b["name"]))
    shown = areas + [b for b in specialty if b["kind"] != "broad_area"]
    if not shown:
        return ""
    models = sorted({c["model"] for b in shown for c in b["cells"]})
    rows = []
    for bucket in shown:
        by_model = {c["model"]: c for c in bucket["cells"]}
        cells = [td(f"{HEATMAP_KINDS[bucket['kind']]}: {bucket['name']}")]
        for model in models:
            cell = by_model.get(model)
            value = cell["primary"]["value"] if cell and cell["primary"] else None
            if value is None:
                cells.append('<td class="heat muted">–</td>')
                continue
            thin = cell["n"] < min_n
            colour = "#eeeeee" if thin else f"hsl({120 * value:.0f},65%,{88 - 18 * abs(value - 0.5):.0f}%)"
            cells.append(
                f'<td class="heat" style="background:{colour}" title="{esc(model)} n={cell["n"]}">'
                f'{esc(fmt(value, 2))}<br><span class="small muted">n={esc(cell["n"])}</span></td>'
            )
        rows.append(cells)
    note = f'<p class="small muted">Grey: fewer than {esc(min_n)} scored items (not routable on its own).</p>'
    return '<h2 id="heatmap">Specialty × model</h2>' + note + table(["specialty", *models], rows, "heatmap")
