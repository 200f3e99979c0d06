"""The report's "Estimated scores" section: models scored adaptively (``leaderboard.json`` ``estimated``)."""

from __future__ import annotations

from typing import Any

from routing.report.html import table, td


def estimated_section(block: dict[str, Any] | None) -> str:
    """Each adaptively scored model's estimated full-suite score per family, its 95% interval and items used."""
    if not block:
        return ""
    rows = (
        [
            td(model),
            td(family),
            td(f"{e['score']:.1f}", num=True),
            td(f"[{e['low']:.1f}, {e['high']:.1f}]", num=True),
            td(f"{e['items_used']} / {e['items_total']}", num=True),
            td("estimated"),
        ]
        for model, families in sorted(block.items())
        for family, e in sorted(families.items())
    )
    return "\n".join(
        [
            '<h2 id="estimated">Estimated scores</h2>',
            (
                '<p class="small muted">These models answered only the items most informative for them '
                "(<code>pool.run --adaptive</code>); each score is the full-suite score estimated from an item "
                "bank fitted on the run history (0–100, 95% interval). Their cells in the boards above are means "
                "over the items they were asked, marked <em>estimated</em>, and they are never a routing "
                "decision's pick: evaluate a model in full for a paired test on real answers.</p>"
            ),
            table(["model", "family", "estimated score", "95% interval", "items used", ""], rows, "estimated"),
        ]
    )
