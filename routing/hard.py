"""Hard subsets by composite difficulty (LingLan §2.3), written to ``hard.yaml``.

Per task: the items × models correctness matrix (1 correct, 0 not, NaN no scored result) where
correct is the row's ``passed``, or — when a scorer left ``passed`` null — ``value ≥
eval.scores.PASS_THRESHOLD`` (0.5). Each item's difficulty is ``eval.composite_difficulty``:
D = (1 − mean) + λ · variance over the models (population variance; λ = ``--lam``, default 0.5):
high for items most models miss and for items that split the models. The top ``--hard-n`` items
per task by D (all when fewer; ties keep item-id order) form the subset (``eval.difficulty.hardest``,
the selection rule of ``eval.hard_subset``).

The ranking depends on the models evaluated, so the model set is recorded. ``hard.yaml`` holds
``item_ids`` (what ``pool.run --subset hard.yaml`` reads) plus the method and metadata, and the
Full vs Hard table: per model and task the mean score on all items and on the hard items, and the
gap (full − hard); ``macro`` averages the tasks where the model has both.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eval.difficulty import composite_difficulty, hardest
from eval.scores import PASS_THRESHOLD
from routing.pairwise import score_matrix
from routing.stats import json_number
from routing.table import SCORED, ScoreTable

SCHEMA_VERSION = 1


def correctness(table: ScoreTable, rows: np.ndarray) -> np.ndarray:
    """1/0 per row: ``passed``, or value ≥ PASS_THRESHOLD where passed is null."""
    passed = table.passed[rows]
    return np.where(np.isnan(passed), (table.value[rows] >= PASS_THRESHOLD).astype(float), passed)


def build_hard(table: ScoreTable, keep: np.ndarray, lam: float = 0.5, top_n: int = 400) -> dict[str, Any]:
    """The hard subset and the Full vs Hard table (the body of hard.yaml, minus run metadata)."""
    allowed = np.flatnonzero(keep & (table.status == SCORED))
    tasks: dict[str, Any] = {}
    selected_items: list[dict[str, Any]] = []
    full_vs_hard: dict[str, dict[str, Any]] = {}
    models: set[str] = set()
    for code, task in enumerate(table.names("task")):
        rows = allowed[table.task[allowed] == code]
        if not len(rows):
            continue
        matrix, entrants, items = score_matrix(table, rows, correctness(table, rows))
        item_ids = [table.items[i] for i in items]
        difficulty = composite_difficulty(matrix, lam)
        chosen = hardest(item_ids, difficulty, top_n)
        position = {item_id: i for i, item_id in enumerate(item_ids)}
        labels = [table.entrants[e].label for e in entrants]
        models.update(labels)
        family = table.names("family")[int(table.family[rows[0]])]
        chosen_d = difficulty[[position[i] for i in chosen]] if chosen else np.array([])
        tasks[task] = {
            "family": family, "items": len(item_ids), "selected": len(chosen), "models": labels,
            "difficulty_range": [json_number(chosen_d.min()), json_number(chosen_d.max())] if chosen else None,
        }  # fmt: skip
        for item_id in chosen:
            i = position[item_id]
            selected_items.append({"id": item_id, "task": task, "difficulty": json_number(difficulty[i]),
                                   "mean_correct": json_number(np.nanmean(matrix[i]))})  # fmt: skip
        values, _, _ = score_matrix(table, rows)
        hard_rows = np.isin(items, [items[position[i]] for i in chosen])
        for j, label in enumerate(labels):
            full, hard = values[:, j], values[hard_rows, j]
            n_full, n_hard = int((~np.isnan(full)).sum()), int((~np.isnan(hard)).sum())
            entry = {"full": json_number(np.nanmean(full)) if n_full else None,
                     "hard": json_number(np.nanmean(hard)) if n_hard else None, "n_full": n_full, "n_hard": n_hard}  # fmt: skip
            entry["gap"] = json_number(entry["full"] - entry["hard"]) if n_full and n_hard else None
            full_vs_hard.setdefault(label, {"tasks": {}})["tasks"][task] = entry
    for entry in full_vs_hard.values():
        both = [t for t in entry["tasks"].values() if t["gap"] is not None]
        full = float(np.mean([t["full"] for t in both])) if both else None
        hard = float(np.mean([t["hard"] for t in both])) if both else None
        entry["macro"] = {"full": json_number(full), "hard": json_number(hard), "tasks": len(both),
                          "gap": json_number(full - hard) if both else None}  # fmt: skip
    return {
        "method": {
            "difficulty": "D = (1 - mean) + lam * variance of correctness over models (population variance)",
            "correctness": f"passed; where passed is null, value >= {PASS_THRESHOLD}",
            "lam": lam, "top_n_per_task": top_n, "order": "descending D; ties keep item-id order",
        },
        "models": sorted(models),
        "tasks": tasks,
        "item_ids": [item["id"] for item in selected_items],
        "items": selected_items,
        "full_vs_hard": full_vs_hard,
    }  # fmt: skip

