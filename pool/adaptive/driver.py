"""The adaptive loop inside a run's session: ask a few items, score them, update, until every test stops.

Each round asks every unfinished test for its next ``batch`` items (maximum information at the
current ability, randomesque — :class:`routing.bank.adaptive.AdaptiveTest`), plans those units in
the run store, sends them through the session (so the cache, retries, budget and store work as for
any answer) and scores them judge-free (:func:`eval.scorers.score_answer`). A unit with no answer
(``infra_error``) tells the test nothing. A resumed run first tells each test the answers already
stored, so it carries on where it stopped.

At the end ``RUN_DIR/adaptive.json`` holds, per model and family, the estimated full-suite score with
its 95% interval (0–100, ``estimated: true``), the items used, and the notes on what was evaluated
in full instead; :mod:`routing.bank.estimates` reads it for the leaderboard, report and manifest.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eval.files import atomic_write_text
from eval.items.scores import Score
from eval.scorers import score_answer
from pool.adaptive.tests import ADAPTIVE_FILENAME, AdaptivePlan, FamilyTest
from pool.execute.progress import ProgressDisplay
from pool.execute.session import Session
from pool.plan import ANSWER_STAGE, Plan
from pool.store.outcome import Unit
from pool.store.run_store import RunStore
from routing.bank.adaptive import AdaptiveTest

BATCH = 4  # items asked per test and round: a few requests in flight per model, few wasted past the stop


def _start(test: FamilyTest, options: Mapping[str, Any], seed: int) -> AdaptiveTest:
    return AdaptiveTest(
        test.bank.fit.a[test.index],
        test.bank.fit.b[test.index],
        budget=test.budget,
        target_se=float(options.get("adaptive_se") or 1.0) / 100.0,
        seed=seed,
        check=test.bank.check,
    )


def _score(plan: Plan, store: RunStore, run_id: str, unit: Unit) -> float | None:
    result = store.get_result(run_id, unit)
    if result is None:
        return None
    score = score_answer(plan.items_by_id[unit.item_id], result.text, result.status)
    return score.value if isinstance(score, Score) and score.status == "scored" else None


async def run_adaptive(
    session: Session, store: RunStore, run_id: str, plan: Plan, adaptive: AdaptivePlan, options: Mapping[str, Any]
) -> dict[str, Any]:
    """Run every adaptive test to its stop; returns (and writes to ``adaptive.json``) the estimates."""
    models = {m.name: m for m in plan.models}
    dispatcher = session.dispatcher(models, plan.items_by_id)
    seed = int(options.get("adaptive_seed") or 0)
    running = [(t, _start(t, options, seed + n)) for n, t in enumerate(adaptive.tests)]
    planned = {(u.model, u.item_id) for u in store.planned_units(run_id) if u.stage == ANSWER_STAGE}
    for test, state in running:  # a resumed run: what was asked before counts
        for j, item in enumerate(test.item_ids):
            if (test.model, item) in planned:
                state.asked.add(j)
                value = _score(plan, store, run_id, Unit(test.model, item, ANSWER_STAGE))
                if value is not None:
                    state.tell(j, value)
    budgets: dict[str, int] = {}
    for test, state in running:
        budgets[test.model] = budgets.get(test.model, 0) + test.budget - len(state.asked)
    progress = ProgressDisplay(budgets, interactive=False, interval_s=float(options.get("log_interval") or 30.0))
    rounds = 0
    while True:
        asked: list[tuple[FamilyTest, AdaptiveTest, int, Unit]] = []
        for test, state in running:
            for j in state.next_items(BATCH):
                asked.append((test, state, j, Unit(test.model, test.item_ids[j], ANSWER_STAGE)))
        if not asked:
            break
        rounds += 1
        units = [unit for *_, unit in asked]
        store.save_plan(run_id, units)
        await session.send(dispatcher.lanes(units), progress=progress)
        for _, state, j, unit in asked:
            value = _score(plan, store, run_id, unit)
            if value is not None:
                state.tell(j, value)
    out: dict[str, Any] = {"schema": 1, "models": {}, **adaptive.to_json(), "rounds": rounds}
    for test, state in running:
        estimate = state.estimate()
        out["models"].setdefault(test.model, {})[test.family] = estimate.to_json()
    for model, families in out["models"].items():
        shown = ", ".join(
            f"{f} {e['score']:.1f} [{e['low']:.1f}, {e['high']:.1f}] from {e['items_used']}/{e['items_total']} items"
            for f, e in sorted(families.items())
        )
        print(f"adaptive: {model}: estimated {shown}", file=sys.stderr)
    for note in adaptive.notes:
        print(f"adaptive: {note}", file=sys.stderr)
    return out


def write_estimates(run_dir: Path, estimates: Mapping[str, Any]) -> None:
    atomic_write_text(Path(run_dir) / ADAPTIVE_FILENAME, json.dumps(estimates, indent=1, ensure_ascii=False) + "\n")
