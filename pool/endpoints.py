"""Bring a plan's backends up: runners for remote endpoints, the managed llama.cpp server for local ones.

The managed server is started only when the run has pending work on it, and it is always stopped
on exit, on error and on Ctrl-C (``ManagedLlamaServer`` is an async context manager). Its URL is a
fresh loopback port every run, so answers from it are cached under the model file's sha256
instead of the URL: ``llamacpp://<sha256>/<chat_format>``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pool.config import LlamaCppBackend, Model, PoolConfig
from pool.scheduler import Lane
from runners.base import Runner
from runners.gguf_models import MODELS, verified_sha256
from runners.registry import make_runner


@dataclass
class BackendEndpoint:
    """A live backend: its lane (runner + limits) and each model's cache identity on it."""

    name: str
    type: str
    lane: Lane
    identities: dict[str, str] = field(default_factory=dict)  # model name -> endpoint identity
    server_log: Path | None = None


def local_model_identity(model: Model) -> str:
    """Stable cache identity of a llama.cpp-served model: its weights and chat template choice."""
    assert model.gguf is not None
    spec = MODELS.get(model.gguf)
    digest = spec.sha256 if spec else verified_sha256(Path(model.gguf).expanduser())
    return f"llamacpp://{digest}/{model.chat_format or 'gguf-template'}"


def _runner(config: PoolConfig, backend_name: str, base_url: str) -> Runner:
    backend = config.backends[backend_name]
    return make_runner(
        backend.type, base_url,
        api_key_env=getattr(backend, "api_key_env", None),
        timeout_s=backend.timeout_s, max_retries=backend.max_retries,
        max_response_bytes=backend.max_response_bytes, max_answer_chars=backend.max_answer_chars,
    )


@asynccontextmanager
async def open_backends(config: PoolConfig, models: Iterable[Model], run_dir: Path) -> AsyncIterator[dict[str, BackendEndpoint]]:
    """Yield a live :class:`BackendEndpoint` per backend the given models use; tear all down after."""
    by_backend: dict[str, list[Model]] = {}
    for model in models:  # the judge may also be a pool model: serve and identify it once
        if all(m.name != model.name for m in by_backend.get(model.backend, [])):
            by_backend.setdefault(model.backend, []).append(model)
    async with AsyncExitStack() as stack:
        endpoints: dict[str, BackendEndpoint] = {}
        for name, backend_models in by_backend.items():
            backend = config.backends[name]
            server_log = None
            if isinstance(backend, LlamaCppBackend):
                from runners.llamacpp_server import ManagedLlamaServer, ServedModel

                served = list({
                    m.model: ServedModel(m.model, m.gguf or "", {"chat_format": m.chat_format} if m.chat_format else {})
                    for m in backend_models
                }.values())
                server_log = run_dir / f"llamacpp-{name}.log"
                server = ManagedLlamaServer(served, n_ctx=backend.n_ctx, n_threads=backend.n_threads or 2, log_path=server_log)
                await stack.enter_async_context(server)
                base_url = server.base_url
                identities = {m.name: local_model_identity(m) for m in backend_models}
            else:
                base_url = str(backend.base_url)
                identities = {m.name: base_url for m in backend_models}
            runner = _runner(config, name, base_url)
            stack.push_async_callback(runner.aclose)
            lane = Lane(name, runner, backend.max_concurrency, backend.requests_per_minute)
            endpoints[name] = BackendEndpoint(name, backend.type, lane, identities, server_log)
        yield endpoints
