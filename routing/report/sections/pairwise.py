"""The report's "Pairwise ratings" section (``pairwise.json``, :mod:`routing.boards.pairwise`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from routing.report.html import ci_bar, esc, table, td
from routing.report.markdown import fmt


def pairwise_section(scopes: Sequence[dict[str, Any]]) -> str:
    out = [
        '<h2 id="pairwise">Pairwise ratings (per family)</h2>',
        (
            '<p class="small muted">Per item, the higher score wins a battle and equal scores tie. '
            "Bradley–Terry on the Elo scale with item-bootstrap 95% CIs; "
            "rank = 1 + models whose lower bound exceeds this upper bound. "
            "Online Elo: median and 95% interval over shuffled battle orders.</p>"
        ),
    ]
    for scope in scopes:
        if scope["level"] != "family":
            continue
        out.append(f"<h3>{esc(scope['scope'])}</h3>")
        if "bradley_terry" not in scope:
            out.append(f'<p class="muted">{esc(scope.get("skipped", "no battles"))}</p>')
            continue
        bt, elo, wr = scope["bradley_terry"]["ratings"], scope["elo"]["ratings"], scope["win_rate"]
        bounds = [x for r in bt.values() for x in r["ci"] if x is not None] or [1000.0]
        lo, hi = min(bounds) - 10, max(bounds) + 10
        rows = (
            [
                td(bt[m]["rank"], True),
                td(m),
                td(fmt(bt[m]["rating"], 0), True),
                ci_bar({"value": bt[m]["rating"], "ci": bt[m]["ci"]}, lo, hi),
                td(f"[{fmt(bt[m]['ci'][0], 0)}, {fmt(bt[m]['ci'][1], 0)}]", True),
                td(f"{fmt(elo[m]['median'], 0)} [{fmt(elo[m]['ci'][0], 0)}, {fmt(elo[m]['ci'][1], 0)}]", True),
                td(fmt(wr["overall"][m]), True),
            ]
            for m in scope["models"]
        )
        out.append(
            f'<p class="small">{esc(scope["items"])} items, {esc(scope["battles"])} battles, '
            f"{esc(scope['ties'])} ties</p>"
        )
        out.append(table(["rank", "model", "BT rating", "", "95% CI", "Elo median [95%]", "win rate"], rows, "ratings"))
        matrix_rows = (
            [td(m)] + [td("·" if i == j else fmt(wr["matrix"][i][j], 2), True) for j in range(len(scope["models"]))]
            for i, m in enumerate(scope["models"])
        )
        out.append(table(["row beats column", *scope["models"]], matrix_rows, "matrix"))
    return "\n".join(out)
