"""What every part of the scoring stage shares: the run being scored and one way to ask its judges.

:class:`JudgeRounds` holds the run (store, pool, items), its judges (a panel's lead first), the
dispatcher each judge sends through, and :meth:`JudgeRounds.judge_round`, which plans the judge units
that have no row yet and sends them through the run's scheduler. The scoring stage
(:class:`pool.score.stage.ScoringStage`) is one; the guards, the anchors and the criterion grading
take one, so none of them needs the stage's module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from eval.gold_types import RUBRIC_GOLD_TYPES
from eval.items import Item
from eval.items.scores import Score
from judge import contract_for
from judge.weighting import weighted_score
from pool.config import Model, PoolConfig
from pool.execute.dispatch import Messages
from pool.execute.progress import ProgressDisplay
from pool.execute.session import Session
from pool.score.identity import JudgeSetup, configured_endpoint, judge_top_logprobs
from pool.store.outcome import Result, Unit
from pool.store.run_store import RunStore

# Answers longer than this are cut before they reach the judge (and the score says so): a 10 MB
# answer must not become a 21 MB judge request. Far above any real answer to one question.
JUDGE_ANSWER_MAX_CHARS = 24_000


def answer_for_judge(answer: str) -> str:
    """The answer as the judge sees it: cut at ``JUDGE_ANSWER_MAX_CHARS`` (recorded in the score)."""
    if len(answer) <= JUDGE_ANSWER_MAX_CHARS:
        return answer
    return answer[:JUDGE_ANSWER_MAX_CHARS] + f"\n[… {len(answer) - JUDGE_ANSWER_MAX_CHARS} more characters not shown]"


def weighed(judge: JudgeSetup, item: Item, score: Score, row: Result) -> Score:
    """``score`` with the weighted values of its verdict (``judge.weighting``) when ``judge`` asked for
    token logprobs (``top_logprobs``); as it is otherwise. Every verdict a run compares with another
    (a re-judged one, an anchor) is weighed the same way, so pass/fail is read on one footing."""
    logprobs = row.extra.get("logprobs") if isinstance(row.extra, dict) else None
    return weighted_score(contract_for(item), score, row.text, logprobs, use=judge.top_logprobs is not None)


class JudgeRounds:
    """A run's answers as its judges see them; judge calls go through the run's ``session``."""

    def __init__(
        self,
        *,
        run_id: str,
        store: RunStore,
        config: PoolConfig,
        items: Mapping[str, Item],
        judges: Sequence[Model],
        session: Session | None,
        log_interval: float = 30.0,
    ) -> None:
        self.run_id = run_id
        self.store = store
        self.config = config
        self.items = items
        self.session = session
        self.log_interval = log_interval
        # Every judge of the run; a panel's first member (its lead) also answers --hallu, --rejudge-sample
        # and --anchor-sample, which ask one judge about its own verdicts.
        self.panel = [
            JudgeSetup(
                judge,
                judge.backend,
                (session.served_identity(judge) if session is not None else "") or configured_endpoint(config, judge),
                backend_type=config.backends[judge.backend].type,
                structured_output=getattr(config.backends[judge.backend], "structured_output", "none"),
                top_logprobs=judge_top_logprobs(config, judge),
            )
            for judge in judges
        ]
        self.judge = self.panel[0] if self.panel else None
        self.reasked: dict[tuple[str, str], Result] = {}  # first answers replaced by their re-ask (pool.score.guards)
        self.reask_records: dict[tuple[str, str], dict[str, Any]] = {}  # details.answer_reasked of those rows
        self.dispatchers = (
            {
                setup.model.name: session.dispatcher(
                    {m.name: m for m in config.models}, items, setup.model, judge_top_logprobs=setup.top_logprobs
                )
                for setup in self.panel
            }
            if session is not None
            else {}
        )

    async def judge_round(
        self, wanted: Sequence[tuple[Unit, Messages]], *, fresh: bool = False, setup: JudgeSetup | None = None
    ) -> None:
        """Plan and run the judge units that have no finished row yet, sent to ``setup`` (default: the
        run's judge, a panel's lead); ``fresh``: the response cache is neither read nor written
        (verdicts asked again tonight, e.g. the judge-drift anchors)."""
        setup = setup or self.judge
        assert setup is not None and self.session is not None
        if not wanted:
            return
        judge, dispatcher = setup.model, self.dispatchers[setup.model.name]
        self.store.save_plan(self.run_id, [unit for unit, _ in wanted], answerer=judge.name)
        pending = {
            unit
            for stage in {unit.stage for unit, _ in wanted}
            for unit in self.store.iter_pending_units(self.run_id, retry_infra_errors=True, stage=stage)
        }
        # Contract by contract, item by item: consecutive verdicts share the judge's system prompt and
        # the question + reference, so a server that keeps the KV cache of the previous prompt's
        # prefix (llama.cpp) reads only the new answer. In plan order (model by model) the contract
        # changed every few items and a 0.5B judge re-read ~1,200 prompt tokens each time.
        ordered = sorted(
            (pair for pair in wanted if pair[0] in pending), key=lambda p: (p[0].stage, p[0].item_id, p[0].model)
        )
        todo = dict(ordered)
        if not todo:
            return
        schemas = {
            unit: schema
            for unit in todo
            if (schema := setup.output_schema(unit.stage, self.items.get(unit.item_id))) is not None
        }
        progress = ProgressDisplay({judge.name: len(todo)}, interval_s=self.log_interval)
        try:
            await self.session.send(
                dispatcher.lanes(todo, todo, schemas), progress=progress, fresh=fresh, retry_infra_errors=True
            )
        finally:
            progress.close()

    def scored_rubric_answers(self, answers: Sequence[Result], scores: Mapping[tuple[str, str], Score]) -> list[Result]:
        """The answers the judge scored on the rubric (reference and criteria items): what ``--hallu``,
        ``--rejudge-sample`` and ``--anchor-sample`` ask the judge about again."""
        return [
            a
            for a in answers
            if self.items[a.item_id].gold_type in RUBRIC_GOLD_TYPES and scores[(a.model, a.item_id)].status == "scored"
        ]
