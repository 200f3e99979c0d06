"""The report's "Full vs Hard" section (``hard.yaml``, :mod:`routing.boards.hard`)."""

from __future__ import annotations

from typing import Any

from routing.report.html import esc, table, td
from routing.report.markdown import fmt


def hard_section(hard: dict[str, Any]) -> str:
    method = hard["method"]
    cap = f", at most {method['cap']}" if method.get("cap") is not None else ""
    out = [
        '<h2 id="hard">Full vs Hard</h2>',
        (
            f'<p class="small muted">{esc(len(hard["item_ids"]))} hard items: per (family, task) the hardest '
            f"{esc(round(100 * method['fraction']))}% "
            f"(small groups: up to {esc(method['min_items'])} items, never more than half{esc(cap)}) by "
            f"{esc(method['difficulty'])} (λ = {esc(method['lam'])}); score: {esc(method['score'])}. "
            f"Model set: {esc(', '.join(hard['models']))}.</p>"
        ),
    ]
    rows = (
        [
            td(model),
            td(e["macro"]["tasks"], True),
            td(fmt(e["macro"]["full"]), True),
            td(fmt(e["macro"]["hard"]), True),
            td(fmt(e["macro"]["gap"]), True),
        ]
        for model, e in sorted(hard["full_vs_hard"].items())
    )
    out.append(table(["model", "tasks", "full", "hard", "gap (full − hard)"], rows, "hard"))
    task_rows = (
        [
            td(t["task"]),
            td(t["family"]),
            td(t["score"]),
            td(t["items"], True),
            td(t["selected"], True),
            td(t["ties_at_cut"], True),
        ]
        for t in hard["tasks"].values()
    )
    out.append(table(["task", "family", "score", "items", "hard items", "ties at cut"], task_rows, "hard-tasks"))
    group_rows = (
        [
            td(t["task"]),
            td(t["family"]),
            td(model),
            td(e["n_full"], True),
            td(fmt(e["full"]), True),
            td(e["n_hard"], True),
            td(fmt(e["hard"]), True),
            td(fmt(e["gap"]), True),
        ]
        for group, t in hard["tasks"].items()
        for model in t["models"]
        if (e := hard["full_vs_hard"].get(model, {}).get("tasks", {}).get(group))
    )
    out.append(table(["task", "family", "model", "n full", "full", "n hard", "hard", "gap"], group_rows, "hard-groups"))
    return "\n".join(out)
