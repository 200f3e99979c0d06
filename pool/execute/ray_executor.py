"""The Ray executor: one async actor per backend lane, so a pool runs where its models live.

Each lane actor opens its backend exactly as the local executor does (:func:`pool.execute.endpoints.open_backends`
for that backend's models: the HTTP session, or the managed llama.cpp server(s) started in the actor's
own process, so the weights load once on the host the actor is placed on) and holds the lane's
concurrency limit and rate limiter — one actor per lane, so the limits hold cluster-wide. The
driver keeps at most ``2 × max_concurrency`` calls in flight per lane and commits each response to
the run store as it arrives (:class:`pool.execute.scheduler.Scheduler`), so a driver's memory does not grow
with the plan and a killed driver resumes from the store as today.

An actor that dies is restarted (``max_restarts=-1``) and Ray re-sends its unfinished calls
(``max_task_retries=-1``): a request may be sent twice, but the driver receives one response per
job and the store's keys make a second record impossible — send at least once, record exactly once.

A backend may name the node it must run on (``node: <ip>`` in its pool entry is a Ray node
resource, ``node:<ip>``), e.g. a llama.cpp backend whose GGUF files live on one GPU host.

Without an address, a private single-machine cluster is started on loopback only (no listening on
or advertising of the machine's LAN address): ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` makes Ray keep
its node IP at 127.0.0.1. Clusters started with ``ray start`` use token authentication: export
``RAY_AUTH_MODE=token`` (and the token) on the driver too.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from pool.config import Model, PoolConfig
from pool.execute.executor import Job, OnResult, SettleLocally
from runners.base import GenerationRequest, GenerationResponse

PROJECT_ROOT = Path(__file__).resolve().parent.parent
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


class LaneActor:
    """One backend lane on a Ray worker: its runner, limits and (for llama.cpp) its servers."""

    def __init__(self, config: PoolConfig, backend: str, models: Sequence[Model], run_dir: str) -> None:
        self.config, self.backend, self.models, self.run_dir = config, backend, list(models), Path(run_dir)
        self._stack: AsyncExitStack | None = None
        self._lane: Any = None
        self._opening: asyncio.Lock | None = None
        self._slots: asyncio.Semaphore | None = None

    async def _open(self) -> Any:
        if self._lane is not None:
            return self._lane
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._lane is None:
                from pool.execute.endpoints import open_backends

                self.run_dir.mkdir(parents=True, exist_ok=True)
                stack = AsyncExitStack()
                endpoints = await stack.enter_async_context(open_backends(self.config, self.models, self.run_dir))
                lane = endpoints[self.backend].lane
                self._slots = asyncio.Semaphore(lane.max_concurrency)
                self._stack, self._lane = stack, lane
        return self._lane

    async def generate(self, request: GenerationRequest) -> GenerationResponse:
        lane = await self._open()
        assert self._slots is not None
        async with self._slots:
            if lane.throttler is not None:
                async with lane.throttler:
                    pass
            return await lane.runner.generate(request)

    async def ready(self) -> int:
        """Open the lane (start its servers); returns the actor's pid (tests kill it by pid)."""
        await self._open()
        return os.getpid()

    async def close(self) -> None:
        if self._stack is not None:
            stack, self._stack, self._lane = self._stack, None, None
            await stack.aclose()


class RayExecutor:
    """Sends each lane's jobs to that lane's actor; see the module docstring."""

    def __init__(
        self,
        config: PoolConfig,
        models_by_backend: Mapping[str, Sequence[Model]],
        run_dir: Path,
        address: str | None = None,
    ) -> None:
        self.config, self.models_by_backend, self.run_dir, self.address = (
            config,
            dict(models_by_backend),
            run_dir,
            address,
        )
        self.actors: dict[str, Any] = {}
        self._started_ray = False

    async def __aenter__(self) -> RayExecutor:
        if self.address is not None:
            await asyncio.to_thread(check_cluster_address, self.address)
        ray = _import_ray(local_cluster=self.address is None)
        if not ray.is_initialized():
            runtime_env = {"env_vars": {"PYTHONPATH": _pythonpath(), **(LOOPBACK_ENV if self.address is None else {})}}
            if self.address is None:
                ray.init(
                    num_cpus=os.cpu_count() or 1,
                    include_dashboard=False,
                    log_to_driver=False,
                    runtime_env=runtime_env,
                    _node_ip_address="127.0.0.1",
                )
            else:
                ray.init(address=self.address, log_to_driver=False, runtime_env=runtime_env)
            self._started_ray = True
        remote_lane = ray.remote(LaneActor)
        for backend, models in self.models_by_backend.items():
            options: dict[str, Any] = {
                "num_cpus": 0,
                "max_restarts": -1,
                "max_task_retries": -1,
                "max_concurrency": 1000,
            }
            node = getattr(self.config.backends[backend], "node", None)
            if node:
                options["resources"] = {f"node:{node}": 0.001}
            self.actors[backend] = remote_lane.options(**options).remote(
                self.config, backend, list(models), str(self.run_dir.resolve())
            )
        # Start every lane's backend now (in parallel), so a backend that cannot start fails the run here.
        self.pids = dict(
            zip(self.actors, await asyncio.gather(*(a.ready.remote() for a in self.actors.values())), strict=True)
        )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        ray = _import_ray(local_cluster=False)
        try:
            await asyncio.gather(*(actor.close.remote() for actor in self.actors.values()), return_exceptions=True)
        finally:
            for actor in self.actors.values():
                ray.kill(actor, no_restart=True)
            self.actors.clear()
            if self._started_ray:
                ray.shutdown()

    async def run(
        self, jobs_by_lane: Mapping[str, Iterable[Job]], on_result: OnResult, settle_locally: SettleLocally
    ) -> None:
        unknown = set(jobs_by_lane) - set(self.actors)
        if unknown:
            raise ValueError(f"jobs for unknown backend(s): {', '.join(sorted(unknown))}")
        async with asyncio.TaskGroup() as group:
            for name, jobs in jobs_by_lane.items():
                group.create_task(self._pump(name, jobs, on_result, settle_locally), name=f"ray-lane:{name}")

    async def _pump(self, lane: str, jobs: Iterable[Job], on_result: OnResult, settle_locally: SettleLocally) -> None:
        """Keep at most 2 × the lane's limit calls in flight; commit each response as it arrives.

        A call's permit is given back only once its response is committed, so nothing more is sent
        for it before that; one task per call keeps the driver's cost per response flat in the window
        (an ``asyncio.wait`` over every call in flight costs the window's size at each wake-up).
        """
        actor = self.actors[lane]
        window = asyncio.Semaphore(2 * self.config.backends[lane].max_concurrency)

        async def call(job: Job) -> None:
            try:
                commit = on_result(job, await actor.generate.remote(job.request))
                if commit is not None:
                    await commit
            finally:
                window.release()

        async with asyncio.TaskGroup() as calls:
            for job in jobs:
                if settle_locally(job):
                    continue
                await window.acquire()
                calls.create_task(call(job))


def cluster_host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of a ``HOST:PORT`` cluster address; None for ``auto`` and ``ray://`` addresses
    (left to Ray); ValueError, saying what is expected, for anything else."""
    if address == "auto" or "://" in address:
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f"--ray-address (or the pool file's execution.ray_address) {address!r}: expected HOST:PORT "
            "(the head's address and its `ray start --head --port`), or 'auto' on a host of the cluster"
        )
    return host.strip("[]"), int(port)


def check_cluster_address(address: str, timeout_s: float = 5.0) -> None:
    """Fail at once when nothing listens at a ``HOST:PORT`` cluster address: ``ray.init`` would retry
    for minutes, printing only its own connection warnings, and a nightly job would hang."""
    host_port = cluster_host_port(address)
    if host_port is None:
        return
    try:
        socket.create_connection(host_port, timeout=timeout_s).close()
    except OSError as exc:
        raise RuntimeError(
            f"--ray-address (or the pool file's execution.ray_address) {address}: no Ray cluster "
            f"answers there ({exc}). Start its head with `ray start --head --port={host_port[1]}` on "
            "that host, or correct the address"
        ) from None


def _pythonpath() -> str:
    existing = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join(p for p in (str(PROJECT_ROOT), existing) if p)


def _import_ray(*, local_cluster: bool) -> Any:
    """Import Ray (an optional extra), on loopback only when this process starts the cluster."""
    if local_cluster:
        for key, value in LOOPBACK_ENV.items():
            os.environ.setdefault(key, value)
    try:
        import ray
    except ImportError:
        raise RuntimeError("the Ray executor needs Ray: pip install 'medpool[ray]' (or pip install ray)") from None
    return ray
