"""The report's "Pairwise ratings" section (``pairwise.json``, :mod:`routing.boards.pairwise`), and beside it
"Judged battles" (the pairwise stage's side-by-side verdicts, ``leaderboard.json`` ``judged_battles``)."""

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


def judged_battles_section(block: dict[str, Any] | None) -> str:
    """Each judge's position consistency, its warning when low, and per undecided bucket the judged
    decision and ratings: ``battles: judged``, never mixed with the score-derived ratings above."""
    if not block:
        return ""
    out = [
        '<h2 id="judged-battles">Judged battles (pairwise stage)</h2>',
        (
            '<p class="small muted">Where the scores left models tied, the judge compared their answers side by '
            "side in both orders: a win only when both orders agree, else a tie. Judged decision: the leader by "
            "judged win rate, sign test (mid-p) against each other tied model, Holm-adjusted. Bradley–Terry on the "
            "Elo scale from these battles only.</p>"
        ),
        table(
            ["judge", "pairs", "position consistency", "first position picked"],
            (
                [td(j), td(c["pairs"], True), td(fmt(c["consistent"]), True), td(fmt(c["first_position"]), True)]
                for j, c in block["judges"].items()
            ),
        ),
        *(f'<p><span class="tag none">low position consistency</span> {esc(w)}</p>' for w in block["warnings"]),
    ]
    for bucket_id, entry in block["buckets"].items():
        d = entry["judged_decision"]
        verdict = f"decisive: {d['leader']}" if d["decisive"] else "still tied: " + ", ".join(d["tied_top"])
        out.append(f'<h3>{esc(bucket_id)}</h3><p class="small">{esc(d["n_battles"])} battles; {esc(verdict)}</p>')
        out.append(
            table(
                ["rank", "model", "judged BT rating", "95% CI", "judged win rate", "games"],
                (
                    [
                        td(m["rank"], True),
                        td(m["model"]),
                        td(fmt(m["rating"], 0), True),
                        td(f"[{fmt(m['ci'][0], 0)}, {fmt(m['ci'][1], 0)}]", True),
                        td(fmt(m["win_rate"]), True),
                        td(m["games"], True),
                    ]
                    for m in entry["ratings"]["models"]
                ),
            )
        )
    return "\n".join(out)
