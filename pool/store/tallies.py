"""The counts ``summary.json`` reports, computed by SQLite over the run store instead of over rows in memory.

Why in SQL: a run of 10⁶ results would otherwise be loaded whole (every answer's text) to count
statuses and sum tokens. Here each figure is one ``GROUP BY`` query and the medians one window
query per grouping, so the driver's memory does not grow with the run. The figures are exactly
those of :func:`pool.store.export.summarize` over the same rows (a test checks it):

- a row is charged to its answerer, ``answered_by`` or, for rows stored before that column
  existed, the unit's model;
- a superseded infra error is charged to the answerer of its unit's current row, else its model;
- ``median_latency_s`` is the median of ``latency_s`` over answered (not ``infra_error``),
  non-cached rows with a latency — the middle value, or the mean of the two middle values.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

ANSWERER = "CASE WHEN answered_by != '' THEN answered_by ELSE model END"
Group = tuple[str | None, str | None]  # (answerer, stage); None: all of them


@dataclass(frozen=True)
class Tally:
    """One group's sums (what :func:`pool.store.export._tally` counts), medians aside."""

    results: int = 0
    ok: int = 0
    error: int = 0
    infra_error: int = 0
    attempts: int = 0
    retries: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    truncated: int = 0  # "error" rows by reason (see pool.store.outcome.ANSWER_FLAWS)
    empty: int = 0
    oversize: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(*(a + b for a, b in zip(self.__dict__.values(), other.__dict__.values(), strict=True)))


@dataclass(frozen=True)
class StoreTallies:
    """Per (answerer, stage): the results' sums, the superseded rows' (attempts, retries), medians."""

    results: dict[tuple[str, str], Tally]
    superseded: dict[tuple[str, str], tuple[int, int]]
    medians: dict[Group, float]


def read_tallies(conn: sqlite3.Connection, run_id: str) -> StoreTallies:
    results = {
        (row[0], row[1]): Tally(*row[2:])
        for row in conn.execute(
            f"SELECT {ANSWERER} AS who, stage, COUNT(*), SUM(status = 'ok'), SUM(status = 'error'),"
            " SUM(status = 'infra_error'), SUM(attempts), SUM(retries), SUM(cached),"
            " SUM(COALESCE(prompt_tokens, 0)), SUM(COALESCE(completion_tokens, 0)),"
            " SUM(status = 'error' AND error_class = 'truncated'), SUM(status = 'error' AND error_class = 'empty'),"
            " SUM(status = 'error' AND error_class = 'oversize')"
            " FROM results WHERE run_id = ? GROUP BY who, stage",
            (run_id,),
        )
    }
    superseded = {
        (row[0], row[1]): (row[2], row[3])
        for row in conn.execute(
            "SELECT COALESCE(CASE WHEN r.answered_by != '' THEN r.answered_by ELSE r.model END, s.model) AS who,"
            " s.stage, SUM(s.attempts), SUM(s.retries) FROM superseded_infra_errors s LEFT JOIN results r"
            " ON r.run_id = s.run_id AND r.model = s.model AND r.item_id = s.item_id AND r.stage = s.stage"
            " WHERE s.run_id = ? GROUP BY who, s.stage",
            (run_id,),
        )
    }
    medians: dict[Group, float] = {}
    for columns in ((ANSWERER, "stage"), (ANSWERER,), ()):
        medians.update(_medians(conn, run_id, columns))
    return StoreTallies(results, superseded, medians)


def _medians(conn: sqlite3.Connection, run_id: str, columns: tuple[str, ...]) -> dict[Group, float]:
    """The median latency of each group of ``columns`` (answerer, stage): its middle row(s) by rank."""
    selected = "".join(f"{c} AS g{i}, " for i, c in enumerate(columns))
    keys = "".join(f"g{i}, " for i in range(len(columns)))
    partition = f"PARTITION BY {keys[:-2]}" if columns else ""
    rows = conn.execute(
        f"SELECT {keys}latency_s FROM ("
        f" SELECT {keys}latency_s, ROW_NUMBER() OVER ({partition} ORDER BY latency_s) AS k,"
        f" COUNT(*) OVER ({partition}) AS n FROM ("
        f"  SELECT {selected}latency_s FROM results"
        "   WHERE run_id = ? AND status != 'infra_error' AND cached = 0 AND latency_s IS NOT NULL))"
        f" WHERE k IN ((n + 1) / 2, (n + 2) / 2) ORDER BY {keys}k",
        (run_id,),
    ).fetchall()
    middles: dict[Group, list[float]] = {}
    for row in rows:
        group = (row[0] if columns else None, row[1] if len(columns) > 1 else None)
        middles.setdefault(group, []).append(row[-1])
    return {group: values[0] if len(values) == 1 else (values[0] + values[1]) / 2 for group, values in middles.items()}
