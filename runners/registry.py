"""Backend type name → runner: the one place a pool entry's ``type`` becomes a protocol.

Each protocol module declares the type names it serves on its runner class, ``@backend("openai",
"llamacpp")`` (``llamacpp`` is served by the OpenAI-compatible runner because the managed llama.cpp
server speaks that protocol; starting and stopping that server is someone else's job). A new
protocol is one module with a decorated runner, named in :data:`PROTOCOL_MODULES`. The modules (and
aiohttp) are imported only when a runner is made or the types are listed.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from runners.base import DEFAULT_MAX_ANSWER_CHARS, DEFAULT_MAX_RESPONSE_BYTES, Runner

if TYPE_CHECKING:
    from runners.retry import Sleep

# The modules whose runners register themselves with @backend.
PROTOCOL_MODULES: tuple[str, ...] = ("runners.openai_compat", "runners.ollama")

R = TypeVar("R", bound=type)
_BACKENDS: dict[str, type] = {}


def backend(*type_names: str) -> Callable[[R], R]:
    """Class decorator: the runner serves these pool backend types. A type served twice is an
    error (which runner a pool got would depend on import order)."""

    def decorate(runner_class: R) -> R:
        for name in type_names:
            if name in _BACKENDS and _BACKENDS[name] is not runner_class:
                raise ValueError(f"backend type {name!r} is already served by {_BACKENDS[name].__qualname__}")
            _BACKENDS[name] = runner_class
        return runner_class

    return decorate


def _registered() -> dict[str, type]:
    for module in PROTOCOL_MODULES:
        importlib.import_module(module)
    return _BACKENDS


def runner_class(backend_type: str) -> type | None:
    """The runner class serving ``backend_type`` (its ``default_*`` attributes are the backend's
    defaults), or None for an unknown type."""
    return _registered().get(backend_type)


def backend_types() -> tuple[str, ...]:
    """Every backend type a pool file may name, sorted (import order must not show)."""
    return tuple(sorted(_registered()))


def make_runner(
    backend_type: str,
    base_url: str,
    *,
    api_key_env: str | None = None,
    timeout_s: float | None = None,
    max_retries: int = 3,
    backoff_base_s: float = 1.0,
    backoff_max_s: float = 30.0,
    retry_after_cap_s: float = 60.0,
    sleep: Sleep = asyncio.sleep,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
) -> Runner:
    """A runner for one endpoint; raises ValueError for an unknown backend type.

    ``max_response_bytes`` caps the body after decompression and ``max_answer_chars`` the answer
    text; past either the call is an ``"oversize"`` infra error, never retried. ``timeout_s``
    None is the runner's own ``default_timeout_s``.
    """
    from runners.retry import RetryPolicy

    runner_class = _registered().get(backend_type)
    if runner_class is None:
        raise ValueError(f"unknown backend type {backend_type!r}; expected one of {', '.join(backend_types())}")
    policy = RetryPolicy(max_retries=max_retries, backoff_base_s=backoff_base_s,
                         backoff_max_s=backoff_max_s, retry_after_cap_s=retry_after_cap_s)
    runner: Runner = runner_class(base_url, api_key_env=api_key_env, timeout_s=timeout_s, policy=policy, sleep=sleep,
                                  max_response_bytes=max_response_bytes, max_answer_chars=max_answer_chars)
    return runner
