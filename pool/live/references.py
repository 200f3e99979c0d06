"""Asking the reference agent, once per question, through the run machinery, into a run store of its own.

The agent's answers are units of a run store in ``RUN_DIR/live/`` (run id :data:`AGENT_RUN_ID`, one
``answer`` unit per question, answered by the agent), sent by a run :class:`~pool.execute.session.Session`:
the same scheduler, response cache, retries and exactly-once recording as a candidate's answers. So a
live run killed while the agent answers keeps every answer it had (a resume asks only for the rest), a
reference answer younger than ``--cache-max-age`` comes from the response cache, cached by (agent
identity, mode, question), and a failed call is an ``infra_error`` row of the agent's, with its class
and detail. A model agent is sent through its backend (a managed llama.cpp server is started and
stopped for it); a command agent through a lane of its own (:class:`pool.live.command.CommandRunner`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pool.config import PoolConfig
from pool.execute.executor import Job, Lane, LocalExecutor
from pool.execute.progress import ProgressDisplay
from pool.execute.response_cache import ResponseCache
from pool.execute.session import Session
from pool.items_source import DataError
from pool.live.agent import COMMAND_BACKEND, MODE_PROMPTS, ReferenceAgent
from pool.live.command import CommandRunner
from pool.store.outcome import ANSWER_STAGE, Result, Unit
from pool.store.run_store import RunMismatchError, RunStore
from runners.base import GenerationParams, GenerationRequest

AGENT_RUN_ID = "reference-agent"
COMMAND_LANE = "reference-agent-command"


@dataclass(frozen=True)
class AgentPrompt:
    """What the agent is asked for one question (a ``PromptItem`` for the dispatcher)."""

    id: str
    question: str
    mode: str
    max_tokens: int | None = None

    def chat_messages(self) -> tuple[dict[str, str], ...]:
        return ({"role": "system", "content": MODE_PROMPTS[self.mode]}, {"role": "user", "content": self.question})

    def completion_prompt(self) -> str:  # the agent is a chat model (the pool file checks it)
        return f"{MODE_PROMPTS[self.mode]}\n问题：{self.question}\n答案："


@dataclass(frozen=True)
class Asking:
    """One asking of the agent: its folder (``RUN_DIR/live``), the prompts, and how to send them."""

    folder: Path
    config: PoolConfig
    agent: ReferenceAgent
    prompts: Sequence[AgentPrompt]
    mode: str
    cache_dir: str | None
    no_cache: bool
    max_age_s: float | None
    log_interval: float = 30.0

    def ask(self, run: Callable[[Coroutine[Any, Any, None]], None]) -> dict[str, Result]:
        """Ask every prompt that has no finished row (an ``infra_error`` is asked again) and return
        every row by question id; ``run`` runs a coroutine to its end (``Interrupt.run``, so Ctrl-C
        stops it as it stops a run: what was answered is kept)."""
        units = [Unit(self.agent.name, prompt.id, ANSWER_STAGE) for prompt in self.prompts]
        with RunStore(self.folder) as store:
            try:
                store.begin_run(
                    AGENT_RUN_ID,
                    pool_fingerprint=_digest(self.agent.described(self.config)),
                    data_fingerprint=_digest([[p.id, p.question, p.mode] for p in self.prompts]),
                    options={"mode": self.mode},
                )
            except RunMismatchError:
                raise DataError(
                    f"{self.folder / 'run.sqlite'}: the reference agent or the questions changed since this live "
                    "run started; start a new run with --out"
                ) from None
            store.save_plan(AGENT_RUN_ID, units)
            pending = list(store.iter_pending_units(AGENT_RUN_ID, retry_infra_errors=True))
            if pending:
                run(self._send(store, pending))
            store.set_run_status(AGENT_RUN_ID, "finished")
            return {r.item_id: r for r in store.iter_results(AGENT_RUN_ID, requests=False)}

    async def _send(self, store: RunStore, pending: Sequence[Unit]) -> None:
        cache = None if self.no_cache else ResponseCache(self.cache_dir, write_behind=True)
        progress = ProgressDisplay({self.agent.name: len(pending)}, interval_s=self.log_interval)
        model = self.agent.model
        lanes: Mapping[str, Lane] | None = None
        if model is None:
            runner = CommandRunner(self.agent.argv, self.mode, self.agent.timeout_s)
            lanes = {COMMAND_LANE: Lane(COMMAND_LANE, runner, self.agent.max_concurrency)}
        try:
            async with Session.open(
                self.config,
                [model] if model is not None else [],
                self.folder,
                run_id=AGENT_RUN_ID,
                store=store,
                cache=cache,
                executor=LocalExecutor(lanes) if lanes is not None else "local",
                progress=progress,
                max_consecutive_failures=0,  # every question is asked: the summary counts what failed
                retry_infra_errors=True,
                answer_max_age_s=self.max_age_s,
            ) as session:
                prompts = {p.id: p for p in self.prompts}
                if model is not None:
                    await session.send(session.dispatcher({model.name: model}, prompts).lanes(pending))
                else:
                    await session.send(
                        {COMMAND_LANE: (self._command_job(unit, prompts[unit.item_id]) for unit in pending)}
                    )
        finally:
            progress.close()
            if cache is not None:
                cache.close()

    def _command_job(self, unit: Unit, prompt: AgentPrompt) -> Job:
        request = GenerationRequest(model=self.agent.name, messages=prompt.chat_messages(), params=GenerationParams())
        return Job(unit, request, COMMAND_BACKEND, self.agent.command_identity(), called_model=self.agent.name)


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()
