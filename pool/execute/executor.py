"""The executor seam: where requests are sent, separated from what is done with their answers.

An executor takes lazy job streams per backend lane (a :class:`Job` is one unit's request, a
:class:`Lane` one backend's runner and limits), sends each job's request within that lane's limits,
and hands every response back to the driver as it arrives (``on_result``); cancelling the task that
awaits :meth:`Executor.run` cancels the run. The driver (:class:`pool.execute.scheduler.Scheduler`)
alone reads the response cache, decides a failed model's jobs without sending them
(``settle_locally``), and writes the run store — every result committed before the slot that
sent it sends again — so exactly-once recording, caching and resume are no executor's concern.

Two executors exist: :class:`LocalExecutor` (asyncio lanes in this process) and
``pool.execute.ray_executor.RayExecutor`` (one actor per lane on a Ray cluster).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from asyncio_throttle import Throttler

from pool.store.outcome import Unit
from runners.base import GenerationRequest, GenerationResponse, Runner


@dataclass(frozen=True)
class Job:
    """One unit with the request it sends and the identity its answer is cached under."""

    unit: Unit
    request: GenerationRequest
    backend_type: str
    endpoint_identity: str
    called_model: str = ""  # the pool model that answers (the judge for judge units); see pool.execute.dispatch

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


# Takes a response; returns an awaitable done once its row is committed (None: committed already).
# The executor awaits it before the slot that sent the job sends again.
OnResult = Callable[[Job, GenerationResponse], Awaitable[None] | None]
# Called just before a job would be sent; True means the driver settled it (a cache hit, a failed
# model) and the executor must not send it.
SettleLocally = Callable[[Job], bool]


def leaf_errors(exc: BaseException) -> list[BaseException]:
    """The exceptions inside ``exc``: an executor's lanes run in task groups, and a group's own
    message says only how many errors it holds, not what they were."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaf_errors(inner)]
    return [exc]


class Executor(Protocol):
    """Sends jobs lane by lane and reports each response to the driver as it arrives."""

    async def run(
        self, jobs_by_lane: Mapping[str, Iterable[Job]], on_result: OnResult, settle_locally: SettleLocally
    ) -> None: ...


class LocalExecutor:
    """Asyncio lanes in this process: per lane one bounded queue and at most ``max_concurrency``
    workers, started only as jobs wait for a free one (in-flight requests never exceed the limit,
    reach it whenever work is waiting, and idle slots cost nothing), plus the lane's optional rate
    limiter. One producer per lane feeds its queue lazily, so a lane holds at most
    ``2 × max_concurrency`` jobs in memory, and a starving lane never blocks another's producer.
    ``on_result`` runs, and its commit is awaited, before the worker takes its next job: an answer
    received is recorded before anything else is sent from that slot.
    """

    def __init__(self, lanes: Mapping[str, Lane]) -> None:
        self.lanes = dict(lanes)

    async def run(
        self, jobs_by_lane: Mapping[str, Iterable[Job]], on_result: OnResult, settle_locally: SettleLocally
    ) -> None:
        unknown = set(jobs_by_lane) - set(self.lanes)
        if unknown:
            raise ValueError(f"jobs for unknown backend(s): {', '.join(sorted(unknown))}")
        async with asyncio.TaskGroup() as group:
            for name, jobs in jobs_by_lane.items():
                lane = self.lanes[name]
                queue: asyncio.Queue[Job | None] = asyncio.Queue(maxsize=2 * lane.max_concurrency)
                worker = _LaneWorker(lane, queue, on_result, settle_locally)
                group.create_task(worker.produce(jobs, group), name=f"produce:{name}")


class _LaneWorker:
    def __init__(
        self, lane: Lane, queue: asyncio.Queue[Job | None], on_result: OnResult, settle_locally: SettleLocally
    ) -> None:
        self.lane, self.queue = lane, queue
        self.on_result, self.settle_locally = on_result, settle_locally
        self.idle = 0  # workers waiting on the queue

    async def produce(self, jobs: Iterable[Job], group: asyncio.TaskGroup) -> None:
        """Feed the lane, starting a worker only when a job waits and no worker is free."""
        workers = 0
        for job in jobs:
            if workers < self.lane.max_concurrency and self.idle == 0:
                workers += 1
                group.create_task(self.work(), name=f"work:{self.lane.name}:{workers}")
            await self.queue.put(job)
        for _ in range(workers):
            await self.queue.put(None)

    async def work(self) -> None:
        while True:
            self.idle += 1
            job = await self.queue.get()
            self.idle -= 1
            if job is None:
                return
            if self.settle_locally(job):
                continue
            if self.lane.throttler is not None:
                async with self.lane.throttler:
                    pass
            committed = self.on_result(job, await self.lane.runner.generate(job.request))
            if committed is not None:
                await committed
