"""A llama.cpp OpenAI-compatible server that the orchestrator starts, owns and always stops.

``python -m llama_cpp.server --config_file CONFIG.json`` serves several GGUF models under
``/v1/chat/completions`` and ``/v1/completions``. :class:`ManagedLlamaServer` writes that config,
starts the server in its own process group on a free loopback port, waits until ``/v1/models``
lists every alias, and on exit (normal, error, cancellation, Ctrl-C) sends SIGTERM to the group,
then SIGKILL after a grace period, so no server outlives the run.

A run killed with SIGKILL runs none of that, so two more guards exist. On Linux the kernel kills
the server when the process that started it dies (``PR_SET_PDEATHSIG``). Everywhere, the server's
pid is recorded in ``<log stem>.pid`` next to its log, and the next start with the same log path
(a ``--resume``) stops a server still listed there: :func:`stop_leftover_server`.

Two engines run the same way (config file, process group, pid file, readiness): ``llama_cpp``
(``python -m runners.llamacpp.single_server``: llama-cpp-python's server whose models also return
bounded token logprobs) and ``batched`` (``python -m runners.llamacpp.batched_server``, see
:mod:`runners.llamacpp.batching`), which keeps every model loaded and decodes ``slots`` requests per
model in one step. Which one runs, and with what context, threads and slots, is the backend's
:class:`~runners.llamacpp.settings.LlamaCppSettings`, taken whole. The facts below are ``llama_cpp``'s.

Facts a scheduler must respect (llama-cpp-python 0.3.x):

* **One request at a time.** The app serialises every call behind a lock; concurrency 1 is the
  honest setting, more only queues inside the server.
* **One model in memory at a time.** A request for another alias unloads the current model and
  loads the new one (mmap'd, well under a second for these sizes); group requests by model.
* ``gemma3-270m`` is a *base* model: use ``/v1/completions`` with stop sequences. The chat models
  use the chat template stored in their GGUF (``chat_format`` left unset).
* ``logits_all`` defaults to true in the server; we turn it off because it allocates
  ``n_ctx × n_vocab`` floats (1.2 GB for Qwen's 152k vocabulary). Token logprobs (a judge weighing
  its scores) come instead from the one row each sampled token is drawn from: the engine runs
  llama-cpp-python's server through :mod:`runners.llamacpp.single_server`, which reads them there.

Timing: responses carry OpenAI ``usage`` (prompt/completion/total tokens) but **no timing**.
With ``verbose`` on (our default) llama.cpp resets its perf counters at the start of each
generation and prints them at the end, to the server log::

    llama_perf_context_print: prompt eval time =      41.93 ms /    31 tokens (...)
    llama_perf_context_print:        eval time =     251.04 ms /    15 runs   (...)
    llama_perf_context_print:       total time =     296.20 ms /    46 tokens

Because the server is single-slot, the n-th block after a log offset belongs to the n-th request
sent after that offset; :func:`parse_server_timings` and :meth:`ManagedLlamaServer.timings_since`
read them. ``ServerTiming.total_s`` is the server's own time for the request: prompt eval plus
decode, *excluding* a model (re)load after an alias switch and HTTP/JSON overhead. The prompt
count is only the tokens actually evaluated: a prefix shared with the previous request of the
same model is reused from the KV cache. The first request after a model load can be several
times slower (weights paged in from the mmap'd file): benchmarks should send one warm-up request.
"""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypedDict

import aiohttp

from runners.base import Mode
from runners.llamacpp.engines import ENGINE_MODULES, SERVER_CMDLINE_MARKER, SERVER_MARKERS
from runners.llamacpp.exit import crash_advice, describe_exit
from runners.llamacpp.gguf_models import MODELS, model_path
from runners.llamacpp.settings import LlamaCppSettings

LLAMA_INSTALL_HINT = "scripts/install.sh local  (it builds llama-cpp-python[server] for this CPU)"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

logger = logging.getLogger(__name__)


class LlamaServerError(RuntimeError):
    """The managed server could not be started or did not become ready."""


class ServerDied(LlamaServerError):
    """A managed server exited while the run still needed it (a crash, an OOM kill, a signal)."""


@dataclass(frozen=True)
class ServedModel:
    """One model under an alias: ``model`` is a key of :data:`MODELS` or a path to a GGUF file.

    ``options`` are extra llama-cpp-python ``ModelSettings`` fields (``n_ctx``, ``chat_format``...);
    they override what the manager sets. The batched engine takes none: it refuses to start and names them.
    """

    alias: str
    model: str
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def mode(self) -> Mode:
        """Which endpoint suits the model: registry models know; a bare path is taken as chat."""
        spec = MODELS.get(self.model)
        return spec.mode if spec else "chat"


@dataclass(frozen=True)
class ServerTiming:
    """One generation as llama.cpp measured it (``llama_perf_context_print``)."""

    prompt_eval_ms: float
    prompt_tokens: int  # tokens actually evaluated (a cached prefix is not counted)
    eval_ms: float
    eval_runs: int  # decode steps (about the number of completion tokens)
    total_ms: float

    @property
    def total_s(self) -> float:
        return self.total_ms / 1000.0

    @property
    def eval_tokens_per_s(self) -> float | None:
        return self.eval_runs / (self.eval_ms / 1000.0) if self.eval_ms > 0 else None


_PERF = re.compile(
    r"llama_perf_context_print:\s+(?P<what>prompt eval|eval|total) time =\s*(?P<ms>[\d.]+) ms"
    r"(?: /\s*(?P<n>\d+) (?:tokens|runs))?"
)


def parse_server_timings(log_text: str) -> list[ServerTiming]:
    """Per-request timings from a llama.cpp server log, in order (a block ends at ``total time``)."""
    timings: list[ServerTiming] = []
    block: dict[str, tuple[float, int]] = {}
    for match in _PERF.finditer(log_text):
        block[match["what"]] = (float(match["ms"]), int(match["n"] or 0))
        if match["what"] == "total":
            prompt = block.get("prompt eval", (0.0, 0))
            decode = block.get("eval", (0.0, 0))
            timings.append(ServerTiming(prompt[0], prompt[1], decode[0], decode[1], block["total"][0]))
            block = {}
    return timings


def llama_cpp_model_fields(settings: LlamaCppSettings) -> dict[str, Any]:
    """The settings as the llama-cpp-python ``ModelSettings`` fields of each model, plus what the
    manager always sets (CPU only, no logits kept, timings logged)."""
    return {
        "n_ctx": settings.n_ctx,
        "n_threads": settings.threads,
        "n_threads_batch": settings.threads,
        "n_gpu_layers": 0,
        "logits_all": False,
        "verbose": True,  # per-request timings go to the log
    }


def free_loopback_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports the kernel just reported free (all held open at once, so no repeats);
    whoever asked binds them a moment later."""
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)]
        for sock in socks:
            sock.bind((host, 0))
        return [int(sock.getsockname()[1]) for sock in socks]


def free_loopback_port(host: str = "127.0.0.1") -> int:
    """One port the kernel just reported free."""
    return free_loopback_ports(1, host)[0]


DEFAULT_LABEL = "the managed llama.cpp server"  # who a server is in messages, unless its backend is named
ModelSpec = ServedModel | tuple[str, str] | tuple[str, str, Mapping[str, Any]]


class ServerOptions(TypedDict, total=False):
    """The keywords :class:`~runners.llamacpp.replicas.ManagedLlamaReplicas` hands every replica
    unchanged, so their defaults are written once, in :class:`ManagedLlamaServer`'s signature."""

    host: str
    cache_dir: str | os.PathLike[str] | None
    ready_timeout_s: float
    stop_timeout_s: float


class ManagedLifetime:
    """What a single server and a group of replicas share: ``async with`` starts it and always stops it
    (normal exit, error, cancellation, Ctrl-C). :meth:`abandon` runs first when the block ended by an
    exception; a group overrides it to kill what a polite stop would wait for."""

    async def start(self) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        raise NotImplementedError

    def abandon(self) -> None:
        """Before :meth:`stop`, when the ``async with`` block ended by an exception: nothing by default."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None:
            self.abandon()
        await self.stop()


class ManagedLlamaServer(ManagedLifetime):
    """``async with ManagedLlamaServer([...], settings) as server:`` then call ``server.base_url``.

    ``settings`` (a backend's block, or ``LlamaCppSettings.of(...)``) says which engine runs and how;
    its ``replicas`` are :class:`~runners.llamacpp.replicas.ManagedLlamaReplicas`' business. Pass
    ``log_path`` to keep the server log (and its timings) after exit; otherwise it lives in a temp dir
    that is removed on a clean stop and kept when start fails.
    """

    def __init__(
        self,
        models: Iterable[ModelSpec],
        settings: LlamaCppSettings,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        log_path: str | os.PathLike[str] | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        ready_timeout_s: float = 120.0,
        stop_timeout_s: float = 10.0,
        label: str = DEFAULT_LABEL,
    ) -> None:
        self.settings = settings
        self.models = [m if isinstance(m, ServedModel) else ServedModel(*m) for m in models]
        if not self.models:
            raise ValueError("ManagedLlamaServer needs at least one model")
        aliases = [m.alias for m in self.models]
        if len(set(aliases)) != len(aliases):
            raise ValueError(f"duplicate model aliases: {aliases}")
        self.host = host
        self.port = port
        self.cache_dir = cache_dir
        self.ready_timeout_s = ready_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self._user_log = Path(log_path) if log_path is not None else None
        self._workdir: Path | None = None
        self.log_path: Path | None = None
        self.config_path: Path | None = None
        self.pid_path: Path | None = None
        self.process: asyncio.subprocess.Process | None = None
        self.label = label  # who this server is in messages, e.g. "backend 'local'"
        self._ready = False
        self._stopping = False

    @property
    def base_url(self) -> str:
        """OpenAI-style base URL, e.g. ``http://127.0.0.1:PORT/v1``."""
        if self.port is None:
            raise RuntimeError("server not started")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def modes(self) -> dict[str, Mode]:
        return {m.alias: m.mode for m in self.models}

    async def start(self) -> None:
        """Write the config, spawn the server, wait until every alias is listed."""
        if self.process is not None:
            raise RuntimeError("server already started")
        _require_llama_cpp()
        if self._user_log is not None:  # a resumed run: its killed predecessor's server may live on
            await asyncio.to_thread(stop_leftover_server, server_pid_path(self._user_log))
        if self.port is None:
            self.port = free_loopback_port(self.host)
        config = self.server_config()  # models are located and verified before anything starts
        self._workdir = Path(tempfile.mkdtemp(prefix="medpool-llama-"))
        self.log_path = self._user_log or self._workdir / "server.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.config_path = self._workdir / "config.json"
        self.config_path.write_text(json.dumps(config, indent=1))
        self.pid_path = server_pid_path(self.log_path)
        module = ENGINE_MODULES[self.settings.engine]
        try:
            with open(self.log_path, "ab") as log:  # noqa: ASYNC230 (local file, instant)
                self.process = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    module,
                    "--config_file",
                    str(self.config_path),
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=log,
                    stderr=asyncio.subprocess.STDOUT,
                    start_new_session=True,  # own process group: one killpg reaches everything
                    preexec_fn=_die_with_parent_hook(),
                    # faulthandler: a crash leaves the Python stack in the log, not a log that just stops
                    env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"},
                )
            _LIVE_GROUPS.add(self.process.pid)
            _write_pid_file(self.pid_path, self.process.pid, self.port, self.config_path, module)
            await self._wait_ready()
            self._ready = True
        except BaseException:
            await self.stop()
            raise

    def server_config(self) -> dict[str, Any]:
        """The config file the engine reads: ``host``, ``port`` and one entry per alias.

        llama-cpp-python's server reads its ``ConfigFileSettings``: the settings go into every entry
        as ``ModelSettings`` fields. The batched server takes the settings whole (``settings``, see
        :meth:`LlamaCppSettings.to_json`), and entries that only name a model.
        """
        batched = self.settings.engine == "batched"
        entries = []
        for served in self.models:
            spec = MODELS.get(served.model)
            path = model_path(served.model, self.cache_dir) if spec else Path(served.model)
            if not path.is_file():
                raise LlamaServerError(f"model {served.alias!r}: {path} is neither a known key nor a file")
            entry: dict[str, Any] = {"model": str(path), "model_alias": served.alias}
            if not batched:
                entry.update(llama_cpp_model_fields(self.settings))
            if spec and spec.chat_format:
                entry["chat_format"] = spec.chat_format
            entries.append({**entry, **served.options})
        config: dict[str, Any] = {"host": self.host, "port": self.port, "models": entries}
        if batched:
            config["settings"] = self.settings.to_json()
        return config

    async def _wait_ready(self) -> None:
        assert self.process is not None
        wanted = {m.alias for m in self.models}
        deadline = time.monotonic() + self.ready_timeout_s
        delay = 0.1
        timeout = aiohttp.ClientTimeout(total=5)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while True:
                if self.process.returncode is not None:
                    raise LlamaServerError(self.exit_message("before it was ready"))
                try:
                    async with session.get(f"{self.base_url}/models") as resp:
                        if resp.status == 200:
                            listed = {m.get("id") for m in (await resp.json()).get("data", [])}
                            if wanted <= listed:
                                return
                            raise LlamaServerError(f"server lists {sorted(listed)}, expected {sorted(wanted)}")
                except (TimeoutError, aiohttp.ClientError, ValueError):
                    pass  # not listening yet
                if time.monotonic() > deadline:
                    raise LlamaServerError(
                        f"{self.label}: llama.cpp server not ready after {self.ready_timeout_s:.0f}s; "
                        f"its log {self.log_path} ends:\n{_indented(self.log_tail())}"
                    )
                await asyncio.sleep(delay)
                delay = min(delay * 1.5, 1.0)

    def exit_message(self, when: str) -> str:
        """The server's exit, its log's last lines and what to do, for a person."""
        code = self.process.returncode if self.process is not None else None
        how = describe_exit(code) if code is not None else "stopped"
        advice = crash_advice(code)
        return (
            f"{self.label}: llama.cpp server {how} {when}; its log {self.log_path} ends:\n"
            f"{_indented(self.log_tail())}" + (f"\n  {advice}" if advice else "")
        )

    def death(self) -> ServerDied | None:
        """The error to raise when the server, once ready, exited without being stopped; else None."""
        proc = self.process
        if proc is None or not self._ready or self._stopping or proc.returncode is None:
            return None
        return ServerDied(self.exit_message("while the run needed it"))

    async def wait_death(self, grace_s: float) -> ServerDied | None:
        """Like :meth:`death`, first giving a server whose socket just closed ``grace_s`` to be
        reaped (a crash closes the connection before the exit status is collected)."""
        proc = self.process
        if proc is not None and self._ready and not self._stopping and proc.returncode is None:
            try:
                await asyncio.wait_for(asyncio.shield(proc.wait()), grace_s)
            except TimeoutError:
                return None  # alive: the failure was the call's own
        return self.death()

    async def stop(self) -> None:
        """SIGTERM the process group, SIGKILL after ``stop_timeout_s``; safe to call twice."""
        self._stopping = True
        proc = self.process
        try:
            if proc is not None and proc.returncode is None:
                _signal_group(proc.pid, signal.SIGTERM)
                try:
                    await asyncio.wait_for(proc.wait(), self.stop_timeout_s)
                except TimeoutError:
                    _signal_group(proc.pid, signal.SIGKILL)
                    await proc.wait()
                except asyncio.CancelledError:
                    _signal_group(proc.pid, signal.SIGKILL)  # no time left to be polite
                    raise
            if proc is not None:
                _signal_group(proc.pid, signal.SIGKILL)  # stragglers in the group, if any
        finally:
            if proc is not None:
                _LIVE_GROUPS.discard(proc.pid)
                if self.pid_path is not None:
                    self.pid_path.unlink(missing_ok=True)
            # The work dir holds the config and, unless log_path was given, the log: keep it only
            # when start failed, so the log named in the error message still exists.
            if self._workdir is not None and (self._ready or self._user_log is not None):
                shutil.rmtree(self._workdir, ignore_errors=True)

    def kill(self) -> None:
        """SIGKILL the server's process group now, without waiting (when there is no time to stop)."""
        self._stopping = True  # its exit is ours, not a death to report
        if self.process is not None and self.process.returncode is None:
            _signal_group(self.process.pid, signal.SIGKILL)

    def log_offset(self) -> int:
        """Current size of the server log; pass it to :meth:`timings_since` after some requests."""
        return self.log_path.stat().st_size if self.log_path and self.log_path.exists() else 0

    def timings_since(self, offset: int = 0) -> list[ServerTiming]:
        """Timings of the requests completed since ``offset``, oldest first."""
        if self.log_path is None:
            return []
        with open(self.log_path, "rb") as log:
            log.seek(offset)
            return parse_server_timings(log.read().decode("utf-8", "replace"))

    def log_tail(self, lines: int = 30) -> str:
        if self.log_path is None or not self.log_path.exists():
            return "(no log)"
        with open(self.log_path, "rb") as log:
            log.seek(max(0, self.log_path.stat().st_size - 16384))
            text = log.read().decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])


def _indented(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.splitlines()) or "    (empty)"


def _require_llama_cpp() -> None:
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        raise LlamaServerError(f"llama_cpp is not installed: {LLAMA_INSTALL_HINT}")


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _die_with_parent_hook() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking Linux to SIGKILL the server when its parent dies, even by SIGKILL.

    The kernel sends the signal when the *thread* that forked exits, not the process. ``start``
    forks from the event-loop thread, which in ``pool.run`` is the main thread (``asyncio.run``),
    so the two coincide; a loop in a short-lived worker thread would take the server down with it.
    None (no guard, the pid file remains) where libc has no ``prctl``.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child only calls
    except (OSError, AttributeError):
        return None
    parent, sigkill = os.getpid(), int(signal.SIGKILL)

    def arm() -> None:  # in the child, between fork and exec; the setting survives exec
        prctl(_PR_SET_PDEATHSIG, sigkill)
        if os.getppid() != parent:  # the parent died before prctl: nobody would kill us
            os._exit(1)

    return arm


def server_pid_path(log_path: Path) -> Path:
    """Where a server's pid is recorded: next to its log, so a resumed run finds it."""
    return log_path.with_suffix(".pid")


def _write_pid_file(path: Path, pid: int, port: int, config_path: Path, marker: str = SERVER_CMDLINE_MARKER) -> None:
    record = {
        "pid": pid,
        "pgid": pid,  # start_new_session: the server leads its own group
        "port": port,
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "cmdline_marker": marker,
        "config_file": str(config_path),
    }
    partial = path.with_suffix(".pid.partial")
    partial.write_text(json.dumps(record))
    partial.replace(path)  # a reader never sees half a record


def stop_leftover_server(pid_file: Path, grace_s: float = 5.0) -> bool:
    """Stop the server a killed run recorded in ``pid_file``; True if one was still running.

    The pid is trusted only while its command line names the engine's server module, e.g.
    ``llama_cpp.server`` (and the recorded
    config file), so a process that has since reused the pid is never signalled. SIGTERM first,
    SIGKILL after ``grace_s``. The pid file is removed either way.
    """
    record = _read_pid_file(pid_file)
    stopped = False
    if record is not None and _is_recorded_server(record):
        logger.warning("stopping leftover llama.cpp server %s from %s", record, pid_file)
        _signal_server(record["pid"], signal.SIGTERM)
        if not _wait_gone(record, grace_s):
            _signal_server(record["pid"], signal.SIGKILL)
            _wait_gone(record, 5.0)
        stopped = True
    pid_file.unlink(missing_ok=True)
    return stopped


def _read_pid_file(pid_file: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(pid_file.read_text())
    except (OSError, ValueError):
        return None  # absent, or torn beyond use: nothing we can safely signal
    ok = isinstance(record, dict) and isinstance(record.get("pid"), int)
    return record if ok and record["pid"] > 0 else None


def _is_recorded_server(record: Mapping[str, Any]) -> bool:
    cmdline = _process_cmdline(record["pid"])
    config = record.get("config_file")
    marker = record.get("cmdline_marker")
    marker = marker if marker in SERVER_MARKERS else SERVER_CMDLINE_MARKER  # only a server of ours
    return cmdline is not None and marker in cmdline and (not isinstance(config, str) or config in cmdline)


def _process_cmdline(pid: int) -> str | None:
    """The process's argv joined by spaces; None if it is gone ("" for a zombie on Linux)."""
    try:
        if Path("/proc/self").is_dir():
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
            return raw.replace(b"\0", b" ").decode("utf-8", "replace")
        ps = subprocess.run(  # macOS and the BSDs have no /proc
            ["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True
        )
    except OSError:
        return None
    return ps.stdout.strip() or None


def _signal_server(pid: int, sig: signal.Signals) -> None:
    """Its group when it leads one (as our servers do), else the pid alone; never our own group."""
    try:
        if os.getpgid(pid) == pid != os.getpgrp():
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_gone(record: Mapping[str, Any], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while _is_recorded_server(record):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


# Last line of defence: if the interpreter exits without running __aexit__ (e.g. a second Ctrl-C
# inside asyncio.run's shutdown), kill every server group we started and have not reaped.
_LIVE_GROUPS: set[int] = set()


@atexit.register
def _kill_leftover_servers() -> None:
    for pgid in list(_LIVE_GROUPS):
        _signal_group(pgid, signal.SIGKILL)
