"""The report's "Gold may be stale" section: the ``gold_freshness`` block (:mod:`routing.boards.freshness`)."""

from __future__ import annotations

from typing import Any

from routing.report.html import esc, table, td


def stale_gold_section(block: dict[str, Any] | None) -> str:
    """The audit's drifted gold points, the guideline the judge named, and the items of this build carrying each."""
    if not block:
        return ""
    judges = ", ".join(block["judges"]) or "–"
    out = [
        '<h2 id="gold-freshness">Gold may be stale</h2>',
        (
            f'<p class="small muted">Freshness audit {esc(block["audit"])} ({esc(block["generated_at"])}, judged by '
            f"{esc(judges)}): {esc(len(block['drifted_points']))} of {esc(block['points'])} gold points drifted; "
            f"{esc(block['flagged_items'])} item(s) of this build carry one, in {esc(len(block['buckets']))} "
            "bucket(s), each marked in its leaderboard. The judge answered from its own knowledge, which has a "
            "cutoff; the items are kept in every statistic — a person decides whether the gold changes.</p>"
        ),
    ]
    if block["drifted_points"]:
        rows = (
            [
                td(p["text"]),
                td(p["domain"]),
                td(p["current_guideline"]),
                td(p["note"]),
                td(", ".join(p["items_in_build"]) or "–"),
            ]
            for p in block["drifted_points"]
        )
        out.append(table(["gold point", "domain", "guideline", "note", "items in this build"], rows, "stale-gold"))
    return "\n".join(out)
