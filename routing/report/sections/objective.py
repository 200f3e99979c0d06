"""The report's "Objective checks and decision recognition" section (:mod:`routing.judges.objective`)."""

from __future__ import annotations

from typing import Any

from routing.report.html import ci_text, table, td
from routing.report.markdown import fmt


def objective_section(leaderboard: dict[str, Any]) -> str:
    """Objective checks vs the judge on the same answers, and DR accuracy beside the open answer."""
    checks, pairs = leaderboard.get("checks") or [], leaderboard.get("decision_recognition") or []
    if not checks and not pairs:
        return ""
    out = ['<h2 id="objective">Objective checks and decision recognition</h2>']
    if checks:
        out.append(
            '<p class="small muted">The check (SQL executed, API call parsed) ranks these tasks; '
            "the judge read the same answers. "
            "Agreement: share of answers where the check's pass and the judge's pass say the same; "
            "Cohen's κ (– below 5 answers).</p>"
        )
        rows = (
            [
                td(e["bucket"]),
                td(e["kind"]),
                td(m["model"]),
                td(m["n_checked"], True),
                td(ci_text(m["check_pass_rate"]), True),
                td(m["n_both"], True),
                td(ci_text(m["judge_pass_rate"]), True),
                td(fmt(m["agreement"]), True),
                td(fmt(m["kappa"]), True),
            ]
            for e in checks
            for m in e["models"]
        )
        out.append(
            table(
                [
                    "task",
                    "check",
                    "model",
                    "checked",
                    "check pass [95% CI]",
                    "judged",
                    "judge pass [95% CI]",
                    "agreement",
                    "κ",
                ],
                rows,
                "checks",
            )
        )
    if pairs:
        out.append(
            '<p class="small muted">Decision recognition: the same items asked as a choice among the gold and its '
            "nearest labels (DR accuracy) and openly (the source task's per-item score).</p>"
        )
        rows = (
            [
                td(e["task"]),
                td(f"{e['source_task']} ({e['source_statistic']})"),
                td(m["model"]),
                td(m["n"], True),
                td(ci_text(m["dr_accuracy"]), True),
                td(ci_text(m["source_score"]), True),
            ]
            for e in pairs
            for m in e["models"]
        )
        out.append(
            table(
                ["DR task", "source task", "model", "items", "DR accuracy [95% CI]", "source score [95% CI]"],
                rows,
                "dr",
            )
        )
    return "\n".join(out)
