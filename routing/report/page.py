"""``report.html``: one self-contained page a clinician-lead can read — no network, no script.

Everything is inline (one ``<style>`` block; bars and heatmap colours are CSS widths and
backgrounds), so the file opens from disk or an e-mail attachment. Every piece of model, dataset,
run or judge text passes through :func:`routing.report.html.esc` (``html.escape`` with quotes), so a
model named ``<script>…`` is shown as text, never run. Numbers are formatted, never interpolated raw.

The page's sections are declared once, in :data:`SECTIONS` (page order): the navigation links and the
body both come from that list, so a section cannot lose its link. A new section is one module in
``routing/report/sections/`` (a function from the build's documents to HTML, "" when there is nothing
to show) and one line here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.files import atomic_write_text
from eval.items.scores import FAMILIES
from routing.report.html import esc
from routing.report.sections.boards import family_section, heatmap_section
from routing.report.sections.cost import frontier_section
from routing.report.sections.estimated import estimated_section
from routing.report.sections.freshness import stale_gold_section
from routing.report.sections.hard import hard_section
from routing.report.sections.judge_panel import judge_panel_section
from routing.report.sections.judge_reliability import judge_reliability_section
from routing.report.sections.manifest import routing_section, validation_section
from routing.report.sections.objective import objective_section
from routing.report.sections.pairwise import judged_battles_section, pairwise_section
from routing.report.sections.runs import runs_section
from routing.stats.intervals import CI_METHOD_WORDS

# Sections filled after the build (a run's comparison with the night before, the trends), in page
# order; each sits between ``<!-- medpool:NAME -->`` and ``<!-- /medpool:NAME -->``. Model text
# inside is escaped, so it can never contain a marker.
SPLICED_SECTIONS = ("since-last-night", "trends")

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI","Noto Sans",sans-serif;margin:24px auto;max-width:1200px;
color:#1d232a;padding:0 16px}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #d0d7de;padding-bottom:4px;margin-top:32px}
h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;margin:6px 0 14px}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:middle}
th{background:#f3f5f7;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
.bar{position:relative;width:180px;height:12px;background:#eef1f4;border-radius:2px}
.bar .ci{position:absolute;top:3px;height:6px;background:#7aa7d8;border-radius:2px}
.bar .pt{position:absolute;top:0;width:2px;height:12px;background:#0b3d75}
.muted{color:#6a737d}.tag{display:inline-block;padding:0 6px;border-radius:8px;font-size:12px}
.ok{background:#dcf5e3}.tie{background:#fff3c4}.none{background:#f3d6d6}.small{font-size:12px}
td.heat{text-align:center;min-width:64px}
"""


@dataclass(frozen=True)
class ReportData:
    """What one build hands the page: its documents as written (``leaderboard.json``, ``pairwise.json``,
    ``hard.yaml``, ``routing_manifest.yaml``) and the infra errors per model and family."""

    leaderboard: dict[str, Any]
    pairwise: dict[str, Any]
    hard: dict[str, Any]
    manifest: dict[str, Any]
    infra: dict[str, dict[str, int]]

    def family_board(self, family: str) -> str:
        boards = self.leaderboard["families"]
        note = (self.leaderboard.get("live") or {}).get("note") if family == "live" else None
        return family_section(family, boards[family], note) if family in boards else ""

    def specialty_heatmap(self) -> str:
        boards = self.leaderboard["families"]
        buckets = [b for f in FAMILIES for b in boards.get(f, [])]
        return heatmap_section(buckets, self.leaderboard["parameters"]["min_n"])


@dataclass(frozen=True)
class Section:
    """One part of the page: ``anchor`` is the ``id`` of its ``<h2>`` (the link's target), ``link`` the link's
    text; ``render`` draws it from the build's documents, "" when they hold nothing for it (then the page has
    neither the section nor its link)."""

    anchor: str
    link: str
    render: Callable[[ReportData], str]


SECTIONS: tuple[Section, ...] = (
    Section("runs", "runs", lambda r: runs_section(r.leaderboard, r.infra)),
    Section("routing", "routing", lambda r: routing_section(r.manifest)),
    Section("estimated", "estimated scores", lambda r: estimated_section(r.leaderboard.get("estimated"))),
    Section("validation", "routing validation", lambda r: validation_section(r.manifest)),
    *(Section(f"family-{f}", f, lambda r, f=f: r.family_board(f)) for f in FAMILIES),
    Section("objective", "objective checks", lambda r: objective_section(r.leaderboard)),
    Section("cost", "quality vs cost", lambda r: frontier_section(r.leaderboard.get("cost_frontier"))),
    Section("heatmap", "specialty heatmap", lambda r: r.specialty_heatmap()),
    Section("pairwise", "pairwise", lambda r: pairwise_section(r.pairwise["scopes"])),
    Section("judged-battles", "judged battles", lambda r: judged_battles_section(r.leaderboard.get("judged_battles"))),
    Section("hard", "full vs hard", lambda r: hard_section(r.hard)),
    Section(
        "judge-reliability",
        "judge reliability",
        lambda r: judge_reliability_section(r.leaderboard.get("judge_reliability")),
    ),
    Section("judge-panel", "judge panel", lambda r: judge_panel_section(r.leaderboard.get("judge_panel"))),
    Section("gold-freshness", "gold may be stale", lambda r: stale_gold_section(r.leaderboard.get("gold_freshness"))),
)


def render_report(
    leaderboard: dict[str, Any],
    pairwise: dict[str, Any],
    hard: dict[str, Any],
    manifest: dict[str, Any],
    infra: dict[str, dict[str, int]],
    sections: Mapping[str, str] | None = None,
) -> str:
    """The whole page as a string (pure: dicts in, HTML out).

    ``sections``: already-rendered HTML per name in :data:`SPLICED_SECTIONS` (see
    :mod:`routing.nights.sections`), placed after the navigation; absent ones leave an empty marked
    block that :func:`splice_section` can fill later.
    """
    data = ReportData(leaderboard, pairwise, hard, manifest, infra)
    drawn = [(section, section.render(data)) for section in SECTIONS]
    nav = " · ".join(f'<a href="#{esc(s.anchor)}">{esc(s.link)}</a>' for s, part in drawn if part)
    body = [
        "<h1>medpool — model pool report</h1>",
        (
            f'<p class="muted">Generated {esc(leaderboard["generated_at"])}. '
            "Families are reported side by side and never blended. "
            "Every value carries its n and a 95% confidence interval (bar: CI, tick: value); "
            f"{esc(interval_methods_text(leaderboard))}.</p>"
        ),
        f"<p>{nav}</p>",
        *[marked(name, (sections or {}).get(name, "")) for name in SPLICED_SECTIONS],
        *[part for _, part in drawn if part],
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>medpool report</title><style>{CSS}</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def interval_methods_text(leaderboard: Mapping[str, Any]) -> str:
    """Which interval rules this leaderboard's cells use, with their counts, in words."""
    counts: dict[str, int] = {}
    stack: list[Any] = [leaderboard]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            method = node.get("ci_method")
            if isinstance(method, str):
                counts[method] = counts.get(method, 0) + 1
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    if not counts:
        return "no interval was computed"
    used = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return "intervals by " + "; ".join(f"{CI_METHOD_WORDS.get(m, m)}: {n} value{'s' * (n != 1)}" for m, n in used)


def marked(name: str, section_html: str) -> str:
    """``section_html`` between the start and end markers of section ``name``."""
    return f"<!-- medpool:{name} -->{section_html}<!-- /medpool:{name} -->"


def splice_section(page: str, name: str, section_html: str) -> str:
    """``page`` with section ``name`` replaced by ``section_html`` (pure).

    A page without the section's markers (written before they existed) gets it before the runs
    section, or else before ``</body>``; spliced sections keep :data:`SPLICED_SECTIONS` order.
    """
    start, end = f"<!-- medpool:{name} -->", f"<!-- /medpool:{name} -->"
    i = page.find(start)
    j = page.find(end, i + len(start)) if i >= 0 else -1
    if i >= 0 and j >= 0:
        return page[:i] + marked(name, section_html) + page[j + len(end) :]
    later = (
        [f"<!-- medpool:{n} -->" for n in SPLICED_SECTIONS[SPLICED_SECTIONS.index(name) + 1 :]]
        if name in SPLICED_SECTIONS
        else []
    )
    anchors = [*later, '<h2 id="runs">', "</body>"]
    at = min((k for k in (page.find(a) for a in anchors) if k >= 0), default=len(page))
    return page[:at] + marked(name, section_html) + "\n" + page[at:]


def update_report_file(path: Path, sections: Mapping[str, str]) -> bool:
    """Splice ``sections`` (name -> HTML) into the report at ``path`` atomically; False when there is no report."""
    path = Path(path)
    try:
        page = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    for name, section_html in sections.items():
        page = splice_section(page, name, section_html)
    atomic_write_text(path, page)
    return True
