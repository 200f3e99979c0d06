"""Whether a run has a pairwise stage, its budget, and what its dry run can say about it.

Light on purpose: ``pool.api`` reads these before a run starts, without the statistics the stage
itself needs (``pool.pairwise.select``).
"""

from __future__ import annotations

from collections.abc import Mapping
from math import comb
from typing import Any

from pool.config import PoolConfig
from pool.config.schema import Pairwise
from pool.plan import Plan
from routing.decide.judged import CALLS_PER_BATTLE

DEFAULT_BUDGET: int = Pairwise.model_fields["budget"].default  # judge calls, when neither a flag nor the pool says


def stage_budget(options: Mapping[str, Any], config: PoolConfig) -> int | None:
    """A run's pairwise stage: None when it has none, else its budget in judge calls (0: no limit).

    On with ``--pairwise`` or ``--pairwise-budget`` (stored options) or the pool file's ``pairwise:``
    block (unless ``enabled: false``); off whenever the run does not judge (``--no-judge``). The budget
    is ``--pairwise-budget``, else the block's ``budget``, else :data:`DEFAULT_BUDGET`."""
    block = config.pairwise
    wanted = options.get("pairwise") or options.get("pairwise_budget") is not None
    if options.get("no_judge") or not (wanted or (block is not None and block.enabled)):
        return None
    if options.get("pairwise_budget") is not None:
        return int(options["pairwise_budget"])
    return block.budget if block is not None else DEFAULT_BUDGET


def pairwise_plan(plan: Plan, options: Mapping[str, Any], judges: int) -> dict[str, Any]:
    """The dry run's ``pairwise`` entry ({} without a stage). Which models tie is known only once the run
    is scored, so it gives the most the stage can ask: every pair of models on every item, both orders,
    every judge, capped by the budget; ``python -m pool.pairwise RUN_DIR --dry-run`` counts a scored run's."""
    budget = stage_budget(options, plan.config)
    if budget is None or not judges:
        return {}
    battles = comb(len(plan.models), 2) * len(plan.items)
    calls = battles * CALLS_PER_BATTLE * judges
    return {
        "pairwise": {
            "budget": budget or None,
            "judges": judges,
            "battles_at_most": battles,
            "judge_calls_at_most": min(calls, budget) if budget else calls,
            "note": "only the pairs the scores leave tied are judged; "
            "python -m pool.pairwise RUN_DIR --dry-run counts them once the run is scored",
        }
    }
