"""Tokens, cost and latency per model for ``summary.json``: what tonight's run spent, and on whom.

Each result is charged to the model that answered it (``answered_by``: the judge for verdicts).
``cost`` counts the calls sent tonight (cache hits cost nothing) at the pool file's prices;
``cost_if_uncached`` prices every recorded answer as if sent, the figure to compare across nights.
A model without a price has ``cost: null`` — unknown, never 0.
"""

from __future__ import annotations

import statistics
from array import array
from typing import Any

from pool.config import PoolConfig
from pool.execute.budget import call_cost
from pool.store.outcome import Result


class CostTally:
    """``{"models": {name: {...}}, "total_cost": float | None, "priced": [...]}`` (:meth:`summary`),
    counted one result at a time, so a pass made anyway (the results.jsonl export) feeds it
    instead of a pass of its own over the store."""

    def __init__(self, config: PoolConfig) -> None:
        self.config = config
        self.per_model: dict[str, dict[str, Any]] = {}
        # The latencies a median is taken of, as packed doubles (8 bytes a call, not a float object each).
        self.latencies: dict[str, array[float]] = {}
        self.names = {m.name: m for m in config.models}
        for judge in config.judge_models():
            self.names.setdefault(judge.name, judge)

    def add(self, result: Result) -> None:
        who = result.answered_by or result.model
        entry = self.per_model.setdefault(
            who,
            {
                "calls": 0,
                "cached": 0,
                "prompt_tokens": 0,
                "completion_tokens": 0,
                "cost": 0.0,
                "cost_if_uncached": 0.0,
                "median_latency_s": None,
            },
        )
        model = self.names.get(who)
        price = self.config.price_of(model) if model is not None else None
        cost = call_cost(price, result.prompt_tokens, result.completion_tokens)
        entry["prompt_tokens"] += result.prompt_tokens or 0
        entry["completion_tokens"] += result.completion_tokens or 0
        if result.cached:
            entry["cached"] += 1
        else:
            entry["calls"] += 1
            if result.latency_s is not None:
                self.latencies.setdefault(who, array("d")).append(result.latency_s)
        if price is None:
            entry["cost"] = entry["cost_if_uncached"] = None
        elif entry["cost"] is not None:
            entry["cost"] += 0.0 if result.cached else (cost or 0.0)
            entry["cost_if_uncached"] += cost or 0.0

    def summary(self) -> dict[str, Any]:
        per_model = {who: dict(entry) for who, entry in self.per_model.items()}
        for who, entry in per_model.items():
            if self.latencies.get(who):
                entry["median_latency_s"] = round(statistics.median(self.latencies[who]), 4)
            for key in ("cost", "cost_if_uncached"):
                if entry[key] is not None:
                    entry[key] = round(entry[key], 6)
        costs = [e["cost"] for e in per_model.values()]
        total = round(sum(costs), 6) if costs and all(c is not None for c in costs) else None
        return {
            "models": per_model,
            "total_cost": total,
            "priced": sorted(w for w, e in per_model.items() if e["cost"] is not None),
        }
