"""The report's "Judge panel" section: the ``judge_panel`` block (:mod:`routing.judges.panel_agreement`)."""

from __future__ import annotations

from typing import Any

from routing.report.html import esc, table, td
from routing.report.markdown import fmt


def judge_panel_section(block: dict[str, Any] | None) -> str:
    """Per panel: its rule, each member's agreement with the panel, α and κ per family and bucket, cost."""
    if not block or not block.get("panels"):
        return ""
    out = [
        '<h2 id="judge-panel">Judge panel</h2>',
        (
            '<p class="small muted">Every judged answer went to each panel member; '
            "the panel verdict is the declared rule's aggregate. "
            "Krippendorff's α on the members' totals (interval; a member without a verdict is missing), "
            f"warned below {esc(block['alpha_warn'])}; Fleiss' κ on pass/fail over the answers every member judged.</p>"
        ),
    ]
    for label, panel in block["panels"].items():
        cost = panel["cost"]
        priced = (
            ""
            if cost["priced_per_verdict"] is None
            else f", {cost['priced_per_verdict']:.6f} per verdict at the pool's prices"
        )
        out.append(f"<h3>{esc(label)} — rule {esc(panel['rule'])}</h3>")
        out.append(
            f'<p class="small">{esc(cost["calls_per_verdict"])} judge calls and {esc(cost["tokens_per_verdict"])} '
            f"tokens per panel verdict{esc(priced)}.</p>"
        )
        members = [
            [
                td(name),
                td(m["verdicts"], True),
                td(m["missing"], True),
                td(fmt(m["agreement_with_panel"], 3), True),
                td(cost["members"].get(name, {}).get("tokens_per_verdict", "–"), True),
            ]
            for name, m in panel["members"].items()
        ]
        out.append(
            table(
                ["member", "verdicts", "no verdict", "agreement with panel", "tokens per verdict"],
                members,
                "panel-members",
            )
        )
        scopes = [("all", panel["overall"]), *panel["families"].items(), *panel["buckets"].items()]
        rows = [
            [
                td(scope),
                td(s["n"], True),
                td(s["complete"], True),
                td(fmt(s["krippendorff_alpha_total"], 3), True),
                td(fmt(s["fleiss_kappa_pass"], 3), True),
            ]
            for scope, s in scopes
        ]
        out.append(
            table(
                ["scope", "verdicts", "every member", "Krippendorff α (totals)", "Fleiss κ (pass/fail)"],
                rows,
                "panel-agreement",
            )
        )
    return "\n".join(out)
