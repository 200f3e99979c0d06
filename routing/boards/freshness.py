"""Which buckets rank items whose gold may be stale: the items carrying a gold point that a freshness audit
(:mod:`routing.load.freshness`) found ``drifted``.

The items are not dropped and no statistic changes: each flagged bucket's JSON gains ``gold_may_be_stale``
(how many of its scored items carry a drifted point, their ids, the points), and the leaderboard gains
``gold_freshness`` (the audit, its drifted points and the items of this build that carry them), so
``leaderboard.md`` and ``report.html`` can say where a score rests on a gold a person should review.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from routing.boards.leaderboard import Bucket
from routing.load.freshness import FreshnessAudit
from routing.load.table import ScoreTable


def flag_stale_gold(
    table: ScoreTable, buckets: Sequence[Bucket], audit: FreshnessAudit, families: Mapping[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    """Mark the flagged buckets in ``families`` (the leaderboard's bucket JSON, in place) and return the
    leaderboard's ``gold_freshness`` block (module doc)."""
    by_item = audit.drifted_by_item()
    flagged = {index for index, item_id in enumerate(table.items) if item_id in by_item}
    marks: dict[str, dict[str, Any]] = {}
    for bucket in buckets:
        indices = np.unique(np.concatenate([c.items for c in bucket.cells])) if bucket.cells else []
        hits = [table.items[i] for i in indices if int(i) in flagged]
        if hits:
            points = dict.fromkeys(p.text for item_id in hits for p in by_item[item_id])
            marks[bucket.id] = {"items": len(hits), "item_ids": hits, "points": list(points)}
    for entries in families.values():
        for entry in entries:
            if entry["id"] in marks:
                entry["gold_may_be_stale"] = marks[entry["id"]]
    in_run = {table.items[i] for i in flagged}
    return {
        "audit": audit.path,
        "generated_at": audit.generated_at,
        "judges": list(audit.judges),
        "points": audit.points,
        "drifted_points": [
            {
                "domain": p.domain,
                "text": p.text,
                "current_guideline": p.current_guideline,
                "note": p.note,
                "item_ids": list(p.item_ids),
                "items_in_build": [i for i in p.item_ids if i in in_run],
            }
            for p in audit.drifted
        ],
        "flagged_items": len(in_run),
        "buckets": sorted(marks),
    }
