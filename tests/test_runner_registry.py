"""Backends register themselves (``@backend`` in runners.registry): the pool's backend types and the
registered runners are the same set, and a type cannot be served twice."""

from __future__ import annotations

from typing import get_args

import pytest

from pool.config.schema import BackendType
from runners.ollama import OllamaRunner
from runners.openai_compat import OpenAICompatRunner
from runners.protocol import JsonProtocolRunner
from runners.registry import backend, backend_types, make_runner


def test_the_pool_accepts_exactly_the_registered_backend_types():
    assert set(backend_types()) == set(get_args(BackendType)) == {"openai", "llamacpp", "ollama"}


def test_a_backend_type_is_served_once():
    class Other(JsonProtocolRunner):
        pass

    with pytest.raises(ValueError, match="'ollama' is already served by OllamaRunner"):
        backend("ollama")(Other)
    assert backend("ollama")(OllamaRunner) is OllamaRunner  # re-declaring the same runner is harmless
    assert isinstance(make_runner("ollama", "http://h"), OllamaRunner)


def test_protocols_share_the_endpoint_and_keep_their_defaults():
    openai, ollama = OpenAICompatRunner("http://h/v1/"), OllamaRunner("http://h")
    assert openai._endpoint.timeout_s == 120.0 and ollama._endpoint.timeout_s == 300.0
    assert repr(openai) == "OpenAICompatRunner(base_url='http://h/v1', api_key_env=None)"
    with pytest.raises(ValueError, match="unknown backend type 'vllm'; expected one of llamacpp, ollama, openai"):
        make_runner("vllm", "http://h")
