"""The managed llama.cpp server: config, timing parser, and real start/serve/stop with the three models."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from runners.llamacpp.engines import ENGINE_MODULES
from runners.llamacpp.gguf_models import MODELS
from runners.llamacpp.server import (
    SERVER_CMDLINE_MARKER,
    LlamaServerError,
    ManagedLlamaServer,
    ServedModel,
    parse_server_timings,
    server_pid_path,
    stop_leftover_server,
)
from runners.llamacpp.settings import LlamaCppSettings
from tests.local_models import requires_llama
from tests.processes import alive, eventually

REPO = Path(__file__).resolve().parents[2]


def _alone(**keys: object) -> LlamaCppSettings:
    """llama-cpp-python's server on its own: a pool file's ``engine: llama_cpp`` with ``replicas: 1``."""
    return LlamaCppSettings.of(engine="llama_cpp", replicas=1, **keys)


ALL_THREE = [
    ServedModel("smollm2", "smollm2-135m-instruct"),
    ServedModel("gemma", "gemma3-270m"),
    ServedModel("qwen", "qwen2.5-coder-0.5b-instruct"),
]

SAMPLE_LOG = (
    'INFO:     127.0.0.1:40000 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    "llama_perf_context_print:        load time =     120.50 ms\n"
    "llama_perf_context_print: prompt eval time =      41.93 ms /    31 tokens"
    " (    1.35 ms per token,   739.33 tokens per second)\n"
    "llama_perf_context_print:        eval time =     251.04 ms /    15 runs  "
    " (   16.74 ms per token,    59.75 tokens per second)\n"
    "llama_perf_context_print:       total time =     296.20 ms /    46 tokens\n"
    "llama_perf_context_print:        load time =     120.50 ms\n"
    "llama_perf_context_print:        eval time =     100.00 ms /     8 runs  "
    " (   12.50 ms per token,    80.00 tokens per second)\n"
    "llama_perf_context_print:       total time =     110.00 ms /     9 tokens\n"
)


def test_parse_server_timings_one_entry_per_request() -> None:
    first, second = parse_server_timings(SAMPLE_LOG)
    assert (
        first.prompt_eval_ms,
        first.prompt_tokens,
        first.eval_ms,
        first.eval_runs,
    ) == (41.93, 31, 251.04, 15)
    assert first.total_s == pytest.approx(0.2962)
    assert first.eval_tokens_per_s == pytest.approx(15 / 0.25104)
    assert (second.prompt_tokens, second.eval_runs, second.total_ms) == (
        0,
        8,
        110.0,
    )  # prefix fully cached


def test_config_has_one_entry_per_alias(tmp_path: Path) -> None:
    gguf = tmp_path / "x.gguf"
    gguf.write_bytes(b"GGUF")
    server = ManagedLlamaServer([("a", str(gguf), {"n_ctx": 512}), ("b", str(gguf))], _alone(n_threads=2), port=1234)
    config = server.server_config()
    assert (config["host"], config["port"]) == ("127.0.0.1", 1234)
    a, b = config["models"]
    assert (a["model_alias"], a["n_ctx"], b["n_ctx"], b["n_threads"]) == (
        "a",
        512,
        2048,
        2,
    )
    assert a["model"] == str(gguf) and a["logits_all"] is False
    assert server.modes == {"a": "chat", "b": "chat"}


def test_the_batched_engine_gets_the_settings_whole_and_rebuilds_exactly_them(tmp_path: Path) -> None:
    """One settings object down the chain: the batched server's config carries every field (slots: 1 and
    replicas: 1 too, which dumps leave out), and its entries only name the models."""
    gguf = tmp_path / "x.gguf"
    gguf.write_bytes(b"GGUF")
    settings = LlamaCppSettings.of(slots=1, n_ctx=512, n_threads=1)
    config = ManagedLlamaServer([("a", str(gguf))], settings, port=1234).server_config()
    assert config["models"] == [{"model": str(gguf), "model_alias": "a"}]
    assert LlamaCppSettings.model_validate(json.loads(json.dumps(config["settings"]))) == settings
    assert _alone().threads == 2 and _alone(n_threads=3).threads == 3  # llama_cpp alone: the server's 2


def test_registry_modes_and_duplicate_aliases() -> None:
    assert ServedModel("g", "gemma3-270m").mode == "completion" == MODELS["gemma3-270m"].mode
    with pytest.raises(ValueError, match="duplicate"):
        ManagedLlamaServer([("a", "gemma3-270m"), ("a", "smollm2-135m-instruct")], _alone())


def _port_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((host, port)) == 0


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _assert_stopped(server: ManagedLlamaServer) -> None:
    assert server.process is not None and server.process.returncode is not None
    assert not _group_alive(server.process.pid)
    assert server.port is not None and not _port_open(server.host, server.port)


async def _post(session: aiohttp.ClientSession, url: str, body: dict[str, object]) -> dict[str, object]:
    async with session.post(url, json=body) as resp:
        assert resp.status == 200, await resp.text()
        return await resp.json()


@requires_llama
def test_three_models_answer_then_server_is_gone(tmp_path: Path) -> None:
    async def scenario() -> ManagedLlamaServer:
        log = tmp_path / "server.log"
        async with ManagedLlamaServer(ALL_THREE, _alone(n_ctx=1024), log_path=log) as server:
            offset = server.log_offset()
            timeout = aiohttp.ClientTimeout(total=120)
            async with aiohttp.ClientSession(timeout=timeout) as session:
                chat = f"{server.base_url}/chat/completions"
                smol = await _post(
                    session,
                    chat,
                    {
                        "model": "smollm2",
                        "max_tokens": 16,
                        "temperature": 0,
                        "messages": [{"role": "user", "content": "Name one symptom of the flu."}],
                    },
                )
                qwen = await _post(
                    session,
                    chat,
                    {
                        "model": "qwen",
                        "max_tokens": 16,
                        "temperature": 0,
                        "messages": [
                            {
                                "role": "user",
                                "content": "感冒的常见症状有哪些？请用中文简短回答。",
                            }
                        ],
                    },
                )
                gemma = await _post(
                    session,
                    f"{server.base_url}/completions",
                    {
                        "model": "gemma",
                        "max_tokens": 16,
                        "temperature": 0,
                        "stop": ["\n\n"],
                        "prompt": "Question: What organ pumps blood through the body?\nAnswer:",
                    },
                )
            for reply in (smol, qwen):
                choice = reply["choices"][0]  # type: ignore[index]
                assert choice["message"]["content"].strip() and choice["finish_reason"] in ("stop", "length")
            assert any("\u4e00" <= ch <= "\u9fff" for ch in qwen["choices"][0]["message"]["content"])  # type: ignore[index]
            assert gemma["choices"][0]["text"].strip() and gemma["choices"][0]["finish_reason"]  # type: ignore[index]
            assert smol["usage"]["completion_tokens"] > 0  # type: ignore[index]
            timings = server.timings_since(offset)
            assert len(timings) == 3 and all(t.total_ms > 0 for t in timings)
        return server

    server = asyncio.run(scenario())
    _assert_stopped(server)
    assert (tmp_path / "server.log").stat().st_size > 0


@requires_llama
def test_server_is_stopped_when_the_body_raises() -> None:
    holder: list[ManagedLlamaServer] = []

    async def scenario() -> None:
        async with ManagedLlamaServer([ALL_THREE[0]], _alone()) as server:
            holder.append(server)
            assert _port_open(server.host, server.port or 0)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(scenario())
    _assert_stopped(holder[0])


@requires_llama
def test_server_is_stopped_when_cancelled() -> None:
    holder: list[ManagedLlamaServer] = []

    async def serve_forever(started: asyncio.Event) -> None:
        async with ManagedLlamaServer([ALL_THREE[0]], _alone()) as server:
            holder.append(server)
            started.set()
            await asyncio.sleep(3600)

    async def scenario() -> None:
        started = asyncio.Event()
        task = asyncio.create_task(serve_forever(started))
        await asyncio.wait_for(started.wait(), 120)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    _assert_stopped(holder[0])


@requires_llama
def test_early_exit_fails_fast_with_the_log_tail(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"this is not a gguf file" * 100)
    log = tmp_path / "server.log"
    server = ManagedLlamaServer([("broken", str(broken))], _alone(), log_path=log, ready_timeout_s=60)

    with pytest.raises(LlamaServerError, match="exited with code") as info:
        asyncio.run(server.start())
    assert str(log) in str(info.value) and "failed to load model" in str(info.value)
    assert server.process is not None and not _group_alive(server.process.pid)


# --- a killed run must not leave its server behind -------------------------------------------

# A stand-in for ``pool.run``: serves one model, prints "PID PORT" when ready, waits to be killed.
_SERVING_PARENT = """
import asyncio, sys
from pathlib import Path
from runners.llamacpp.server import ManagedLlamaServer
from runners.llamacpp.settings import LlamaCppSettings

async def main() -> None:
    model = [("smollm2", "smollm2-135m-instruct")]
    settings = LlamaCppSettings.of(engine="llama_cpp", replicas=1)
    async with ManagedLlamaServer(model, settings, log_path=Path(sys.argv[1])) as server:
        print(server.process.pid, server.port, flush=True)
        await asyncio.sleep(3600)

asyncio.run(main())
"""

# A stand-in for a leftover server: its argv names llama_cpp.server, as the pid check demands.
_FAKE_SERVER = """
import signal, sys, time
if sys.argv[1] == "ignore-sigterm":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(120)
"""


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen[str]]]:
    """Processes a test starts; whatever is still running at the end is killed with its group."""
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _spawn(procs: list[subprocess.Popen[str]], argv: list[str], cwd: Path | None = None) -> subprocess.Popen[str]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, start_new_session=True, cwd=cwd)
    procs.append(proc)
    return proc


def _fake_server(procs: list[subprocess.Popen[str]], sigterm: str = "obey") -> subprocess.Popen[str]:
    proc = _spawn(procs, [sys.executable, "-c", _FAKE_SERVER, sigterm, SERVER_CMDLINE_MARKER])
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


def _write_record(pid_file: Path, pid: int, **extra: object) -> None:
    record = {"pid": pid, "pgid": pid, "port": 1, "started_at": "2025-01-01T00:00:00+00:00"}
    pid_file.write_text(json.dumps({**record, "cmdline_marker": SERVER_CMDLINE_MARKER, **extra}))


@requires_llama
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_server_dies_with_its_sigkilled_parent(tmp_path: Path, spawned: list[subprocess.Popen[str]]) -> None:
    log = tmp_path / "llamacpp-local.log"
    parent = _spawn(spawned, [sys.executable, "-c", _SERVING_PARENT, str(log)], cwd=REPO)
    assert parent.stdout is not None
    line = parent.stdout.readline()  # "" if the parent failed to start the server
    assert line, f"the parent printed nothing; see {log}"
    pid, port = map(int, line.split())
    pid_file = server_pid_path(log)
    try:
        assert json.loads(pid_file.read_text())["pid"] == pid
        parent.kill()
        parent.wait()
        assert eventually(lambda: not alive(pid), 10), "server outlived its parent"
        assert eventually(lambda: not _port_open("127.0.0.1", port), 10)
        assert stop_leftover_server(pid_file) is False  # a stale record: nothing left to stop
        assert not pid_file.exists()
    finally:
        if alive(pid):
            os.killpg(pid, signal.SIGKILL)


@pytest.mark.parametrize(("sigterm", "returncode"), [("obey", -signal.SIGTERM), ("ignore-sigterm", -signal.SIGKILL)])
def test_leftover_server_is_stopped(
    tmp_path: Path, spawned: list[subprocess.Popen[str]], sigterm: str, returncode: int
) -> None:
    leftover = _fake_server(spawned, sigterm)
    pid_file = tmp_path / "llamacpp-local.pid"
    _write_record(pid_file, leftover.pid)

    assert stop_leftover_server(pid_file, grace_s=0.5) is True
    assert leftover.wait(timeout=10) == returncode
    assert not pid_file.exists()


def test_a_batched_server_recorded_under_its_earlier_module_path_is_still_stopped(
    tmp_path: Path, spawned: list[subprocess.Popen[str]]
) -> None:
    """A run killed while the batched server was ``runners.llamacpp_batched_server`` resumes cleanly."""
    marker = "runners.llamacpp_batched_server"
    leftover = _spawn(spawned, [sys.executable, "-c", _FAKE_SERVER, "obey", marker])
    assert leftover.stdout is not None and leftover.stdout.readline() == "ready\n"
    pid_file = tmp_path / "llamacpp-local.pid"
    _write_record(pid_file, leftover.pid, cmdline_marker=marker)
    assert stop_leftover_server(pid_file, grace_s=0.5) is True
    assert leftover.wait(timeout=10) == -signal.SIGTERM


def test_a_pid_reused_by_another_process_is_not_signalled(tmp_path: Path, spawned: list[subprocess.Popen[str]]) -> None:
    unrelated = _spawn(spawned, ["sleep", "60"])
    other_server = _fake_server(spawned)  # another run's server: same marker, other config
    pid_file = tmp_path / "llamacpp-local.pid"
    for proc, extra in ((unrelated, {}), (other_server, {"config_file": "/gone/config.json"})):
        _write_record(pid_file, proc.pid, **extra)
        assert stop_leftover_server(pid_file, grace_s=0.5) is False
        assert not pid_file.exists()
    time.sleep(0.3)
    assert unrelated.poll() is None and other_server.poll() is None


def test_missing_or_torn_pid_file_stops_nothing(tmp_path: Path) -> None:
    pid_file = tmp_path / "llamacpp-local.pid"
    assert stop_leftover_server(pid_file) is False
    pid_file.write_text('{"pid": ')
    assert stop_leftover_server(pid_file) is False and not pid_file.exists()


@requires_llama
def test_start_stops_the_leftover_of_its_log_and_records_its_own_server(
    tmp_path: Path, spawned: list[subprocess.Popen[str]]
) -> None:
    log = tmp_path / "llamacpp-local.log"
    leftover = _fake_server(spawned)
    _write_record(server_pid_path(log), leftover.pid)

    async def scenario() -> ManagedLlamaServer:
        async with ManagedLlamaServer([ALL_THREE[0]], _alone(), log_path=log) as server:
            assert leftover.poll() == -signal.SIGTERM
            assert server.process is not None and server.pid_path == server_pid_path(log)
            record = json.loads(server_pid_path(log).read_text())
            assert (record["pid"], record["pgid"], record["port"]) == (
                server.process.pid,
                server.process.pid,
                server.port,
            )
            assert record["cmdline_marker"] == ENGINE_MODULES["llama_cpp"]
            assert record["started_at"]
        return server

    server = asyncio.run(scenario())
    _assert_stopped(server)
    assert not server_pid_path(log).exists()
