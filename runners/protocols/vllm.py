"""A vLLM server: the OpenAI-compatible protocol, with vLLM's own default for requests in flight.

vLLM batches every request it holds into each decode step (continuous batching), so a pool that
sends it eight at a time, the generic OpenAI default, leaves most of its throughput unused.
"""

from __future__ import annotations

from typing import Literal

from runners.protocols.openai_compat import OpenAICompatRunner, OpenAICompatSettings
from runners.registry import backend


class VllmSettings(OpenAICompatSettings):
    """A vLLM server (``vllm serve MODEL``; ``base_url`` with its ``/v1`` prefix). For Qwen3's
    thinking switch, set ``think_param: chat_template_kwargs``."""

    summary = "a vLLM server, OpenAI-compatible"
    type: Literal["vllm"]


@backend("vllm", settings=VllmSettings)
class VllmRunner(OpenAICompatRunner):
    """The OpenAI-compatible runner with 32 requests in flight unless the pool file says otherwise."""

    default_max_concurrency = 32
