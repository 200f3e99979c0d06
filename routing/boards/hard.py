"""Hard subsets by composite difficulty (LingLan §2.3), per (family, task), written to ``hard.yaml``.

A *group* is one (family, task): families never mix, so a task name shared by two families makes
two groups. In a group, the items × models matrix holds each scored row's ``value`` — the scorer's
continuous score where it has one (judge total / 40, char-F1, DTR-F1, CHIP total, …), 0/1 where the
scorer only knows right and wrong (the group is then labelled ``pass/fail``); NaN where a model has
no scored result. Each item's difficulty is ``eval.composite_difficulty``:
D = (1 − mean) + λ · variance over the models (population variance; λ = ``--lam``, default 0.5).
On 0/1 scores D = (1 − μ)(1 + λμ) is a function of μ alone (monotone for λ ≤ 1), so the variance
term only tells items apart on continuous scores — hence the value, not ``passed``.

Size: k = ⌈fraction · n⌉ items of a group of n (``--hard-fraction``, default 0.25), raised to
min(``--hard-min``, ⌊n/2⌋) (default 5) so small groups still get a few, at most ``--hard-n`` when
given, and at most n − 1: the hard subset is always a proper subset, so the Full vs Hard gap says
something (a one-item group has no hard subset). The top k by D form the subset
(``eval.metrics.difficulty.hardest``, the selection rule of ``eval.hard_subset``; ties keep item-id order,
and ``ties_at_cut`` counts the items left out with the same D as the last one chosen).

The ranking depends on the models evaluated, so the model set is recorded. ``hard.yaml`` holds the
flat ``item_ids`` (what ``pool.run --subset hard.yaml`` reads), the ids per group under ``tasks``
(keyed ``family/task``), the method, and the Full vs Hard table: per model and group the mean score
on all items and on the hard items and the gap (full − hard); ``macro`` averages the groups where the
model has both.

:func:`hard_recovery_simulation` measures what the selection is worth: on simulated scores with a
known latent difficulty per item, the share of the truly hardest items the subset recovers.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from eval.items.scores import FAMILIES, PASS_THRESHOLD
from eval.metrics.difficulty import composite_difficulty, hardest
from routing.boards.pairwise import score_matrix
from routing.load.table import SCORED, ScoreTable, group_rows
from routing.stats.intervals import json_number

SCHEMA_VERSION = 2
DEFAULT_FRACTION = 0.25
DEFAULT_MIN_ITEMS = 5
CONTINUOUS, PASS_FAIL = "continuous", "pass/fail"


def hard_size(
    n_items: int, fraction: float = DEFAULT_FRACTION, min_items: int = DEFAULT_MIN_ITEMS, cap: int | None = None
) -> int:
    """k = max(⌈fraction·n⌉, min(min_items, ⌊n/2⌋)), at most ``cap`` (None: no cap) and at most n − 1."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must lie in (0, 1), got {fraction}")
    if n_items < 2:
        return 0
    k = max(math.ceil(fraction * n_items), min(min_items, n_items // 2))
    if cap is not None:
        k = min(k, cap)
    return min(k, n_items - 1)


def score_scale(values: np.ndarray) -> str:
    """``continuous`` when some observed score lies strictly between 0 and 1, else ``pass/fail``."""
    observed = values[~np.isnan(values)]
    return CONTINUOUS if ((observed > 0.0) & (observed < 1.0)).any() else PASS_FAIL


def _groups(table: ScoreTable, allowed: np.ndarray) -> Iterator[tuple[str, str, np.ndarray]]:
    """(family, task, rows) per (family, task) among the ``allowed`` rows (a mask), families in
    report order, then tasks by name; one family's rows at a time."""
    families, tasks = table.names("family"), table.names("task")
    rank = {family: i for i, family in enumerate(FAMILIES)}
    for code in sorted(range(len(families)), key=lambda c: (rank.get(families[c], len(rank)), families[c])):
        rows = np.flatnonzero(allowed & (table.family == code))
        for (task,), idx in group_rows([table.task[rows]]):
            yield families[code], tasks[task], rows[idx]


def _model_gap(full: np.ndarray, hard: np.ndarray) -> dict[str, Any]:
    n_full, n_hard = int((~np.isnan(full)).sum()), int((~np.isnan(hard)).sum())
    mean_full = float(np.nanmean(full)) if n_full else None
    mean_hard = float(np.nanmean(hard)) if n_hard else None
    gap = mean_full - mean_hard if mean_full is not None and mean_hard is not None else None
    return {
        "full": json_number(mean_full),
        "hard": json_number(mean_hard),
        "gap": json_number(gap),
        "n_full": n_full,
        "n_hard": n_hard,
    }


def build_hard(
    table: ScoreTable,
    keep: np.ndarray,
    lam: float = 0.5,
    fraction: float = DEFAULT_FRACTION,
    min_items: int = DEFAULT_MIN_ITEMS,
    cap: int | None = None,
) -> dict[str, Any]:
    """The hard subset and the Full vs Hard table (the body of hard.yaml, minus run metadata)."""
    allowed = keep & (table.status == SCORED)
    groups: dict[str, Any] = {}
    selected_items: list[dict[str, Any]] = []
    full_vs_hard: dict[str, dict[str, Any]] = {}
    models: set[str] = set()
    for family, task, rows in _groups(table, allowed):
        values, entrants, items = score_matrix(table, rows)
        item_ids = [table.items[i] for i in items]
        difficulty = composite_difficulty(values, lam)
        k = hard_size(len(item_ids), fraction, min_items, cap)
        chosen = np.array(hardest(range(len(item_ids)), difficulty, k), dtype=int)
        hard_rows = np.zeros(len(item_ids), dtype=bool)
        hard_rows[chosen] = True
        labels = [table.entrants[e].label for e in entrants]
        models.update(labels)
        group_id = f"{family}/{task}"
        cut = difficulty[chosen[-1]] if k else None
        groups[group_id] = {
            "family": family,
            "task": task,
            "score": score_scale(values),
            "items": len(item_ids),
            "selected": k,
            "models": labels,
            "difficulty_range": [json_number(cut), json_number(difficulty[chosen].max())] if k else None,
            "ties_at_cut": int((difficulty[~hard_rows] == cut).sum()) if k else 0,
            "item_ids": [item_ids[i] for i in chosen],
        }
        for i in chosen:
            selected_items.append(
                {
                    "id": item_ids[i],
                    "family": family,
                    "task": task,
                    "difficulty": json_number(difficulty[i]),
                    "mean_score": json_number(np.nanmean(values[i])),
                }
            )
        for j, label in enumerate(labels):
            entry = _model_gap(values[:, j], values[hard_rows, j])
            full_vs_hard.setdefault(label, {"tasks": {}})["tasks"][group_id] = entry
    for entry in full_vs_hard.values():
        both = [t for t in entry["tasks"].values() if t["gap"] is not None]
        full = float(np.mean([t["full"] for t in both])) if both else None
        hard = float(np.mean([t["hard"] for t in both])) if both else None
        entry["macro"] = {
            "full": json_number(full),
            "hard": json_number(hard),
            "tasks": len(both),
            "gap": json_number(full - hard) if both else None,
        }
    return {
        "method": {
            "groups": "per (family, task); keys of tasks are family/task",
            "difficulty": "D = (1 - mean) + lam * variance of the per-item scores over models (population variance)",
            "score": (
                "the scored row's value: continuous where the scorer has one (judge total/40, F1, CHIP total), "
                "else 0/1 (the group is labelled pass/fail)"
            ),
            "lam": lam,
            "fraction": fraction,
            "min_items": min_items,
            "cap": cap,
            "size": "k = max(ceil(fraction*n), min(min_items, floor(n/2))), at most cap, at most n - 1",
            "order": "descending D; ties keep item-id order",
        },
        "models": sorted(models),
        "tasks": groups,
        "item_ids": [item["id"] for item in selected_items],
        "items": selected_items,
        "full_vs_hard": full_vs_hard,
    }


def hard_recovery_simulation(
    seed: int,
    n_items: int = 400,
    n_models: int = 6,
    fraction: float = DEFAULT_FRACTION,
    *,
    lam: float = 0.5,
    noise: float = 1.0,
    levels: int = 40,
    pass_threshold: float = PASS_THRESHOLD,
) -> dict[str, Any]:
    """How many of the truly hardest items the hard subset recovers, on simulated scores.

    Item i has latent difficulty b_i ~ N(0, 1.5²), model j ability θ_j ~ N(0, 1); the score is
    round(levels · σ(θ_j − b_i + ε_ij)) / levels with ε ~ N(0, noise²) (a judge total out of 40 by
    default) and its pass/fail form is score ≥ ``pass_threshold``. With k = :func:`hard_size`
    (n, fraction) the truly hard items are the k of largest b_i; ``precision_*`` is the share of
    the k chosen items (by D on the continuous scores, and on pass/fail) that are truly hard —
    ``chance`` = k/n is what a random subset scores. ``gap_*`` is the Full − Hard mean score over
    the models (mean and smallest) on the continuous subset.
    """
    if n_models < 1:
        raise ValueError(f"n_models must be >= 1, got {n_models}")
    rng = np.random.default_rng(seed)
    latent = rng.normal(0.0, 1.5, size=n_items)
    ability = rng.normal(0.0, 1.0, size=n_models)
    logits = ability[None, :] - latent[:, None] + rng.normal(0.0, noise, size=(n_items, n_models))
    scores = np.round(levels / (1.0 + np.exp(-logits))) / levels
    passed = (scores >= pass_threshold).astype(float)
    k = hard_size(n_items, fraction)
    ids = list(range(n_items))
    truth = set(np.argsort(-latent, kind="stable")[:k].tolist())
    chosen = hardest(ids, composite_difficulty(scores, lam), k)
    chosen_pass_fail = hardest(ids, composite_difficulty(passed, lam), k)
    gaps = scores.mean(axis=0) - scores[chosen].mean(axis=0) if k else np.zeros(n_models)
    return {
        "seed": seed,
        "n_items": n_items,
        "n_models": n_models,
        "fraction": fraction,
        "k": k,
        "precision_continuous": len(truth.intersection(chosen)) / k if k else None,
        "precision_pass_fail": len(truth.intersection(chosen_pass_fail)) / k if k else None,
        "chance": k / n_items if n_items else None,
        "gap_mean": float(gaps.mean()),
        "gap_min": float(gaps.min()),
    }
