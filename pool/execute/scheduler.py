"""The driver of a run: what is sent, within which limits, and every result recorded exactly once.

Limits belong to backends, not models: each backend is a *lane* (:class:`~pool.execute.executor.Lane`: a runner, at most
``max_concurrency`` requests in flight and an optional asyncio-throttle rate limiter), shared by
every model on it. An executor (:mod:`pool.execute.executor`) sends the jobs of each lane — from lazy
streams, so a run of 10⁵ items never builds 10⁵ coroutines — and hands each response back;
:class:`Scheduler` serves cache hits, records every result and watches each model's health.

A model whose calls keep failing (``max_consecutive_failures`` infra errors in a row) is marked
failed with the reason; its remaining units are recorded as ``infra_error`` / ``model_failed``
without calling it, so the rest of the pool finishes and the summary says why.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from pool.execute.budget import Budget, BudgetExhausted
from pool.execute.cache_key import cache_key_of_json, canonical_json, request_payload
from pool.execute.executor import Executor, Job, Lane, LocalExecutor
from pool.execute.response_cache import ResponseCache
from pool.store.outcome import ANSWER_STAGE, Result, Unit, result_from_response
from pool.store.run_store import RunStore
from pool.store.sqlite_db import utc_now_iso
from runners.base import GenerationResponse, logprobs_to_json

MODEL_FAILED = "model_failed"


@dataclass(frozen=True)
class _OpenJob:
    """What the driver computes once per job: when it started, the request as stored, its cache key.

    The request is serialised once (``request_json``) and the key hashed from that text, instead
    of both being rebuilt at the cache lookup, the cache write and the store write.
    """

    started_at: str
    request_json: str
    cache_key: str

    @classmethod
    def of(cls, job: Job) -> _OpenJob:
        request_json = canonical_json(request_payload(job.request))
        return cls(
            utc_now_iso(), request_json, cache_key_of_json(job.backend_type, job.endpoint_identity, request_json)
        )


class Progress(Protocol):
    def update(self, model: str, status: str, cached: bool) -> None: ...


class ModelHealth:
    """Counts consecutive infra errors per model and decides when to give up on one."""

    def __init__(self, max_consecutive_failures: int) -> None:
        self.limit = max_consecutive_failures
        self._streak: dict[str, int] = {}
        self.failed: dict[str, str] = {}

    def observe(self, model: str, result: Result) -> str | None:
        """Record a result; returns the failure reason the first time the model crosses the limit."""
        if result.status != "infra_error" or result.error_class == MODEL_FAILED:
            self._streak[model] = 0
            return None
        self._streak[model] = self._streak.get(model, 0) + 1
        if self.limit and self._streak[model] >= self.limit and model not in self.failed:
            detail = f": {result.error_detail}" if result.error_detail else ""
            self.failed[model] = f"{self.limit} consecutive infra errors, last {result.error_class}{detail}"
            return self.failed[model]
        return None


@dataclass
class RunCounters:
    recorded: int = 0
    cache_hits: int = 0
    calls: int = 0


class Scheduler:
    """The driver: decides what is sent, and writes each result to the store as it arrives.

    Sending is the executor's job (:mod:`pool.execute.executor`; by default :class:`LocalExecutor` over
    ``lanes``). The driver alone reads and fills the response cache, settles a failed model's jobs
    without sending them, and records every result: each settled job in a transaction of its own; of
    the responses that arrive in one turn of the event loop, the first in a transaction of its own at
    once (a slow server's answers come one per turn, and their slots go straight on) and the rest in
    one transaction together at the next turn (group commit, :meth:`_commit_pending`). A slot sends
    again only once its row is committed.
    """

    def __init__(
        self,
        *,
        run_id: str,
        store: RunStore,
        lanes: Mapping[str, Lane] | None = None,
        executor: Executor | None = None,
        cache: ResponseCache | None = None,
        progress: Progress | None = None,
        max_consecutive_failures: int = 5,
        retry_infra_errors: bool = False,
        on_model_failed: Callable[[str, str], None] | None = None,
        budget: Budget | None = None,
        answer_max_age_s: float | None = None,
    ) -> None:
        if (lanes is None) == (executor is None):
            raise ValueError("Scheduler needs either lanes (the local executor) or an executor")
        self.run_id = run_id
        self.store = store
        self.executor: Executor = executor if executor is not None else LocalExecutor(lanes or {})
        self.cache = cache
        self.progress = progress
        self.health = ModelHealth(max_consecutive_failures)
        self.retry_infra_errors = retry_infra_errors
        self.on_model_failed = on_model_failed
        self.counters = RunCounters()
        self.budget = budget
        self.answer_max_age_s = answer_max_age_s  # older cached answers are asked again (judge verdicts are not)
        self._stale: set[Unit] = set()
        self._open: dict[Unit, _OpenJob] = {}  # settled-or-sent jobs not yet recorded (at most the in-flight ones)
        self._pending: list[tuple[Job, Result, asyncio.Future[None]]] = []  # received, to commit this loop turn
        self._turn_open = False  # an answer of this turn was committed already: the next ones are grouped

    async def run(self, jobs_by_lane: Mapping[str, Iterable[Job]]) -> RunCounters:
        """Execute every job; returns when all are recorded (or raises CancelledError on Ctrl-C)."""
        try:
            await self.executor.run(jobs_by_lane, self._on_sent_result, self._settle_locally)
        finally:
            # Answers received before a Ctrl-C are kept, as if committed on arrival; and a loop that ends
            # here drops the queued _close_turn, so the next run must not inherit an open turn.
            self._close_turn()
        if self.budget is not None and self.budget.not_run:
            raise BudgetExhausted(self.budget.reason(), self.budget.not_run)
        return self.counters

    def _settle_locally(self, job: Job) -> bool:
        """Record a failed model's job or a cache hit without sending, or leave the job unrecorded
        once the budget is spent (it stays pending for a resume); False: send it."""
        opened = self._open[job.unit] = _OpenJob.of(job)
        model = job.caller
        if model in self.health.failed:
            response = GenerationResponse(
                text="",
                finish_reason=None,
                prompt_tokens=None,
                completion_tokens=None,
                latency_s=0.0,
                error_class=MODEL_FAILED,
                error_detail=f"not sent: model marked failed ({self.health.failed[model]})",
            )
            self._record(job, response, cached=False)
            return True
        if self.cache is not None:
            max_age = self.answer_max_age_s if job.unit.stage == ANSWER_STAGE else None
            hit, stale = self.cache.lookup(opened.cache_key, max_age_s=max_age)
            if hit is not None:
                self._record(job, hit, cached=True)
                return True
            if stale:
                self._stale.add(job.unit)
        if self.budget is not None and self.budget.exhausted:
            self.budget.not_run += 1
            self._open.pop(job.unit, None)
            return True
        return False

    def _on_sent_result(self, job: Job, response: GenerationResponse) -> Awaitable[None] | None:
        """Take a sent job's response; the awaitable is done once its row is committed (the executor
        awaits it before that slot sends again); None: committed already."""
        self.counters.calls += 1
        if self.budget is not None:
            self.budget.charge(job.caller, response)
        if response.ok and self.cache is not None:
            self.cache.put(self._opened(job).cache_key, response, replace=job.unit in self._stale)
        self._stale.discard(job.unit)
        loop = asyncio.get_running_loop()
        if not self._turn_open:  # the first answer of this turn of the loop: committed at once, alone
            self._turn_open = True
            loop.call_soon(self._close_turn)
            try:
                self._record(job, response, cached=False)
            except Exception as exc:  # noqa: BLE001 - handed to the slot that sent the job, as a group's are
                refused: asyncio.Future[None] = loop.create_future()
                refused.set_exception(exc)
                return refused
            return None
        committed: asyncio.Future[None] = loop.create_future()
        # a later answer of this turn: committed with the others
        self._pending.append((job, self._result(job, response, cached=False), committed))
        return self._committed(committed)

    def _close_turn(self) -> None:
        """The end of a turn of the loop: its grouped answers are committed; the next answer is a first."""
        self._turn_open = False
        self._commit_pending()

    @staticmethod
    async def _committed(committed: asyncio.Future[None]) -> None:
        """Wait for the row's commit. The group's commit was queued ahead of this slot's wake-up, so
        after one yield it has run and the slot goes on in that same turn of the loop; awaiting the
        future alone would wake the slot only in the turn after the commit."""
        await asyncio.sleep(0)
        await committed

    def _commit_pending(self) -> None:
        """Group commit: the responses that arrived in one turn of the event loop after its first go
        into the store in one transaction, so a burst of answers pays for two commits, not one each.
        Every worker still waits for its own row's commit before it takes its next job (a SIGKILL
        loses no answer whose slot moved on). A batch the store refuses (a wrong answerer) is written
        row by row, so only the bad row's worker gets the error."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        try:
            self.store.record_many([result for _, result, _ in pending], retry_infra_errors=self.retry_infra_errors)
            together = True
        except Exception:  # noqa: BLE001 - each row again, alone, with its own outcome
            together = False
        for job, result, committed in pending:
            try:
                if not together:
                    self.store.record(result, retry_infra_errors=self.retry_infra_errors)
                self._recorded(job, result)
            except Exception as exc:  # noqa: BLE001 - handed to the worker that sent the job
                if not committed.done():
                    committed.set_exception(exc)
            else:
                if not committed.done():
                    committed.set_result(None)

    def _opened(self, job: Job) -> _OpenJob:
        """The job's serialised request and key, made once when it was settled or sent."""
        opened = self._open.get(job.unit)
        if opened is None:  # an executor that sent without asking settle_locally first
            opened = self._open[job.unit] = _OpenJob.of(job)
        return opened

    def _record(self, job: Job, response: GenerationResponse, *, cached: bool) -> None:
        """Record a job in a transaction of its own: one settled without sending (a cache hit, a failed
        model), or the first answer of a turn of the loop."""
        result = self._result(job, response, cached=cached)
        self.store.record(result, retry_infra_errors=self.retry_infra_errors)
        self._recorded(job, result)

    def _result(self, job: Job, response: GenerationResponse, *, cached: bool) -> Result:
        """The row a job's response is recorded as."""
        model = job.caller
        opened = self._opened(job)
        del self._open[job.unit]
        extra = None
        if response.attempts and len(response.attempts) > 1:
            extra = {
                "attempts": [
                    {
                        "n": a.number,
                        "status": a.status,
                        "error_class": a.error_class,
                        "latency_s": round(a.latency_s, 4),
                        "detail": a.detail,
                    }
                    for a in response.attempts
                ]
            }
        if response.token_logprobs is not None:  # a judge weighing its verdict (judge.weighting) reads them here
            extra = {**(extra or {}), "logprobs": logprobs_to_json(response.token_logprobs)}
        return result_from_response(
            self.run_id,
            job.unit,
            response,
            request_json=opened.request_json,
            cache_key=opened.cache_key,
            started_at=opened.started_at,
            finished_at=utc_now_iso(),
            cached=cached,
            extra=extra,
            answered_by=model,
            endpoint=job.endpoint_identity,
        )

    def _recorded(self, job: Job, result: Result) -> None:
        """What follows a committed row: counters, the model's health, progress."""
        model, cached = job.caller, result.cached
        self.counters.recorded += 1
        self.counters.cache_hits += cached
        reason = self.health.observe(model, result)
        if reason is not None:
            self.store.mark_model_failed(self.run_id, model, reason)
            if self.on_model_failed is not None:
                self.on_model_failed(model, reason)
        if self.progress is not None:
            self.progress.update(model, result.status, cached)
