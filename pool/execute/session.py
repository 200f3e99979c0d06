"""One run session: the execution machinery of a run, built in one place.

A run, its scoring stage, judge calibration and the benchmarks all send requests the same way:
the backends brought up where the executor runs them (:func:`open_execution`: in this process
through :mod:`pool.execute.endpoints`, or in Ray actors, :mod:`pool.execute.ray_executor`), one
:class:`~pool.execute.scheduler.Scheduler` that records every result into the run store through
the response cache and the budget, and a dispatcher that turns units into requests. A
:class:`Session` owns all of it; its users ask it for a dispatcher and send through it, and never
touch the scheduler or the backends themselves::

    async with Session.open(config, models, run_dir, run_id=..., store=store, cache=cache) as session:
        dispatcher = session.dispatcher(models_by_name, items)
        await session.send(dispatcher.lanes(units))
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from pool.config import Model, PoolConfig
from pool.execute.budget import Budget
from pool.execute.dispatch import Dispatcher, PromptItem
from pool.execute.endpoints import BackendEndpoint, endpoint_identities, models_by_backend, open_backends
from pool.execute.executor import Executor, Job, LocalExecutor
from pool.execute.ray_executor import RayExecutor
from pool.execute.response_cache import ResponseCache
from pool.execute.scheduler import Progress, RunCounters, Scheduler
from pool.store.run_store import RunStore


@dataclass
class Backends:
    """A run's backends as the driver sees them: each one's identities, and the executor that sends to them."""

    endpoints: dict[str, BackendEndpoint]
    executor: Executor


@asynccontextmanager
async def open_execution(
    config: PoolConfig,
    models: Iterable[Model],
    run_dir: Path,
    *,
    executor: str = "local",
    ray_address: str | None = None,
) -> AsyncIterator[Backends]:
    """Bring the backends up where the executor runs them: in this process (``local``) or in one
    Ray actor per backend (``ray``, see :mod:`pool.execute.ray_executor`)."""
    if executor == "local":
        async with open_backends(config, models, run_dir) as endpoints:
            yield Backends(endpoints, LocalExecutor({name: e.lane for name, e in endpoints.items()}))
        return
    if executor != "ray":
        raise ValueError(f"unknown executor {executor!r}; expected local or ray")
    grouped = models_by_backend(models)
    endpoints = {
        name: BackendEndpoint(name, config.backends[name].type, None, endpoint_identities(config, name, ms))
        for name, ms in grouped.items()
    }
    async with RayExecutor(config, grouped, run_dir, ray_address) as ray_executor:
        yield Backends(endpoints, ray_executor)


class Session:
    """A run's backends, executor, scheduler, store and cache; open it with :meth:`open`."""

    def __init__(self, endpoints: Mapping[str, BackendEndpoint], scheduler: Scheduler) -> None:
        self.endpoints = dict(endpoints)
        self._scheduler = scheduler

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        config: PoolConfig,
        models: Iterable[Model],
        run_dir: Path,
        *,
        run_id: str,
        store: RunStore,
        cache: ResponseCache | None = None,
        executor: str | Executor = "local",
        ray_address: str | None = None,
        budget: Budget | None = None,
        progress: Progress | None = None,
        max_consecutive_failures: int = 5,
        retry_infra_errors: bool = False,
        on_model_failed: Callable[[str, str], None] | None = None,
        answer_max_age_s: float | None = None,
    ) -> AsyncIterator[Session]:
        """Bring ``models``' backends up (``executor``: ``local``, ``ray``, or an executor of the
        caller's, e.g. a benchmark's stand-in, with no backend to open) and build the scheduler over
        them; everything is torn down on exit, error or cancellation."""

        def session(backends: Backends) -> Session:
            scheduler = Scheduler(
                run_id=run_id,
                store=store,
                executor=backends.executor,
                cache=cache,
                progress=progress,
                max_consecutive_failures=max_consecutive_failures,
                retry_infra_errors=retry_infra_errors,
                on_model_failed=on_model_failed,
                budget=budget,
                answer_max_age_s=answer_max_age_s,
            )
            return cls(backends.endpoints, scheduler)

        if not isinstance(executor, str):
            yield session(Backends({}, executor))
            return
        async with open_execution(config, models, run_dir, executor=executor, ray_address=ray_address) as backends:
            yield session(backends)

    @property
    def counters(self) -> RunCounters:
        """What was sent, taken from the cache and recorded so far."""
        return self._scheduler.counters

    def served_identity(self, model: Model) -> str:
        """The identity of the endpoint that serves ``model`` (``""`` when its backend is not open)."""
        endpoint = self.endpoints.get(model.backend)
        return endpoint.identities.get(model.name, "") if endpoint else ""

    def dispatcher(
        self,
        models: Mapping[str, Model],
        items: Mapping[str, PromptItem],
        judge: Model | None = None,
        *,
        judge_top_logprobs: int | None = None,
    ) -> Dispatcher:
        """Turns the units of ``models`` on ``items`` (and ``judge`` stages, asking ``judge_top_logprobs``
        alternatives per token when set) into this session's jobs."""
        return Dispatcher(models, items, self.endpoints, judge, judge_top_logprobs)

    async def send(
        self,
        jobs_by_lane: Mapping[str, Iterable[Job]],
        *,
        progress: Progress | None = None,
        fresh: bool = False,
        retry_infra_errors: bool | None = None,
    ) -> RunCounters:
        """Send every job and record its result. ``progress`` replaces the session's display for
        these jobs; ``fresh``: the response cache is neither read nor written (verdicts asked again
        tonight); ``retry_infra_errors``: a unit whose row is an ``infra_error`` is sent again."""
        with self._overrides(progress, fresh, retry_infra_errors):
            return await self._scheduler.run(jobs_by_lane)

    @contextmanager
    def _overrides(self, progress: Progress | None, fresh: bool, retry: bool | None) -> Iterator[None]:
        scheduler = self._scheduler
        saved = scheduler.progress, scheduler.cache, scheduler.retry_infra_errors
        if progress is not None:
            scheduler.progress = progress
        if fresh:
            scheduler.cache = None
        if retry is not None:
            scheduler.retry_infra_errors = retry
        try:
            yield
        finally:
            scheduler.progress, scheduler.cache, scheduler.retry_infra_errors = saved
