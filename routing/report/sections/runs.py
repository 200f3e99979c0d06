"""The report's "Runs" section: the runs merged, the build's parameters and the infra errors left out."""

from __future__ import annotations

from typing import Any

from eval.items.scores import FAMILIES
from routing.report.html import esc, table, td


def runs_section(leaderboard: dict[str, Any], infra: dict[str, dict[str, int]]) -> str:
    rows = [
        [
            td(r["run_id"]),
            td(r["created_at"]),
            td(r["pool_fingerprint"] or "–"),
            td(r["data_fingerprint"] or "–"),
            td(r["dir"]),
        ]
        for r in leaderboard["runs"]
    ]
    out = [
        '<h2 id="runs">Runs</h2>',
        table(["run", "created", "pool fingerprint", "data fingerprint", "directory"], rows),
    ]
    params = leaderboard["parameters"]
    out.append('<p class="small muted">' + esc(", ".join(f"{k}={v}" for k, v in params.items())) + "</p>")
    families = [f for f in FAMILIES if any(f in per for per in infra.values())]
    out.append("<h3>Infra errors (excluded from every statistic)</h3>")
    out.append(
        table(
            ["model", *families, "total"],
            (
                [td(model)] + [td(per.get(f, 0), True) for f in families] + [td(sum(per.values()), True)]
                for model, per in sorted(infra.items())
            ),
        )
    )
    return "\n".join(out)
