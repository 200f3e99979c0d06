"""Who answers a unit, and what it is sent: the one place that turns a stage into a request.

A unit's stage decides its answerer: ``answer`` (and ``answer:reask``, the one re-ask of a short
answer, ``pool.score.guards``) goes to the unit's own model with the item's prompt, every
``judge:…`` stage (verdict, re-ask, hallucination check) to the run's judge. Fresh runs, ``--resume`` and
``--rescore`` all build their jobs here, and the answerer is also what the run store expects
(``plan.answerer``), so a candidate can never be sent — or stored as — its own judge.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pool.config import Model
from pool.execute.endpoints import BackendEndpoint
from pool.execute.executor import Job
from pool.plan import ANSWER_STAGE, PromptItem, answer_request
from pool.store.outcome import Unit
from runners.base import GenerationRequest

JUDGE_STAGE_PREFIX = "judge:"
REASK_STAGE = ANSWER_STAGE + ":reask"  # a candidate asked its item again (pool.score.guards)
ANSWER_STAGES = (ANSWER_STAGE, REASK_STAGE)
Messages = tuple[dict[str, str], ...]
Schema = Mapping[str, Any]  # a judge contract's verdict JSON Schema, for constrained decoding


def is_judge_stage(stage: str) -> bool:
    return stage.startswith(JUDGE_STAGE_PREFIX)


def answerer_of(unit: Unit, judge: str | None) -> str:
    """The pool model that must answer ``unit``; raises for a stage nobody may answer."""
    if unit.stage in ANSWER_STAGES:
        return unit.model
    if is_judge_stage(unit.stage):
        if judge is None:
            raise ValueError(f"{unit}: a judge stage, but the run has no judge")
        return judge
    raise ValueError(f"{unit}: unknown stage {unit.stage!r}")


@dataclass(frozen=True)
class Dispatcher:
    """Builds the job of any unit of a run from its stage."""

    models: Mapping[str, Model]
    items: Mapping[str, PromptItem]
    endpoints: Mapping[str, BackendEndpoint]
    judge: Model | None = None
    judge_top_logprobs: int | None = None  # judge requests ask this many alternatives per token (weighing)

    def answerer(self, unit: Unit) -> Model:
        name = answerer_of(unit, self.judge.name if self.judge is not None else None)
        if unit.stage in ANSWER_STAGES:
            return self.models[name]
        assert self.judge is not None  # answerer_of raised otherwise
        return self.judge

    def job(self, unit: Unit, messages: Messages | None = None, schema: Schema | None = None) -> Job:
        """The request for ``unit``: the item's prompt for answers, ``messages`` for judge stages, with
        ``schema`` the verdict's shape when the judge is constrained (``runners.structured``)."""
        model = self.answerer(unit)
        if unit.stage in ANSWER_STAGES:
            if messages is not None:
                raise ValueError(f"{unit}: an answer unit sends its item's prompt, not given messages")
            request = answer_request(model, self.items[unit.item_id])
        else:
            if not messages:
                raise ValueError(f"{unit}: a judge stage needs its prompt messages")
            request = GenerationRequest(
                model=model.model,
                mode="chat",
                messages=messages,
                params=replace(model.generation_params(), top_logprobs=self.judge_top_logprobs),
                output_schema=schema,
            )
        endpoint = self.endpoints[model.backend]
        return Job(unit, request, endpoint.type, endpoint.identities[model.name], called_model=model.name)

    def answer_lanes(
        self, models: Iterable[str], units_of: Callable[[Sequence[str]], Iterable[Unit]]
    ) -> dict[str, Iterator[Job]]:
        """Lazy answer-job streams per backend: ``units_of(names)`` yields the pending answer units
        of those models in plan order (read from the store a page at a time), so a run never holds
        a list of its units."""
        by_lane: dict[str, list[str]] = {}
        for name in models:
            by_lane.setdefault(self.models[name].backend, []).append(name)
        return {lane: (self.job(unit) for unit in units_of(names)) for lane, names in by_lane.items()}

    def lanes(
        self,
        units: Iterable[Unit],
        messages: Mapping[Unit, Messages] | None = None,
        schemas: Mapping[Unit, Schema] | None = None,
    ) -> dict[str, Iterator[Job]]:
        """Lazy job streams per backend, in the given order (the plan's: model by model); a judge unit
        in ``schemas`` is constrained to its verdict schema."""
        by_lane: dict[str, list[Unit]] = {}
        for unit in units:
            by_lane.setdefault(self.answerer(unit).backend, []).append(unit)

        def stream(lane_units: Sequence[Unit]) -> Iterator[Job]:
            for unit in lane_units:
                judged = messages is not None and unit.stage not in ANSWER_STAGES
                yield self.job(
                    unit,
                    messages[unit] if judged else None,
                    schemas.get(unit) if judged and schemas is not None else None,
                )

        return {lane: stream(lane_units) for lane, lane_units in by_lane.items()}
