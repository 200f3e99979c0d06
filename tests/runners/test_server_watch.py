"""The watch in front of managed servers: a failure its dead server caused becomes one ServerDied;
answers, and failures of a live server, pass through unchanged. A stand-in plays the servers."""

from __future__ import annotations

import asyncio
import signal

import pytest

from runners.base import GenerationRequest, GenerationResponse
from runners.llamacpp.exit import REBUILD_COMMAND, crash_advice, describe_exit
from runners.llamacpp.server import ServerDied
from runners.llamacpp.watch import ServerWatchRunner

REQUEST = GenerationRequest(model="m", messages=({"role": "user", "content": "hi"},))


def _response(error_class: str | None = None) -> GenerationResponse:
    return GenerationResponse(
        text="" if error_class else "ok",
        finish_reason=None if error_class else "stop",
        prompt_tokens=1,
        completion_tokens=1,
        latency_s=0.0,
        error_class=error_class,
    )  # type: ignore[arg-type]


class Inner:
    def __init__(self, response: GenerationResponse, servers: StandIn | None = None) -> None:
        self.response, self.servers, self.calls = response, servers, 0

    async def generate(self, request: GenerationRequest) -> GenerationResponse:
        self.calls += 1
        if self.servers is not None:
            self.servers.dead = True  # the server dies while answering this call
        return self.response

    async def aclose(self) -> None:
        pass


class StandIn:
    """Servers whose death is set by the test; ``grace`` records how long the watch offered."""

    def __init__(self, dead: bool = False) -> None:
        self.dead, self.graces = dead, []

    def death(self) -> ServerDied | None:
        return ServerDied("backend 'local': llama.cpp server killed by SIGSEGV (signal 11)") if self.dead else None

    async def wait_death(self, grace_s: float) -> ServerDied | None:
        self.graces.append(grace_s)
        return self.death()


def test_answers_and_a_live_servers_failures_pass_through() -> None:
    servers = StandIn()
    assert asyncio.run(ServerWatchRunner(Inner(_response()), servers).generate(REQUEST)).ok
    failed = asyncio.run(ServerWatchRunner(Inner(_response("connection")), servers, grace_s=0.5).generate(REQUEST))
    assert failed.error_class == "connection" and servers.graces == [0.5]
    client_error = asyncio.run(ServerWatchRunner(Inner(_response("client_error")), servers).generate(REQUEST))
    assert client_error.error_class == "client_error" and servers.graces == [0.5]  # not a death symptom


def test_a_failure_caused_by_a_dead_server_raises_instead_of_being_recorded() -> None:
    servers = StandIn()
    with pytest.raises(ServerDied, match="SIGSEGV"):
        asyncio.run(ServerWatchRunner(Inner(_response("connection"), servers), servers).generate(REQUEST))


def test_no_call_is_sent_to_a_server_known_dead() -> None:
    inner = Inner(_response())
    with pytest.raises(ServerDied):
        asyncio.run(ServerWatchRunner(inner, StandIn(dead=True)).generate(REQUEST))
    assert inner.calls == 0


def test_exits_are_described_and_a_cpu_trap_gets_the_rebuild_command() -> None:
    assert describe_exit(-signal.SIGSEGV) == "killed by SIGSEGV (signal 11)"
    assert describe_exit(1) == "exited with code 1"
    assert REBUILD_COMMAND in crash_advice(-signal.SIGILL)
    assert "libggml" in crash_advice(-signal.SIGSEGV) and REBUILD_COMMAND in crash_advice(-signal.SIGSEGV)
    assert crash_advice(-signal.SIGKILL) == crash_advice(1) == crash_advice(None) == ""
