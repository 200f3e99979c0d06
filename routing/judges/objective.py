"""Two views of the same answers, side by side: objective checks vs the judge, and decision
recognition vs the open answer it was derived from. Neither blends families or replaces a bucket.

``checks`` — per bucket ranked by an objective check (``Bucket.check``), per model, on the answers
that have both the check's pass and the judge's (``metrics.judge_passed``): the check's pass rate,
the judge's pass rate, their agreement (share of answers where both say the same) and Cohen's κ
(``routing.judges.reliability.cohen_kappa``; None below ``MIN_N`` answers or when both raters are
constant alike). A κ near 0 says the judge's pass/fail is unrelated to whether the SQL ran right.

``decision_recognition`` — per derived task (rows with ``source_item_id``; the DR task is
``<task>-DR``) and its source task, per model, on the items the model has scored in both: DR
accuracy (the single-choice pick) beside the source's per-item score (DTR-F1 for open labels,
accuracy for classification), each with its 95% interval (``routing.stats.intervals.ratio_intervals``:
Wilson for 0/1, t for continuous means).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from eval.gold_types import value_metric_of
from eval.items.scores import CHECK_METRICS, JUDGE_PASSED_METRIC
from routing.boards.leaderboard import Bucket
from routing.judges.reliability import MIN_N, cohen_kappa
from routing.load.table import SCORED, ScoreTable
from routing.stats.intervals import json_number, ratio_intervals


def mean_json(values: np.ndarray) -> dict[str, Any]:
    """``{"value", "ci", "n", "ci_method"}`` of a mean, with the leaderboard's interval rule."""
    values = np.asarray(values, dtype=float)
    if not len(values):
        return {"value": None, "ci": [None, None], "n": 0, "ci_method": None}
    lo, hi, methods = ratio_intervals(values[:, None], np.ones((len(values), 1)))
    return {
        "value": json_number(float(values.mean())),
        "ci": [json_number(lo[0]), json_number(hi[0])],
        "n": len(values),
        "ci_method": methods[0],
    }


def check_agreement(
    table: ScoreTable, buckets: Sequence[Bucket], keep: np.ndarray | None = None
) -> list[dict[str, Any]]:
    """The ``checks`` view (module docstring), one entry per bucket with a check."""
    keep = np.ones(len(table), dtype=bool) if keep is None else keep
    judge_passed = table.metrics.get(JUDGE_PASSED_METRIC)
    tasks, families = table.names("task"), table.names("family")
    out = []
    for bucket in buckets:
        if bucket.check is None or bucket.kind != "task":
            continue
        check = table.metrics[CHECK_METRICS[bucket.check["kind"]]]
        rows = np.flatnonzero(
            (table.status == SCORED)
            & keep
            & (table.task == tasks.index(bucket.name))
            & (table.family == families.index(bucket.family))
            & ~np.isnan(check)
        )
        models = []
        for entrant in np.unique(table.entrant[rows]):
            mine = rows[table.entrant[rows] == entrant]
            both = mine[~np.isnan(judge_passed[mine])] if judge_passed is not None else mine[:0]
            objective, judged = (
                check[both] == 1.0,
                judge_passed[both] == 1.0 if judge_passed is not None else np.zeros(0, bool),
            )
            kappa = cohen_kappa(list(objective), list(judged)) if len(both) >= MIN_N else None
            models.append(
                {
                    "model": table.entrants[int(entrant)].label,
                    "n_checked": len(mine),
                    "n_both": len(both),
                    "check_pass_rate": mean_json(check[mine]),
                    "judge_pass_rate": mean_json(judged.astype(float)),
                    "agreement": json_number(float(np.mean(objective == judged))) if len(both) else None,
                    "kappa": json_number(kappa) if kappa is not None else None,
                }
            )
        out.append({"bucket": bucket.id, **bucket.check, "models": models})
    return out


def decision_recognition(table: ScoreTable, keep: np.ndarray | None = None) -> list[dict[str, Any]]:
    """The ``decision_recognition`` view (module docstring), one entry per (derived task, source task)."""
    if not table.sources:
        return []
    keep = np.ones(len(table), dtype=bool) if keep is None else keep
    scored = np.flatnonzero((table.status == SCORED) & keep)
    where = {(int(table.entrant[r]), table.items[table.item[r]]): int(r) for r in scored}
    tasks, families, gold_types = table.names("task"), table.names("family"), table.names("gold_type")
    pairs: dict[tuple[str, str, str, str, str], dict[int, list[tuple[int, int]]]] = {}
    for (entrant, item), row in where.items():
        source = table.sources.get(item)
        if source is None or (entrant, source) not in where:
            continue
        other = where[(entrant, source)]
        key = (
            tasks[table.task[row]],
            families[table.family[row]],
            tasks[table.task[other]],
            families[table.family[other]],
            gold_types[table.gold_type[other]],
        )
        pairs.setdefault(key, {}).setdefault(entrant, []).append((row, other))
    out = []
    for (task, family, source_task, source_family, source_type), by_entrant in sorted(pairs.items()):
        models = []
        for entrant, both in sorted(by_entrant.items(), key=lambda kv: table.entrants[kv[0]].label):
            derived, source = np.array([a for a, _ in both]), np.array([b for _, b in both])
            models.append(
                {
                    "model": table.entrants[entrant].label,
                    "n": len(both),
                    "dr_accuracy": mean_json(table.value[derived]),
                    "source_score": mean_json(table.value[source]),
                }
            )
        out.append(
            {
                "task": task,
                "bucket": f"{family}/task/{task}",
                "source_task": source_task,
                "source_bucket": f"{source_family}/task/{source_task}",
                "source_gold_type": source_type,
                "source_statistic": value_metric_of(source_type),
                "models": models,
            }
        )
    return out
