"""A runner in front of managed llama.cpp servers that turns their death into one error.

When a managed server dies (a crash, an OOM kill, a signal), every request to it fails with a
connection error. Recorded one by one, those failures would charge the server's death to its
models (``infra_error`` rows, "model marked failed") and hide the cause in a log. Instead, a call
that failed while its server is gone raises :class:`~runners.llamacpp.server.ServerDied`, which
names the server, its exit (code or signal), its log and the fix; nothing is recorded for that
call, so ``--resume`` after the fix asks it again. A failed call first gives the server
``grace_s`` to be reaped: a crash closes the socket before the exit status can be read.
"""

from __future__ import annotations

from typing import Protocol

from runners.base import ErrorClass, GenerationRequest, GenerationResponse, Runner
from runners.llamacpp.server import ServerDied

DEATH_GRACE_S = 5.0
# Failures a dead server causes; any other failure is the call's own and returns at once.
_DEATH_SYMPTOMS: frozenset[ErrorClass] = frozenset({"connection", "server_error", "bad_response", "timeout"})


class Watched(Protocol):
    """What the watch needs of a group of managed servers (:class:`~runners.llamacpp.replicas.ManagedLlamaReplicas`)."""

    def death(self) -> ServerDied | None: ...

    async def wait_death(self, grace_s: float) -> ServerDied | None: ...


class ServerWatchRunner:
    """A :class:`~runners.base.Runner` that raises :class:`ServerDied` instead of returning a failure
    its dead server caused."""

    def __init__(self, inner: Runner, servers: Watched, grace_s: float = DEATH_GRACE_S) -> None:
        self.inner, self.servers, self.grace_s = inner, servers, grace_s

    async def generate(self, request: GenerationRequest) -> GenerationResponse:
        if (died := self.servers.death()) is not None:
            raise died
        response = await self.inner.generate(request)
        if response.ok or response.error_class not in _DEATH_SYMPTOMS:
            return response
        grace = self.grace_s if response.error_class == "connection" else 0.0
        if (died := await self.servers.wait_death(grace)) is not None:
            raise died
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __getattr__(self, name: str) -> object:  # the inner runner's extras (e.g. a balancer's counts)
        return getattr(self.inner, name)
