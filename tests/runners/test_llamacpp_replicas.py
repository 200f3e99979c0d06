"""llama.cpp replicas: file naming, leftovers of both namings, and two REAL servers behind one balancer."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from runners.balanced import BalancedRunner
from runners.base import GenerationParams, GenerationRequest
from runners.llamacpp.replicas import (
    ManagedLlamaReplicas,
    free_loopback_ports,
    replica_log_path,
    stop_leftover_replicas,
)
from runners.llamacpp.server import (
    SERVER_CMDLINE_MARKER,
    LlamaServerError,
    ManagedLlamaServer,
    server_pid_path,
)
from runners.llamacpp.settings import LlamaCppSettings
from runners.registry import make_runner
from tests.local_models import requires_llama

SMOL = [("smollm2", "smollm2-135m-instruct")]


def _replicas(count: int, **keys: object) -> LlamaCppSettings:
    """``count`` llama-cpp-python servers, as a pool file's ``engine: llama_cpp`` and ``replicas`` give them."""
    return LlamaCppSettings.of(engine="llama_cpp", replicas=count, **keys)


# A stand-in for a leftover server: its argv names llama_cpp.server, as the pid check demands.
_FAKE_SERVER = "import time; print('ready', flush=True); time.sleep(120)"


def test_one_replica_keeps_the_single_server_names_and_several_are_numbered(tmp_path: Path) -> None:
    log = tmp_path / "llamacpp-local.log"
    assert replica_log_path(log, 0, 1) == log
    assert [replica_log_path(log, i, 3).name for i in range(3)] == [
        "llamacpp-local-r0.log",
        "llamacpp-local-r1.log",
        "llamacpp-local-r2.log",
    ]
    assert server_pid_path(replica_log_path(log, 1, 2)).name == "llamacpp-local-r1.pid"
    group = ManagedLlamaReplicas(SMOL, _replicas(2), log_path=log)
    assert [s._user_log for s in group.servers] == [
        tmp_path / "llamacpp-local-r0.log",
        tmp_path / "llamacpp-local-r1.log",
    ]


def test_free_loopback_ports_are_distinct() -> None:
    ports = free_loopback_ports(8)
    assert len(set(ports)) == 8 and all(0 < p < 65536 for p in ports)


def test_zero_replicas_is_refused() -> None:
    with pytest.raises(ValueError, match="replicas must be at least 1, got 0"):
        ManagedLlamaReplicas(SMOL, _replicas(1).model_copy(update={"replicas": 0}))


@pytest.fixture
def leftovers() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _leftover(procs: list[subprocess.Popen[str]], pid_file: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _FAKE_SERVER, SERVER_CMDLINE_MARKER],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    procs.append(proc)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    pid_file.write_text(
        json.dumps({"pid": proc.pid, "pgid": proc.pid, "port": 1, "cmdline_marker": SERVER_CMDLINE_MARKER})
    )
    return proc


def test_leftovers_of_any_replica_count_are_stopped_and_others_left_alone(
    tmp_path: Path, leftovers: list[subprocess.Popen[str]]
) -> None:
    log = tmp_path / "llamacpp-local.log"
    single = _leftover(leftovers, tmp_path / "llamacpp-local.pid")  # a run with one server
    numbered = [_leftover(leftovers, tmp_path / f"llamacpp-local-r{i}.pid") for i in (0, 1, 12)]
    other_backend = _leftover(leftovers, tmp_path / "llamacpp-local2-r0.pid")  # not this backend's

    assert stop_leftover_replicas(log) == 4
    assert all(p.wait(timeout=10) == -signal.SIGTERM for p in [single, *numbered])
    assert sorted(p.name for p in tmp_path.glob("*.pid")) == ["llamacpp-local2-r0.pid"]
    assert other_backend.poll() is None


# --- real servers ------------------------------------------------------------------------------


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _assert_all_stopped(servers: list[ManagedLlamaServer]) -> None:
    for server in servers:
        assert server.process is not None and server.process.returncode is not None
        assert not _group_alive(server.process.pid)
        assert server.port is not None and not _port_open(server.port)
        assert server.pid_path is not None and not server.pid_path.exists()


def _question(i: int) -> GenerationRequest:
    return GenerationRequest(
        model="smollm2",
        messages=({"role": "user", "content": f"Name symptom {i} of the flu."},),
        params=GenerationParams(temperature=0, max_tokens=8),
    )


@requires_llama
def test_two_replicas_both_answer_through_one_balancer_then_both_are_gone(tmp_path: Path) -> None:
    log = tmp_path / "llamacpp-local.log"

    async def scenario() -> ManagedLlamaReplicas:
        async with ManagedLlamaReplicas(SMOL, _replicas(2, n_threads=1, n_ctx=512), log_path=log) as group:
            assert len(set(group.base_urls)) == 2
            assert all(s.pid_path is not None and s.pid_path.exists() for s in group.servers)
            offsets = group.log_offsets()
            balancer = BalancedRunner([make_runner("llamacpp", url, max_retries=0) for url in group.base_urls])
            try:
                answers = await asyncio.gather(*(balancer.generate(_question(i)) for i in range(4)))
            finally:
                await balancer.aclose()
            assert all(a.ok and a.text.strip() and a.completion_tokens for a in answers), answers
            assert balancer.sent == (2, 2)
            timings = group.timings_since(offsets)
            assert [len(t) for t in timings] == [2, 2] and all(t.total_ms > 0 for ts in timings for t in ts)
        return group

    group = asyncio.run(scenario())
    _assert_all_stopped(group.servers)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["llamacpp-local-r0.log", "llamacpp-local-r1.log"]


@requires_llama
def test_a_replica_that_cannot_start_takes_the_others_down_with_it(tmp_path: Path) -> None:
    group = ManagedLlamaReplicas(
        SMOL, _replicas(2, n_ctx=512), log_path=tmp_path / "llamacpp-local.log", ready_timeout_s=120
    )
    with socket.socket() as taken:  # replica 1's port is in use, so its server exits at bind
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        group.servers[1].port = taken.getsockname()[1]
        with pytest.raises(LlamaServerError, match="exited with code"):
            asyncio.run(group.start())
    assert all(s.process is not None for s in group.servers)
    for server in group.servers:
        assert server.process is not None and not _group_alive(server.process.pid)
        assert server.pid_path is not None and not server.pid_path.exists()


@requires_llama
def test_replicas_are_stopped_when_cancelled(tmp_path: Path) -> None:
    holder: list[ManagedLlamaReplicas] = []

    async def serve_forever(started: asyncio.Event) -> None:
        async with ManagedLlamaReplicas(SMOL, _replicas(2, n_ctx=512), log_path=tmp_path / "x.log") as group:
            holder.append(group)
            started.set()
            await asyncio.sleep(3600)

    async def scenario() -> None:
        started = asyncio.Event()
        task = asyncio.create_task(serve_forever(started))
        await asyncio.wait_for(started.wait(), 180)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    _assert_all_stopped(holder[0].servers)


@requires_llama
def test_open_backends_serves_a_llamacpp_backend_as_one_balanced_lane(tmp_path: Path) -> None:
    from pool.config import parse_pool
    from pool.execute.endpoints import local_model_identity, open_backends

    config = parse_pool(
        "backends:\n  local:\n    type: llamacpp\n    engine: llama_cpp\n    replicas: 2\n    n_ctx: 512\n"
        "models:\n  - {name: smol, backend: local, gguf: smollm2-135m-instruct, max_tokens: 8}\n",
        "<test pool>",
    )
    model = config.model("smol")

    async def scenario() -> list[int]:
        async with open_backends(config, [model], tmp_path) as endpoints:
            local = endpoints["local"]
            assert local.lane.max_concurrency == 2 and isinstance(local.lane.runner.inner, BalancedRunner)
            assert local.identities == {"smol": local_model_identity(model)}
            assert local.identities["smol"].startswith("llamacpp://")
            assert local.server_logs == [tmp_path / "llamacpp-local-r0.log", tmp_path / "llamacpp-local-r1.log"]
            assert local.server_log == local.server_logs[0]
            requests = [
                GenerationRequest(
                    model="smol", messages=({"role": "user", "content": f"Say {i}."},), params=model.generation_params()
                )
                for i in range(2)
            ]
            answers = await asyncio.gather(*(local.lane.runner.generate(r) for r in requests))
            assert all(a.ok for a in answers), answers
            assert local.lane.runner.sent == (1, 1)
            pids = [json.loads(p.with_suffix(".pid").read_text())["pid"] for p in local.server_logs]
        return pids

    pids = asyncio.run(scenario())
    assert not any(_group_alive(pid) for pid in pids)
    assert not list(tmp_path.glob("*.pid"))


@requires_llama
def test_an_interrupted_group_is_killed_at_once_not_stopped_politely(tmp_path: Path) -> None:
    """Cancelled (Ctrl-C, SIGTERM): whatever the server is working on is abandoned, so it is SIGKILLed at once
    instead of being sent SIGTERM and given stop_timeout_s to finish requests nobody waits for."""
    holder: list[ManagedLlamaReplicas] = []

    async def serve_until_cancelled(started: asyncio.Event) -> None:
        async with ManagedLlamaReplicas(SMOL, _replicas(1, n_ctx=512), log_path=tmp_path / "x.log") as group:
            holder.append(group)
            started.set()
            await asyncio.sleep(3600)

    async def scenario() -> None:
        started = asyncio.Event()
        task = asyncio.create_task(serve_until_cancelled(started))
        await asyncio.wait_for(started.wait(), 180)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    _assert_all_stopped(holder[0].servers)
    assert [s.process.returncode for s in holder[0].servers] == [-signal.SIGKILL]
