"""Backend type name → runner and settings block: the one place a pool entry's ``type`` is declared.

Each module of :mod:`runners.protocols` declares the types it serves on its runner class,
``@backend("openai", settings=OpenAISettings)``, with the pydantic block of that type's pool-file
settings (fields, defaults, validation; see :mod:`runners.settings`). ``llamacpp`` is served by the
OpenAI-compatible runner because the managed llama.cpp server speaks that protocol (starting and
stopping the server is someone else's job). A new type is one new module in ``runners/protocols/``:
the modules there are discovered, and the pool schema builds its ``backends:`` union from
:func:`settings_classes`. The modules (and aiohttp) are imported only when a runner is made or the
types are listed.
"""

from __future__ import annotations

import asyncio
import importlib
import pkgutil
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from runners.base import DEFAULT_MAX_ANSWER_CHARS, DEFAULT_MAX_RESPONSE_BYTES, Runner

if TYPE_CHECKING:
    from runners.retry import Sleep

R = TypeVar("R", bound=type)
_BACKENDS: dict[str, type] = {}
_SETTINGS: dict[str, type] = {}


def backend(type_name: str, *, settings: type) -> Callable[[R], R]:
    """Class decorator: the runner serves the pool backend type ``type_name``, whose pool-file block
    is ``settings`` (its ``type`` field must be ``Literal[type_name]``). A type declared twice is an
    error (which runner a pool got would depend on import order)."""

    def decorate(runner_class: R) -> R:
        declared = getattr(settings.model_fields.get("type"), "annotation", None)
        if getattr(declared, "__args__", None) != (type_name,):
            raise ValueError(
                f"{settings.__qualname__}.type must be Literal[{type_name!r}] to declare backend type {type_name!r}"
            )
        if type_name in _BACKENDS and (_BACKENDS[type_name], _SETTINGS[type_name]) != (runner_class, settings):
            raise ValueError(f"backend type {type_name!r} is already served by {_BACKENDS[type_name].__qualname__}")
        _BACKENDS[type_name], _SETTINGS[type_name] = runner_class, settings
        return runner_class

    return decorate


def _registered() -> dict[str, type]:
    import runners.protocols

    for module in pkgutil.iter_modules(runners.protocols.__path__):  # importing a module registers its types
        importlib.import_module(f"runners.protocols.{module.name}")
    return _BACKENDS


def settings_classes() -> dict[str, type]:
    """Each backend type's settings block, by type name, sorted (import order must not show)."""
    _registered()
    return {name: _SETTINGS[name] for name in sorted(_SETTINGS)}


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
    options: Mapping[str, Any] | None = None,
) -> Runner:
    """A runner for one endpoint; raises ValueError for an unknown backend type.

    ``max_response_bytes`` caps the body after decompression and ``max_answer_chars`` the answer
    text; past either the call is an ``"oversize"`` infra error, never retried. ``timeout_s``
    None is the runner's own ``default_timeout_s``. ``options`` are the settings only this type's
    runner takes (its settings block's ``runner_options()``, e.g. ``think_param``).
    """
    from runners.retry import RetryPolicy

    runner_class = _registered().get(backend_type)
    if runner_class is None:
        raise ValueError(f"unknown backend type {backend_type!r}; expected one of {', '.join(backend_types())}")
    policy = RetryPolicy(
        max_retries=max_retries,
        backoff_base_s=backoff_base_s,
        backoff_max_s=backoff_max_s,
        retry_after_cap_s=retry_after_cap_s,
    )
    runner: Runner = runner_class(
        base_url,
        api_key_env=api_key_env,
        timeout_s=timeout_s,
        policy=policy,
        sleep=sleep,
        max_response_bytes=max_response_bytes,
        max_answer_chars=max_answer_chars,
        **dict(options or {}),
    )
    return runner
