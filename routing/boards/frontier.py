"""Quality against cost, per family: which models no other model beats on both.

For each family and model: ``score`` = mean item value over its scored rows (the family's items
once each), ``mean_cost`` = mean cost of those answers at the pool file's prices (``scores.jsonl``
``cost``; null when any answer is unpriced — a cost with holes is not a cost), plus the median
latency. A priced model is *on the frontier* when no other priced model has a score ≥ and a cost ≤
with one of them strict (Pareto optimal); cheaper-but-worse and better-but-dearer models both stay
on it, so the table reads as the price of each step of quality. Scores here are point estimates:
the family decisions (paired tests) in the manifest say which differences are real.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from routing.load.table import SCORED, ScoreTable
from routing.stats.intervals import json_number


def cost_frontier(table: ScoreTable, keep: np.ndarray) -> dict[str, list[dict[str, Any]]]:
    """``{family: [{model, n, score, mean_cost, median_latency_s, on_frontier}]}``, best score first."""
    out: dict[str, list[dict[str, Any]]] = {}
    families = table.names("family")
    cost = table.cost if table.cost is not None else np.full(len(table), np.nan)
    scored = (table.status == SCORED) & keep
    for code, family in enumerate(families):
        rows_family = np.flatnonzero(scored & (table.family == code))
        if not len(rows_family):
            continue
        points = []
        for label in sorted({table.entrants[e].model_label for e in np.unique(table.entrant[rows_family])}):
            members = [i for i, e in enumerate(table.entrants) if e.model_label == label]
            rows = rows_family[np.isin(table.entrant[rows_family], members)]
            _, first = np.unique(table.item[rows], return_index=True)  # one answer per item, whatever the judge
            rows = rows[first]
            costs, latency = cost[rows], table.latency_s[rows]
            points.append(
                {
                    "model": label,
                    "n": int(len(rows)),
                    "score": json_number(table.value[rows].mean()),
                    "mean_cost": json_number(costs.mean()) if not np.isnan(costs).any() else None,
                    "median_latency_s": json_number(np.median(latency[~np.isnan(latency)]))
                    if (~np.isnan(latency)).any()
                    else None,
                }
            )
        for point in points:
            point["on_frontier"] = point["mean_cost"] is not None and not any(
                other is not point
                and other["mean_cost"] is not None
                and other["score"] >= point["score"]
                and other["mean_cost"] <= point["mean_cost"]
                and (other["score"] > point["score"] or other["mean_cost"] < point["mean_cost"])
                for other in points
            )
        out[family] = sorted(points, key=lambda p: (-(p["score"] or 0.0), p["model"]))
    return out
