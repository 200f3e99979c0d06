"""Several identical llama.cpp servers for one backend: more tokens per second from the same cores.

A llama.cpp server answers one request at a time, and one decode step of a small model does not
keep two cores busy: on 2 cores, two 1-thread servers gave 1.6-2.1x the tokens per second of one
2-thread server (SmolLM2-135M, Qwen2.5-0.5B). :class:`ManagedLlamaReplicas` starts ``replicas``
:class:`~runners.llamacpp.server.ManagedLlamaServer` instances of the same models in parallel and
stops them together; put a :class:`~runners.balanced.BalancedRunner` over one runner per
``base_urls`` entry to use them as one endpoint.

Each replica is a full managed server: its own process group, parent-death signal, log and pid
file. With ``log_path=DIR/llamacpp-local.log`` one replica keeps exactly that name (as before
replicas existed); several are ``llamacpp-local-r0.log``, ``llamacpp-local-r1.log``, ... with their
``.pid`` files beside them. A start first stops every leftover a killed run recorded under either
naming, so a resume after a change of replica count leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import glob
import logging
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Unpack

from runners.base import Mode
from runners.llamacpp.server import (
    DEFAULT_LABEL,
    ManagedLifetime,
    ManagedLlamaServer,
    ModelSpec,
    ServerDied,
    ServerOptions,
    ServerTiming,
    free_loopback_ports,
    server_pid_path,
    stop_leftover_server,
)
from runners.llamacpp.settings import LlamaCppSettings

logger = logging.getLogger(__name__)


def replica_log_path(log_path: Path, index: int, replicas: int) -> Path:
    """``llamacpp-local.log`` for a single server; ``llamacpp-local-r<index>.log`` for several."""
    if replicas == 1:
        return log_path
    return log_path.with_name(f"{log_path.stem}-r{index}{log_path.suffix}")


def stop_leftover_replicas(log_path: Path) -> int:
    """Stop every server a killed run recorded next to ``log_path`` (one or many); how many lived.

    Both namings are checked, so a run resumed with another replica count still finds them.
    """
    numbered = re.compile(re.escape(log_path.stem) + r"-r\d+\.pid")
    pid_files = [server_pid_path(log_path)] + sorted(
        p for p in log_path.parent.glob(f"{glob.escape(log_path.stem)}-r*.pid") if numbered.fullmatch(p.name)
    )
    return sum(stop_leftover_server(p) for p in pid_files if p.exists())


class ManagedLlamaReplicas(ManagedLifetime):
    """``async with ManagedLlamaReplicas(models, settings) as group:`` then use ``group.base_urls``.

    ``settings.replicas`` servers, each serving every model as ``settings`` say (engine, threads,
    context, slots). If one fails to start, the others are stopped and the first failure is raised;
    on exit, error or cancellation all are stopped.
    """

    def __init__(
        self,
        models: Iterable[ModelSpec],
        settings: LlamaCppSettings,
        *,
        log_path: str | os.PathLike[str] | None = None,
        label: str = DEFAULT_LABEL,
        **options: Unpack[ServerOptions],
    ) -> None:
        replicas = settings.replicas
        if replicas < 1:  # a block built without validation (model_construct, model_copy)
            raise ValueError(f"replicas must be at least 1, got {replicas}")
        served = list(models)
        self.settings = settings
        self.log_path = Path(log_path) if log_path is not None else None
        self.servers = [
            ManagedLlamaServer(
                served,
                settings,
                log_path=replica_log_path(self.log_path, i, replicas) if self.log_path else None,
                label=label if replicas == 1 else f"{label} (replica {i})",
                **options,
            )
            for i in range(replicas)
        ]

    @property
    def base_urls(self) -> list[str]:
        """One OpenAI-style base URL per replica, in replica order."""
        return [server.base_url for server in self.servers]

    @property
    def log_paths(self) -> list[Path]:
        """Each replica's server log (known once started)."""
        return [server.log_path for server in self.servers if server.log_path is not None]

    @property
    def modes(self) -> dict[str, Mode]:
        return self.servers[0].modes

    def abandon(self) -> None:
        # Interrupted (Ctrl-C, SIGTERM, a cancel) or failed: the requests in flight are abandoned and a
        # server has nothing to keep, but a polite stop waits for it to finish them (up to stop_timeout_s).
        for server in self.servers:
            server.kill()

    async def start(self) -> None:
        """Stop a killed run's leftovers, then start every replica at once and wait for all."""
        if self.log_path is not None:
            await asyncio.to_thread(stop_leftover_replicas, self.log_path)
        unset = [s for s in self.servers if s.port is None]
        for server, port in zip(unset, free_loopback_ports(len(unset), self.servers[0].host), strict=True):
            server.port = port
        starts = [asyncio.ensure_future(server.start()) for server in self.servers]
        try:
            await asyncio.gather(*starts)
        except BaseException:
            for task in starts:  # a failed start stops its own server; cancel the ones still waiting
                task.cancel()
            await asyncio.gather(*starts, return_exceptions=True)
            await self.stop()
            raise

    async def stop(self) -> None:
        """Stop every replica in parallel (SIGTERM, then SIGKILL); safe to call twice."""
        stops = [asyncio.ensure_future(server.stop()) for server in self.servers]
        try:
            await asyncio.gather(*stops)
        except BaseException:
            for server in self.servers:  # cancelled mid-stop: a stop that never ran must still kill
                server.kill()
            raise

    def death(self) -> ServerDied | None:
        """The first replica that exited while it was needed, as the error to raise; else None."""
        return next((died for died in (server.death() for server in self.servers) if died is not None), None)

    async def wait_death(self, grace_s: float) -> ServerDied | None:
        """:meth:`death`, giving each replica whose socket may just have closed ``grace_s`` to exit."""
        if (died := self.death()) is not None:
            return died
        found = await asyncio.gather(*(server.wait_death(grace_s) for server in self.servers))
        return next((died for died in found if died is not None), None)

    def log_offsets(self) -> list[int]:
        """Each replica's log size now; pass the list to :meth:`timings_since` later."""
        return [server.log_offset() for server in self.servers]

    def timings_since(self, offsets: Sequence[int] | None = None) -> list[list[ServerTiming]]:
        """Per replica, the timings of the requests it finished since its offset, oldest first."""
        offsets = offsets if offsets is not None else [0] * len(self.servers)
        return [server.timings_since(offset) for server, offset in zip(self.servers, offsets, strict=True)]
