"""Bring a plan's backends up: runners for remote endpoints, the managed llama.cpp server for local ones.

The managed servers are started only when the run has pending work on them, and they are always
stopped on exit, on error and on Ctrl-C (``ManagedLlamaReplicas`` is an async context manager). A
llamacpp backend runs ``replicas`` identical servers behind one lane whose runner sends each request
to the least busy one. Their URLs are fresh loopback ports every run, so answers are cached under
the model file's sha256 instead of a URL: ``llamacpp://<sha256>/<chat_format>``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pool.config import LlamaCppBackend, Model, PoolConfig
from pool.execute.executor import Lane
from runners.base import Runner
from runners.llamacpp.gguf_models import MODELS, verified_sha256
from runners.registry import make_runner

if TYPE_CHECKING:  # the llama.cpp modules load only when a managed backend is started
    from runners.llamacpp.replicas import ManagedLlamaReplicas


@dataclass
class BackendEndpoint:
    """A live backend: its lane (runner + limits) and each model's cache identity on it."""

    name: str
    type: str
    lane: Lane | None  # None when the lane lives in another process (the Ray executor)
    identities: dict[str, str] = field(default_factory=dict)  # model name -> endpoint identity
    server_log: Path | None = None  # the managed server's log (the first replica's)
    server_logs: list[Path] = field(default_factory=list)  # every replica's log, in replica order


def local_model_identity(model: Model) -> str:
    """Stable cache identity of a llama.cpp-served model: its weights and chat template choice."""
    assert model.gguf is not None
    spec = MODELS.get(model.gguf)
    digest = spec.sha256 if spec else verified_sha256(Path(model.gguf).expanduser())
    return f"llamacpp://{digest}/{model.chat_format or 'gguf-template'}"


def _runner(config: PoolConfig, backend_name: str, base_url: str) -> Runner:
    backend = config.backends[backend_name]
    return make_runner(
        backend.type,
        base_url,
        api_key_env=getattr(backend, "api_key_env", None),
        timeout_s=backend.timeout_s,
        max_retries=backend.max_retries,
        max_response_bytes=backend.max_response_bytes,
        max_answer_chars=backend.max_answer_chars,
        options=backend.runner_options(),
    )


def managed_replicas(config: PoolConfig, name: str, models: Iterable[Model], log_path: Path) -> ManagedLlamaReplicas:
    """The llama.cpp replicas of backend ``name`` serving ``models``, sized as the pool file says (not started).

    pool.run and the router (:mod:`pool.serve`) both start managed servers through this, so a model
    is served the same way wherever its answers are measured or used.
    """
    from runners.llamacpp.replicas import ManagedLlamaReplicas
    from runners.llamacpp.server import ServedModel

    backend = config.backends[name]
    assert isinstance(backend, LlamaCppBackend)
    served = list(
        {
            m.model: ServedModel(m.model, m.gguf or "", {"chat_format": m.chat_format} if m.chat_format else {})
            for m in models
        }.values()
    )
    return ManagedLlamaReplicas(served, backend, log_path=log_path, label=f"backend '{name}'")


async def _serve_llamacpp(
    stack: AsyncExitStack, config: PoolConfig, name: str, models: list[Model], run_dir: Path
) -> tuple[Runner, list[Path]]:
    """Start the backend's llama.cpp replicas (stopped with ``stack``); one balanced runner over them.

    One replica logs to ``llamacpp-<backend>.log``, several to ``llamacpp-<backend>-r<i>.log``.
    """
    from runners.balanced import BalancedRunner
    from runners.llamacpp.watch import ServerWatchRunner

    replicas = managed_replicas(config, name, models, run_dir / f"llamacpp-{name}.log")
    await stack.enter_async_context(replicas)
    # A dead server stops the run with its cause instead of failing its models' units one by one.
    runner = ServerWatchRunner(BalancedRunner([_runner(config, name, url) for url in replicas.base_urls]), replicas)
    return runner, replicas.log_paths


def models_by_backend(models: Iterable[Model]) -> dict[str, list[Model]]:
    """The given models grouped by backend, each once (the judge may also be a pool model)."""
    by_backend: dict[str, list[Model]] = {}
    for model in models:
        if all(m.name != model.name for m in by_backend.get(model.backend, [])):
            by_backend.setdefault(model.backend, []).append(model)
    return by_backend


def endpoint_identities(config: PoolConfig, backend_name: str, models: Iterable[Model]) -> dict[str, str]:
    """Each model's cache identity on its backend: the URL, or the weights for llama.cpp (same
    weights on every replica and every host: one identity)."""
    backend = config.backends[backend_name]
    if isinstance(backend, LlamaCppBackend):
        return {m.name: local_model_identity(m) for m in models}
    return {m.name: str(backend.base_url) for m in models}


@asynccontextmanager
async def open_backends(
    config: PoolConfig, models: Iterable[Model], run_dir: Path
) -> AsyncIterator[dict[str, BackendEndpoint]]:
    """Yield a live :class:`BackendEndpoint` per backend the given models use; tear all down after."""
    async with AsyncExitStack() as stack:
        endpoints: dict[str, BackendEndpoint] = {}
        for name, backend_models in models_by_backend(models).items():
            backend = config.backends[name]
            server_logs: list[Path] = []
            if isinstance(backend, LlamaCppBackend):
                runner, server_logs = await _serve_llamacpp(stack, config, name, backend_models, run_dir)
            else:
                runner = _runner(config, name, str(backend.base_url))
            stack.push_async_callback(runner.aclose)
            lane = Lane(name, runner, backend.max_concurrency, backend.requests_per_minute)
            endpoints[name] = BackendEndpoint(
                name,
                backend.type,
                lane,
                endpoint_identities(config, name, backend_models),
                server_logs[0] if server_logs else None,
                server_logs,
            )
        yield endpoints
