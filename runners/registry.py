"""Backend type name → runner: the one place a pool entry's ``type`` becomes a protocol.

``llamacpp`` maps to the OpenAI-compatible runner because the managed llama.cpp server speaks
that protocol; starting and stopping that server is someone else's job, not the runner's.
Protocol modules (and aiohttp) are imported only when a runner is made.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Literal, get_args

from runners.base import DEFAULT_MAX_ANSWER_CHARS, DEFAULT_MAX_RESPONSE_BYTES, Runner

if TYPE_CHECKING:
    from runners.retry import Sleep

BackendType = Literal["openai", "ollama", "llamacpp"]
BACKEND_TYPES: tuple[str, ...] = get_args(BackendType)


def make_runner(
    backend_type: BackendType,
    base_url: str,
    *,
    api_key_env: str | None = None,
    timeout_s: float = 120.0,
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
    text; past either the call is an ``"oversize"`` infra error, never retried.
    """
    from runners.retry import RetryPolicy

    policy = RetryPolicy(max_retries=max_retries, backoff_base_s=backoff_base_s,
                         backoff_max_s=backoff_max_s, retry_after_cap_s=retry_after_cap_s)
    if backend_type in ("openai", "llamacpp"):
        from runners.openai_compat import OpenAICompatRunner

        return OpenAICompatRunner(base_url, api_key_env=api_key_env, timeout_s=timeout_s,
                                  policy=policy, sleep=sleep, max_response_bytes=max_response_bytes,
                                  max_answer_chars=max_answer_chars)
    if backend_type == "ollama":
        from runners.ollama import OllamaRunner

        return OllamaRunner(base_url, api_key_env=api_key_env, timeout_s=timeout_s,
                            policy=policy, sleep=sleep, max_response_bytes=max_response_bytes,
                            max_answer_chars=max_answer_chars)
    raise ValueError(f"unknown backend type {backend_type!r}; expected one of {', '.join(BACKEND_TYPES)}")
