"""``think`` on OpenAI-compatible backends: the backend's ``think_param`` says where it goes
(vLLM's ``chat_template_kwargs``, SiliconFlow's top-level ``enable_thinking``), the pool file refuses
it where the backend says nothing, and the request bodies a FAKE server records show each shape."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pool.config import PoolConfigError, load_pool
from pool.execute.cache_key import cache_key
from pool.execute.endpoints import _runner
from runners.base import GenerationParams, GenerationRequest
from runners.protocols.openai_compat import OpenAICompatRunner
from runners.registry import make_runner
from tests.fakes.openai_fake import FakeOpenAIServer

MESSAGES = ({"role": "user", "content": "头痛三天，怎么办？"},)


def bodies(think_param: str, requests: list[GenerationRequest]) -> list[dict[str, Any]]:
    """The JSON bodies the fake server received from a runner with this ``think_param``."""

    async def main() -> list[dict[str, Any]]:
        async with FakeOpenAIServer() as fake:
            runner = make_runner("openai", fake.base_url, max_retries=0, options={"think_param": think_param})
            try:
                for request in requests:
                    assert (await runner.generate(request)).ok
            finally:
                await runner.aclose()
            return [sent.payload for sent in fake.requests]

    return asyncio.run(main())


def chat(think: bool | None) -> GenerationRequest:
    return GenerationRequest("Qwen/Qwen3-8B", messages=MESSAGES, params=GenerationParams(think=think))


def test_chat_template_kwargs_carries_enable_thinking_for_vllm():
    on, off, unset = bodies("chat_template_kwargs", [chat(True), chat(False), chat(None)])
    assert on["chat_template_kwargs"] == {"enable_thinking": True} and "enable_thinking" not in on
    assert off["chat_template_kwargs"] == {"enable_thinking": False}
    assert "chat_template_kwargs" not in unset and "enable_thinking" not in unset


def test_enable_thinking_is_top_level_for_siliconflow():
    on, off, unset = bodies("enable_thinking", [chat(True), chat(False), chat(None)])
    assert on["enable_thinking"] is True and off["enable_thinking"] is False
    assert "chat_template_kwargs" not in on and "enable_thinking" not in unset


def test_no_think_param_and_completion_mode_send_nothing():
    completion = GenerationRequest("base", mode="completion", prompt="问：", params=GenerationParams(think=False))
    plain, raw = bodies("none", [chat(True)]) + bodies("chat_template_kwargs", [completion])
    assert not {"chat_template_kwargs", "enable_thinking", "think"} & (set(plain) | set(raw))


POOL = """\
backends:
  vllm: {type: vllm, base_url: "http://localhost:8000/v1", think_param: chat_template_kwargs}
  silicon: {type: openai, base_url: "https://api.siliconflow.cn/v1", think_param: enable_thinking}
  plain: {type: openai, base_url: "http://localhost:8001/v1"}
  local: {type: llamacpp}
"""


def test_pool_file_think_reaches_openai_backends_that_declare_where(write_pool):
    config = load_pool(
        write_pool(
            POOL
            + """\
defaults:
  think: off
models:
  - {name: qwen3-vllm, backend: vllm, model: Qwen/Qwen3-8B}
  - {name: qwen3-sf, backend: silicon, model: Qwen/Qwen3-8B, think: on}
  - {name: other, backend: plain}
""",
        )
    )
    assert config.model("qwen3-vllm").generation_params().think is False  # defaults: reach it
    assert config.model("qwen3-sf").generation_params().think is True
    assert config.model("other").think is None  # no think_param: defaults.think is not folded in
    assert _runner(config, "vllm", "http://localhost:8000/v1").think_param == "chat_template_kwargs"
    assert _runner(config, "silicon", "https://api.siliconflow.cn/v1").think_param == "enable_thinking"
    assert _runner(config, "plain", "http://localhost:8001/v1").think_param == "none"


@pytest.mark.parametrize(
    ("entry", "line", "words"),
    [
        (
            "{name: m, backend: plain, think: on}",
            7,
            (
                "models[0].think",
                "think_param: chat_template_kwargs",
                "enable_thinking",
                "backend 'plain' is type openai",
            ),
        ),
        (
            "{name: m, backend: local, gguf: gemma3-270m, think: on}",
            7,
            ("models[0].think", "only sent to ollama", "remove it"),
        ),
        ("{name: m, backend: vllm, think: high}", 7, ("models[0].think", "levels are Ollama's", "true or false")),
    ],
)
def test_pool_file_refuses_think_where_it_would_be_ignored(write_pool, entry, line, words):
    with pytest.raises(PoolConfigError) as info:
        load_pool(write_pool(POOL + f"models:\n  - {entry}\n"))
    matching = [str(issue) for issue in info.value.issues if issue.line == line and issue.field == words[0]]
    assert matching, str(info.value)
    assert all(word in matching[0] for word in words), matching[0]


def test_judge_think_is_checked_against_its_backend(write_pool):
    with pytest.raises(PoolConfigError) as info:
        load_pool(
            write_pool(
                POOL
                + """\
models:
  - {name: other, backend: plain}
judge: {model: other, think: off}
""",
            )
        )
    assert "judge.think" in str(info.value) and "think_param" in str(info.value)
    config = load_pool(
        write_pool(
            POOL
            + """\
models:
  - {name: q, backend: vllm}
judge: {backend: silicon, model: Qwen/Qwen3-8B, think: off}
""",
        )
    )
    assert config.judge_model().think is False


def test_unknown_think_param_is_refused(write_pool):
    with pytest.raises(PoolConfigError) as info:
        load_pool(
            write_pool(
                'backends:\n  b: {type: openai, base_url: "http://h/v1", think_param: extra_body}\n'
                "models:\n  - {name: m, backend: b}\n",
            )
        )
    assert "think_param" in str(info.value) and "chat_template_kwargs" in str(info.value)
    with pytest.raises(ValueError, match="think_param"):
        OpenAICompatRunner("http://h/v1", think_param="extra_body")  # type: ignore[arg-type]


def test_think_is_part_of_the_cache_key_and_think_param_none_stays_out_of_the_fingerprint(write_pool):
    keys = {cache_key("vllm", "http://localhost:8000/v1", chat(think)) for think in (True, False, None)}
    assert len(keys) == 3
    plain = load_pool(
        write_pool('backends:\n  b: {type: openai, base_url: "http://h/v1"}\nmodels:\n  - {name: m, backend: b}\n')
    )
    assert "think_param" not in plain.backends["b"].model_dump(mode="json")
    declared = load_pool(
        write_pool(
            'backends:\n  b: {type: openai, base_url: "http://h/v1", '
            "think_param: enable_thinking}\nmodels:\n  - {name: m, backend: b}\n",
        )
    )
    assert declared.fingerprint() != plain.fingerprint()
