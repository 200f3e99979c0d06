"""Execute units within each backend's limits, recording every result exactly once.

Limits belong to backends, not models: each backend is a *lane* with one bounded queue, at most
``max_concurrency`` workers, started only as jobs wait for a free one (so in-flight requests never
exceed the limit, reach it whenever work is waiting, and idle slots cost nothing) and an optional asyncio-throttle rate limiter, shared by every model on
that backend. One producer per lane feeds its queue lazily from the pending units, so a run of
10⁵ items holds at most ``2 × max_concurrency`` requests per lane in memory and never builds 10⁵
coroutines. A lane that starves (dead endpoint) cannot block another lane's producer.

A model whose calls keep failing (``max_consecutive_failures`` infra errors in a row) is marked
failed with the reason; its remaining units are recorded as ``infra_error`` / ``model_failed``
without calling it, so the rest of the pool finishes and the summary says why.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from asyncio_throttle import Throttler

from pool.cache_key import cache_key, canonical_json, request_payload
from pool.outcome import Result, Unit, result_from_response
from pool.response_cache import ResponseCache
from pool.sqlite_db import utc_now_iso
from pool.store import RunStore
from runners.base import GenerationRequest, GenerationResponse, Runner

MODEL_FAILED = "model_failed"


@dataclass(frozen=True)
class Job:
    """One unit with the request it sends and the identity its answer is cached under."""

    unit: Unit
    request: GenerationRequest
    backend_type: str
    endpoint_identity: str
    called_model: str = ""  # the pool model that answers (the judge for judge units); see pool.dispatch

    @property
    def caller(self) -> str:
        return self.called_model or self.unit.model


@dataclass
class Lane:
    """One backend: its runner and the limits shared by every model on it."""

    name: str
    runner: Runner
    max_concurrency: int
    requests_per_minute: float | None = None
    throttler: Throttler | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ValueError(f"backend {self.name}: max_concurrency must be >= 1")
        if self.requests_per_minute:
            # one request every 60/rpm seconds: smooth pacing instead of bursts at each minute
            self.throttler = Throttler(rate_limit=1, period=60.0 / self.requests_per_minute)


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
    """Runs jobs through their lanes and writes each result to the store as it arrives."""

    def __init__(
        self,
        *,
        run_id: str,
        store: RunStore,
        lanes: Mapping[str, Lane],
        cache: ResponseCache | None = None,
        progress: Progress | None = None,
        max_consecutive_failures: int = 5,
        retry_infra_errors: bool = False,
        on_model_failed: Callable[[str, str], None] | None = None,
    ) -> None:
        self.run_id = run_id
        self.store = store
        self.lanes = dict(lanes)
        self.cache = cache
        self.progress = progress
        self.health = ModelHealth(max_consecutive_failures)
        self.retry_infra_errors = retry_infra_errors
        self.on_model_failed = on_model_failed
        self.counters = RunCounters()

    async def run(self, jobs_by_lane: Mapping[str, Iterable[Job]]) -> RunCounters:
        """Execute every job; returns when all are recorded (or raises CancelledError on Ctrl-C)."""
        unknown = set(jobs_by_lane) - set(self.lanes)
        if unknown:
            raise ValueError(f"jobs for unknown backend(s): {', '.join(sorted(unknown))}")
        async with asyncio.TaskGroup() as group:
            for name, jobs in jobs_by_lane.items():
                lane = self.lanes[name]
                queue: asyncio.Queue[Job | None] = asyncio.Queue(maxsize=2 * lane.max_concurrency)
                group.create_task(self._produce(lane, queue, jobs, group), name=f"produce:{name}")
        return self.counters

    async def _produce(self, lane: Lane, queue: asyncio.Queue[Job | None], jobs: Iterable[Job],
                       group: asyncio.TaskGroup) -> None:
        """Feed the lane, starting a worker only when a job waits and no worker is free: a slot
        with no work costs nothing, and the limit is reached whenever work is waiting."""
        idle = [0]  # workers waiting on the queue
        workers = 0
        for job in jobs:
            if workers < lane.max_concurrency and idle[0] == 0:
                workers += 1
                group.create_task(self._work(lane, queue, idle), name=f"work:{lane.name}:{workers}")
            await queue.put(job)
        for _ in range(workers):
            await queue.put(None)

    async def _work(self, lane: Lane, queue: asyncio.Queue[Job | None], idle: list[int]) -> None:
        while True:
            idle[0] += 1
            job = await queue.get()
            idle[0] -= 1
            if job is None:
                return
            await self._execute(lane, job)

    async def _execute(self, lane: Lane, job: Job) -> None:
        model = job.caller
        started = utc_now_iso()
        key = cache_key(job.backend_type, job.endpoint_identity, job.request)
        cached = False
        if model in self.health.failed:
            response = GenerationResponse(
                text="", finish_reason=None, prompt_tokens=None, completion_tokens=None, latency_s=0.0,
                error_class=MODEL_FAILED,
                error_detail=f"not sent: model marked failed ({self.health.failed[model]})",
            )
        else:
            hit = self.cache.get(key) if self.cache is not None else None
            if hit is not None:
                response, cached = hit, True
            else:
                if lane.throttler is not None:
                    async with lane.throttler:
                        pass
                response = await lane.runner.generate(job.request)
                self.counters.calls += 1
                if response.ok and self.cache is not None:
                    self.cache.put(key, response)
        extra = None
        if response.attempts and len(response.attempts) > 1:
            extra = {"attempts": [
                {"n": a.number, "status": a.status, "error_class": a.error_class,
                 "latency_s": round(a.latency_s, 4), "detail": a.detail}
                for a in response.attempts
            ]}
        result = result_from_response(
            self.run_id, job.unit, response,
            request_json=canonical_json(request_payload(job.request)), cache_key=key,
            started_at=started, finished_at=utc_now_iso(), cached=cached, extra=extra,
            answered_by=model, endpoint=job.endpoint_identity,
        )
        self.store.record(result, retry_infra_errors=self.retry_infra_errors)
        self.counters.recorded += 1
        self.counters.cache_hits += cached
        reason = self.health.observe(model, result)
        if reason is not None:
            self.store.mark_model_failed(self.run_id, model, reason)
            if self.on_model_failed is not None:
                self.on_model_failed(model, reason)
        if self.progress is not None:
            self.progress.update(model, result.status, cached)
