"""The managed llama.cpp servers the router starts for its manifest's local models, as pool.run starts them.

A pool's ``llamacpp`` backend has no URL of its own: pool.run starts its servers for a run and stops
them after, so a manifest built from the shipped pool names models nothing else serves. The router
does what pool.run does for the chat models its manifest can route to: it checks their model files
with pool.run's preflight, starts each backend's replicas on fresh loopback ports with the pool
file's engine, slots, replicas, threads and context (:func:`pool.execute.endpoints.managed_replicas`),
and stops them when it stops (SIGTERM, then SIGKILL; they also die with it, by the parent-death
signal). Their logs are ``RUN_DIR/router-llamacpp-<backend>.log`` with the pid beside them: names of
their own, so a router and a ``pool.run --resume`` of the same run never stop each other's servers.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from pool.config import LlamaCppBackend, Model, PoolConfig
from pool.config.preflight import preflight
from pool.execute.endpoints import managed_replicas, models_by_backend
from pool.serve.state import pool_model
from routing.serve.routes import route_table

LOG_PREFIX = "router-llamacpp-"  # RUN_DIR/router-llamacpp-<backend>.log


def managed_models(pool: PoolConfig, manifest: Mapping[str, Any]) -> dict[str, list[Model]]:
    """The chat models on managed llama.cpp backends that the manifest routes to, by backend."""
    wanted = []
    for label in sorted(route_table(manifest).models()):
        model = pool_model(pool, manifest, label)
        if model is not None and model.mode == "chat" and isinstance(pool.backend_of(model), LlamaCppBackend):
            wanted.append(model)
    return models_by_backend(wanted)


async def start_managed(
    stack: AsyncExitStack, pool: PoolConfig, pool_file: Path, manifest: Mapping[str, Any], log_dir: Path
) -> dict[str, tuple[str, ...]]:
    """Start the managed backends the manifest needs (stopped with ``stack``); their base URLs by backend.

    Raises :class:`pool.config.preflight.PreflightError` for a missing or damaged model file, and
    :class:`runners.llamacpp.server.LlamaServerError` for a server that does not start (its log named).
    """
    needed = managed_models(pool, manifest)
    if not needed:
        return {}
    preflight(pool, pool_file, [m for models in needed.values() for m in models])
    urls: dict[str, tuple[str, ...]] = {}
    for name, models in needed.items():
        replicas = managed_replicas(pool, name, models, log_dir / f"{LOG_PREFIX}{name}.log")
        print(
            f"routing.serve: starting managed llama.cpp backend {name!r} for {', '.join(m.name for m in models)} "
            f"(log {log_dir / (LOG_PREFIX + name)}.log)",
            flush=True,
        )
        await stack.enter_async_context(replicas)
        urls[name] = tuple(replicas.base_urls)
    return urls
