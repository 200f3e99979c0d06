"""What the live family's scores are, said wherever they are shown: agreement with a reference agent, not truth.

A live item's reference is the answer a reference agent gave to the question (``pool.live``), and its
task is that agent's name; so the agents behind a build's live rows are the task names of its ``live``
family. ``leaderboard.json`` carries :func:`live_block` as ``live``, and ``leaderboard.md`` and the
report print its note above the family's buckets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from routing.load.table import ScoreTable

LIVE_FAMILY = "live"


def live_agents(table: ScoreTable) -> list[str]:
    """The reference agents of the table's live rows, sorted (empty without live rows)."""
    if LIVE_FAMILY not in table.vocab["family"]:
        return []
    rows = table.family == table.code("family", LIVE_FAMILY)
    return sorted(table.names("task")[code] for code in np.unique(table.task[rows]))


def agreement_note(agents: Sequence[str]) -> str:
    """The sentence the leaderboard and the report put above the live family."""
    who = ", ".join(agents)
    note = (
        f"Scores are agreement with {who}, not truth: each reference is the answer {who} gave to the question "
        "(a live run), judged by the reference contract."
    )
    if len(agents) > 1:
        note += " These runs had several reference agents, and each bucket pools agreement with all of them."
    return note


def live_block(table: ScoreTable) -> dict[str, Any] | None:
    """``leaderboard.json``'s ``live``: the agents and the note; None when the table has no live row."""
    agents = live_agents(table)
    return {"agents": agents, "note": agreement_note(agents)} if agents else None
