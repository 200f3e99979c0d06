"""How well the heuristic predicts what models find hard: Spearman's ρ between an item's heuristic
difficulty and its observed composite difficulty in a run.

The observed difficulty is the one hard subsets use (``eval.composite_difficulty``, LingLan §2.3):
D = (1 − mean) + λ·variance of the item's scored ``value`` over the run's models (λ = 0.5), read
from ``RUN_DIR/scores.jsonl`` (rows with ``status: scored``). ρ is reported per track and over
every item the heuristic reads (reference and criteria); items of other gold types all sit at 0.5
and would only add ties, so they are counted but left out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from eval.items import Item
from eval.metrics.difficulty import composite_difficulty
from eval.subsets.heuristic import FORMULAS, difficulties

MIN_ITEMS = 3


class RunReadError(ValueError):
    """A run folder whose scores cannot be read; the message names the file and line."""


def observed_difficulty(run_dir: Path, lam: float = 0.5) -> dict[str, float]:
    """Item id → D over the models that scored it, from ``run_dir/scores.jsonl``."""
    path = run_dir / "scores.jsonl"
    if not path.is_file():
        raise RunReadError(f"{path}: not found; pass a run folder written by python -m pool.run")
    values: dict[str, dict[str, float]] = {}
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RunReadError(f"{path}:{number}: not a JSON line ({exc.msg})") from None
            value = row.get("value") if isinstance(row, dict) else None
            if row.get("status") != "scored" or not isinstance(value, (int, float)) or math.isnan(value):
                continue
            values.setdefault(str(row.get("item_id")), {})[str(row.get("model"))] = float(value)
    ids = sorted(values)
    models = sorted({model for per_model in values.values() for model in per_model})
    matrix = np.full((len(ids), len(models)), np.nan)
    column = {model: j for j, model in enumerate(models)}
    for i, item_id in enumerate(ids):
        for model, value in values[item_id].items():
            matrix[i, column[model]] = value
    return dict(zip(ids, composite_difficulty(matrix, lam).tolist(), strict=True)) if ids else {}


def _rho(pairs: list[tuple[float, float]]) -> dict[str, Any]:
    if len(pairs) < MIN_ITEMS:
        return {"n": len(pairs), "rho": None, "p": None, "note": f"fewer than {MIN_ITEMS} items"}
    heuristic, observed = zip(*pairs, strict=True)
    if len(set(heuristic)) < 2 or len(set(observed)) < 2:
        return {"n": len(pairs), "rho": None, "p": None, "note": "one side is constant"}
    result = stats.spearmanr(heuristic, observed)
    return {"n": len(pairs), "rho": round(float(result.statistic), 4), "p": round(float(result.pvalue), 4)}


def agreement(items: Iterable[Item], observed: Mapping[str, float]) -> dict[str, Any]:
    """ρ(heuristic, observed D) per track and over every reference and criteria item the run scored."""
    items = list(items)
    heuristic = difficulties(items)
    read = [item for item in items if item.gold_type in FORMULAS and item.id in observed]
    per_track: dict[str, list[tuple[float, float]]] = {}
    for item in read:
        per_track.setdefault(item.track, []).append((heuristic[item.id], observed[item.id]))
    return {
        "observed_items": len(observed),
        "matched_items": sum(item.id in observed for item in items),
        "other_gold_types_left_out": sum(item.id in observed and item.gold_type not in FORMULAS for item in items),
        "overall": _rho([pair for pairs in per_track.values() for pair in pairs]),
        "per_track": {track: _rho(pairs) for track, pairs in sorted(per_track.items())},
    }
