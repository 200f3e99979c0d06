"""Asking the judges about each battle, in both orders, as a run asks its judges.

Every judge of the pool (a panel's members each) is brought up through the pool's machinery
(scheduler, lanes, retries, response cache) with its own run store in ``RUN_DIR/pairwise/``; a
request is a unit ``(first|second, item, judge:<identity hash>:pairwise)`` — the unit's model names
the order, first shown as A — so a killed or repeated pairwise stage asks only what has no row yet
(``JudgeRounds.judge_round``), and a judge, server or prompt change gets new stages instead of
old verdicts. An unparseable reply is re-asked once (``…:pairwise:reask``); still unparseable, or a
failed call, leaves that order without a verdict (the battle is then no battle).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from judge.contracts.pairwise import pair_text
from judge.contracts.table import contract_spec, reask_prompt
from judge.pairwise import PairVerdicts, battle_outcome
from judge.parse.pairwise import PairwiseVerdict
from judge.verdicts import ParseFailure
from pool.execute.response_cache import ResponseCache
from pool.execute.session import Session
from pool.pairwise.select import Selection
from pool.score.identity import JudgeSetup
from pool.score.rounds import JudgeRounds, answer_for_judge
from pool.store.outcome import Unit
from pool.store.run_store import RunStore

CONTRACT = "pairwise"
PAIRWISE_DIRNAME = "pairwise"
RUN_ID = "pairwise"


def order_model(first: str, second: str) -> str:
    """The unit's model of one order: ``first`` shown as A."""
    return f"{first}|{second}"


async def _verdicts(rounds: JudgeRounds, setup: JudgeSetup, selection: Selection) -> list[PairVerdicts]:
    spec = contract_spec(CONTRACT)
    asked = []
    for a, b, item_id in selection.battles:
        item = selection.items[item_id]
        for first, second in ((a, b), (b, a)):
            text = pair_text(
                answer_for_judge(selection.answers[(first, item_id)]),
                answer_for_judge(selection.answers[(second, item_id)]),
            )
            unit = Unit(order_model(first, second), item_id, setup.stage(item, contract=CONTRACT))
            asked.append((unit, spec.build(item, text)))
    await rounds.judge_round(asked, setup=setup)
    found: dict[Unit, PairwiseVerdict] = {}
    again = []
    for unit, messages in asked:
        row = rounds.store.get_result(RUN_ID, unit)
        if row is None or row.status == "infra_error":
            continue
        parsed = spec.parse(selection.items[unit.item_id], row.text)
        if isinstance(parsed, ParseFailure):
            reask = Unit(unit.model, unit.item_id, setup.stage(selection.items[unit.item_id], True, CONTRACT))
            again.append((reask, reask_prompt(CONTRACT, messages, row.text, parsed.reason), unit))
        else:
            found[unit] = parsed
    await rounds.judge_round([(u, m) for u, m, _ in again], setup=setup)
    for reask, _, unit in again:
        row = rounds.store.get_result(RUN_ID, reask)
        if row is not None and row.status != "infra_error":
            parsed = spec.parse(selection.items[unit.item_id], row.text)
            if not isinstance(parsed, ParseFailure):
                found[unit] = parsed
    out = []
    for a, b, item_id in selection.battles:
        stage = setup.stage(selection.items[item_id], contract=CONTRACT)
        ab, ba = (found.get(Unit(order_model(x, y), item_id, stage)) for x, y in ((a, b), (b, a)))
        out.append(PairVerdicts(setup.model.name, item_id, a, b, ab.winner if ab else None, ba.winner if ba else None))
    return out


async def judge_selection(
    selection: Selection, cache: ResponseCache | None
) -> tuple[list[PairVerdicts], dict[str, int]]:
    """Every judge's verdicts on every battle of ``selection`` (module doc), and the calls and cache hits made."""
    work = Path(selection.run_dir) / PAIRWISE_DIRNAME
    work.mkdir(exist_ok=True)
    out: list[PairVerdicts] = []
    with RunStore(work) as store:
        store.begin_run(RUN_ID, pool_fingerprint="", data_fingerprint=selection.run_id, options={})
        async with Session.open(
            selection.config, selection.judges, work, run_id=RUN_ID, store=store, cache=cache, retry_infra_errors=True
        ) as session:
            rounds = JudgeRounds(
                run_id=RUN_ID,
                store=store,
                config=selection.config,
                items=selection.items,
                judges=selection.judges,
                session=session,
            )
            for setup in rounds.panel:
                out += await _verdicts(rounds, setup, selection)
            counts = {"calls": session.counters.calls, "cache_hits": session.counters.cache_hits}
        store.set_run_status(RUN_ID, "finished")
    return out, counts


def verdict_rows(verdicts: Sequence[PairVerdicts]) -> list[dict[str, object]]:
    """``battles.jsonl`` rows: each judge's two orders and the battle they make."""
    return [
        {
            "battles": "judged",
            "judge": v.judge,
            "item_id": v.item_id,
            "a": v.a,
            "b": v.b,
            "ab": v.ab,
            "ba": v.ba,
            "outcome": battle_outcome(v.ab, v.ba),
        }
        for v in verdicts
    ]
