"""Backends register themselves (``@backend`` in runners.registry): the pool's backend types and the
registered runners are the same set, and a type cannot be served twice."""

from __future__ import annotations

from typing import get_args

import pytest

from pool.config.schema import BACKEND_CLASSES
from runners.protocol import JsonProtocolRunner
from runners.protocols.ollama import OllamaRunner
from runners.protocols.openai_compat import OpenAICompatRunner
from runners.registry import backend, backend_types, make_runner


def test_the_pool_accepts_exactly_the_registered_backend_types():
    assert set(backend_types()) == set(BACKEND_CLASSES) == {"openai", "llamacpp", "ollama", "vllm"}
    for name, block in BACKEND_CLASSES.items():  # each block's type is its own name
        assert get_args(block.model_fields["type"].annotation) == (name,)


def test_a_backend_type_declared_in_one_module_reaches_the_pool_file(write_pool):
    """vllm is one module in runners/protocols/: the schema, the defaults and the runner follow."""
    from pool.config import load_pool
    from runners.protocols.vllm import VllmRunner

    pool = write_pool(
        "backends:\n  gpu:\n    type: vllm\n    base_url: http://127.0.0.1:8000/v1\n"
        "models:\n  - {name: m, backend: gpu}\n",
        name="pool.yaml",
    )
    gpu = load_pool(pool).backends["gpu"]
    assert (gpu.type, gpu.max_concurrency, gpu.timeout_s) == ("vllm", 32, 120.0)
    assert isinstance(make_runner("vllm", gpu.base_url), VllmRunner)


def test_a_backend_type_is_served_once():
    class Other(JsonProtocolRunner):
        pass

    from runners.protocols.ollama import OllamaSettings

    with pytest.raises(ValueError, match="'ollama' is already served by OllamaRunner"):
        backend("ollama", settings=OllamaSettings)(Other)
    assert backend("ollama", settings=OllamaSettings)(OllamaRunner) is OllamaRunner  # the same again is harmless
    with pytest.raises(ValueError, match=r"OllamaSettings.type must be Literal\['other'\]"):
        backend("other", settings=OllamaSettings)(Other)
    assert isinstance(make_runner("ollama", "http://h"), OllamaRunner)


def test_protocols_share_the_endpoint_and_keep_their_defaults():
    openai, ollama = OpenAICompatRunner("http://h/v1/"), OllamaRunner("http://h")
    assert openai._endpoint.timeout_s == 120.0 and ollama._endpoint.timeout_s == 300.0
    assert repr(openai) == "OpenAICompatRunner(base_url='http://h/v1', api_key_env=None)"
    with pytest.raises(ValueError, match="unknown backend type 'tgi'; expected one of llamacpp, ollama, openai, vllm"):
        make_runner("tgi", "http://h")
