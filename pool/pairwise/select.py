"""What a pairwise stage judges: the run's ties, its answers and items, within the call budget.

:func:`load_selection` reads a finished run the way ``routing.build`` does (its score table and
buckets, the build's defaults), finds the pairs that matter (``routing.decide.judged.tied_pairs``:
tied models with overlapping intervals in a bucket the scores could not decide), takes battles
round-robin over them until the budget (``battles_within``), and keeps, for each battle, the two
stored answers and the item the candidates were asked (from the run's own options, as a resume
rebuilds them). Nothing here calls a model: the dry run stops here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.items import Item
from pool.config import Model, PoolConfig
from pool.pairwise.settings import DEFAULT_BUDGET
from pool.plan import ANSWER_STAGE, plan_from_options
from pool.run_spec import stored_options
from pool.store.outcome import Unit
from pool.store.run_store import RunStore
from routing.boards.leaderboard import build_buckets
from routing.build import BuildOptions
from routing.decide.judged import CALLS_PER_BATTLE, TiedPair, battles_within, tied_pairs
from routing.load.runs import load_runs

Battle = tuple[str, str, str]  # (model a, model b, item id): a is the score decision's higher-ranked


@dataclass(frozen=True)
class Selection:
    """A run's pairs that matter and the battles the budget allows, with what the judge must see."""

    run_dir: Path
    run_id: str
    config: PoolConfig
    judges: tuple[Model, ...]
    pairs: tuple[TiedPair, ...]
    routes: Mapping[str, Mapping[str, Any]]  # every routable bucket's score decision, by bucket id
    battles: tuple[Battle, ...]  # within the budget, each judged once
    all_battles: int  # without a budget
    items: Mapping[str, Item]
    answers: Mapping[tuple[str, str], str]  # (model, item id) → the stored answer text
    budget: int | None

    @property
    def calls(self) -> int:
        """Judge calls the battles cost (both orders, every judge; re-asks not counted)."""
        return len(self.battles) * CALLS_PER_BATTLE * len(self.judges)

    def describe(self) -> dict[str, Any]:
        """What the dry run prints: the ties, the battles and their calls, per bucket."""
        undecided = [bid for bid, route in self.routes.items() if not route["decisive"]]
        per_bucket: dict[str, int] = {}
        chosen = set(self.battles)
        for pair in self.pairs:
            per_bucket[pair.bucket] = per_bucket.get(pair.bucket, 0) + sum(
                (pair.a, pair.b, item) in chosen for item in pair.items
            )
        return {
            "run": str(self.run_dir),
            "judges": [j.name for j in self.judges],
            "routable_buckets": len(self.routes),
            "decisive_buckets": len(self.routes) - len(undecided),
            "tied_buckets": len(undecided),
            "tied_pairs": len(self.pairs),
            "battles": len(self.battles),
            "battles_without_budget": self.all_battles,
            "judge_calls": self.calls,
            "budget": self.budget,
            "battles_per_bucket": per_bucket,
        }


def load_selection(
    run_dir: Path,
    budget: int | None,
    pool: str | None = None,
    options: BuildOptions | None = None,
    buckets: Sequence[str] = (),
) -> Selection:
    """The run's ties and battles (module doc); ``budget`` in judge calls (None: the pool's ``pairwise: {budget}``,
    else ``DEFAULT_BUDGET``; 0: no limit); ``pool`` replaces the run's pool file (another judge);
    ``buckets``: only the ties of these bucket ids (ValueError naming the undecided ones for an unknown id)."""
    build = options or BuildOptions()
    stored = stored_options(run_dir)
    if pool is not None:
        stored["pool"] = pool
    plan, _ = plan_from_options(stored)
    judges = plan.config.judge_models()
    if not judges:
        raise ValueError(f"{stored['pool']}: the pool has no judge: or judges: block; pairwise judging needs a judge")
    table = load_runs([run_dir]).table
    pairs, routes = tied_pairs(
        build_buckets(table, rounds=build.bootstrap, seed=build.seed), table, build.min_n, build.floor, build.alpha
    )
    if buckets:
        unknown = sorted(set(buckets) - {p.bucket for p in pairs})
        if unknown:
            tied = sorted({p.bucket for p in pairs})
            raise ValueError(
                f"--bucket {', '.join(unknown)}: not a bucket with tied pairs in {run_dir}; "
                f"those are: {', '.join(tied)}"
            )
        pairs = [p for p in pairs if p.bucket in buckets]
    known = {m.name for m in plan.config.models}
    pairs = [p for p in pairs if p.a in known and p.b in known]  # a label that is not a pool name is not asked
    if budget is None:
        budget = plan.config.pairwise.budget if plan.config.pairwise is not None else DEFAULT_BUDGET
    battles = battles_within(pairs, budget or None, len(judges))
    everything = battles_within(pairs, None, len(judges))
    with RunStore(run_dir, create=False) as store:
        run_id = store.runs()[0].run_id
        answers: dict[tuple[str, str], str] = {}
        for a, b, item_id in battles:
            for model in (a, b):
                row = store.get_result(run_id, Unit(model, item_id, ANSWER_STAGE))
                if row is not None and row.status != "infra_error":
                    answers[(model, item_id)] = row.text
    items = {item.id: item for item in plan.items if isinstance(item, Item)}
    battles = [(a, b, i) for a, b, i in battles if (a, i) in answers and (b, i) in answers and i in items]
    return Selection(
        run_dir,
        run_id,
        plan.config,
        judges,
        tuple(pairs),
        routes,
        tuple(battles),
        len(everything),
        items,
        answers,
        budget or None,
    )
