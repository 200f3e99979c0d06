"""The guards before the judge: an answer not worth a judge call is scored 0 without one.

``eval.scorers.judged.guard_answer`` says which answers those are (``empty_answer``: no content
once reasoning, whitespace and an echoed prompt are removed; ``short_answer``: less content than
the gold type's ``min_answer_chars``, unless the answer was cut at its token budget). Such an
answer scores 0 as its judge contract declares (``judge.contracts``: 0 on every rubric dimension,
a probe no success, a criteria answer still gets its literal safety floor) with the flag in
``details.flags`` and the measurement in ``details.answer_guard``, and the judge is not called. The row keeps the judge
identity the verdict would have had, so it counts in the same leaderboard cell as the judged
answers: an unusable answer is a full miss.

With ``reask_short_answers: true`` in the pool file a guarded answer is asked once more (stage
``answer:reask``, the item's prompt unchanged, the response cache neither read nor written: the
cached reply is the short answer). The re-asked answer is judged when it passes the guard; else
the item scores 0 as above. Either way ``details.answer_reasked`` records the first answer's guard
and the outcome. A re-ask is stored like any answer, so a resume or ``--rescore`` reads it instead
of asking again: the score stays a pure function of the stored answers. ``--rescore`` asks no
candidate, so an answer never re-asked stays guarded there (and says so).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from eval.gold_types import JUDGED_GOLD_TYPES, spec_of
from eval.items import Item
from eval.items.scores import JudgeIdentity, Score
from eval.scorers.judged import AnswerGuard, guard_answer
from judge.contracts.table import contract_spec
from pool.config import PoolConfig
from pool.execute.dispatch import REASK_STAGE
from pool.execute.progress import ProgressDisplay
from pool.plan import ANSWER_STAGE
from pool.score.rounds import JudgeRounds
from pool.store.outcome import Result, Unit
from pool.store.run_store import RunStore

Key = tuple[str, str]
Guarded = tuple[Result, AnswerGuard, dict[str, Any] | None]  # the answer, its guard, the re-ask record


def guarded_score(
    item: Item, answer: str, guard: AnswerGuard, judge: JudgeIdentity, reask: Mapping[str, Any] | None = None
) -> Score:
    """0 on every dimension, not passed, with the guard's flag; ``judge`` is who would have judged."""
    contract = spec_of(item.gold_type).judge_contract
    metrics, contract_details = contract_spec(contract).without_verdict(item, answer)  # e.g. criteria: the floor
    details: dict[str, Any] = {
        "contract": contract,
        "flags": [guard.flag],
        "answer_guard": guard.to_record(),
        "judge_skipped": True,
        **contract_details,
    }
    if reask is not None:
        details["answer_reasked"] = dict(reask)
    return Score(status="scored", value=0.0, passed=False, metrics=metrics, judge=judge, details=details)


def _usable(row: Result | None) -> bool:
    return row is not None and row.status != "infra_error"


def answer_guard(item: Item, answer: Result) -> AnswerGuard | None:
    """:func:`eval.scorers.judged.guard_answer` of a stored answer (a truncated one is never short)."""
    return guard_answer(item, answer.text, truncated=answer.status == "error" and answer.error_class == "truncated")


async def reask_guarded(
    stage: JudgeRounds, guarded: Sequence[tuple[Result, AnswerGuard]]
) -> tuple[list[Result], list[Guarded]]:
    """Ask each guarded answer's model once more (module doc): (re-asked answers that pass the
    guard, to be judged in place of the first; the answers still guarded, with their re-ask record).
    ``stage.reasked`` keeps the first answer of each re-asked one, ``stage.reask_records`` the
    record its score carries."""
    store, run_id, session = stage.store, stage.run_id, stage.session
    models = {m.name: m for m in stage.config.models}
    served = {name for name, model in models.items() if session is not None and session.served_identity(model)}
    stored = {(a.model, a.item_id): store.get_result(run_id, Unit(a.model, a.item_id, REASK_STAGE)) for a, _ in guarded}
    wanted = [
        Unit(a.model, a.item_id, REASK_STAGE)
        for a, _ in guarded
        if not _usable(stored[(a.model, a.item_id)]) and a.model in served
    ]
    if wanted and session is not None:
        store.save_plan(run_id, wanted)
        pending = set(store.iter_pending_units(run_id, retry_infra_errors=True, stage=REASK_STAGE))
        todo = [unit for unit in wanted if unit in pending]
        if todo:
            dispatcher = session.dispatcher({name: models[name] for name in served}, stage.items)
            counts: dict[str, int] = {}
            for unit in todo:
                counts[unit.model] = counts.get(unit.model, 0) + 1
            progress = ProgressDisplay(counts, interval_s=stage.log_interval)
            try:  # fresh: the cache holds the short answer this re-ask replaces
                await session.send(dispatcher.lanes(todo), progress=progress, fresh=True, retry_infra_errors=True)
            finally:
                progress.close()
        for unit in wanted:
            stored[(unit.model, unit.item_id)] = store.get_result(run_id, unit)
    judged: list[Result] = []
    still: list[Guarded] = []
    for answer, guard in guarded:
        key = (answer.model, answer.item_id)
        row = stored[key]
        record: dict[str, Any] = {"first": guard.to_record()}
        if row is None or row.status == "infra_error":
            if row is not None:
                record["outcome"] = f"no answer ({row.error_class or 'infra_error'})"
            elif answer.model not in served:
                record["outcome"] = "not asked: the model is not served (--rescore asks no candidate)"
            else:
                record["outcome"] = "no answer (call failed)"
            still.append((answer, guard, record))
            continue
        stage.reasked[key] = answer  # the row describes the re-asked answer; its cost adds the first's
        again = answer_guard(stage.items[answer.item_id], row)
        record["outcome"] = "judged" if again is None else again.flag
        if again is None:
            judged.append(row)
        else:
            still.append((row, again, record))
        stage.reask_records[key] = record
    return judged, still


def models_to_reask(store: RunStore, run_id: str, items: Mapping[str, Item], config: PoolConfig) -> set[str]:
    """The models with a guarded answer not re-asked yet: what a resumed run must serve again so
    that it scores as an uninterrupted run would (empty unless the pool re-asks short answers)."""
    if not config.reask_short_answers:
        return set()
    models: set[str] = set()
    for answer in store.iter_results(run_id, stage=ANSWER_STAGE, requests=False):
        item = items.get(answer.item_id)
        if (
            answer.model in models
            or item is None
            or item.gold_type not in JUDGED_GOLD_TYPES
            or answer.status == "infra_error"
            or answer_guard(item, answer) is None
        ):
            continue
        if not _usable(store.get_result(run_id, Unit(answer.model, answer.item_id, REASK_STAGE))):
            models.add(answer.model)
    return models
