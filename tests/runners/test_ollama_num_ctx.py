"""Ollama's ``num_ctx``: sent in ``options`` from the pool file, validated, in the cache key only when
set, and a warning (once per model) when a prompt may not fit the context."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from eval.loaders import load_items
from pool.config import PoolConfigError, load_pool
from pool.execute.cache_key import cache_key, canonical_json, request_payload
from runners.base import GenerationParams, GenerationRequest
from runners.protocols.ollama import DEFAULT_NUM_CTX, OllamaRunner, context_warning, estimated_tokens
from runners.retry import RetryPolicy
from tests.fakes.ollama_fake import FakeOllamaServer
from tests.shared_data import need_shared

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
MED_LONG_QA = DATA / "medbench-agent-95" / "MedLongQA.jsonl"
FAST = RetryPolicy(max_retries=0)


def chat(text: str, model: str = "qwen3:0.6b", **params) -> GenerationRequest:
    return GenerationRequest(
        model=model, messages=({"role": "user", "content": text},), params=GenerationParams(**params)
    )


POOL = """\
backends:
  ol: {type: ollama, base_url: "http://localhost:11434"}
  api: {type: openai, base_url: "http://localhost:8000/v1"}
"""


def send(requests: list[GenerationRequest]) -> FakeOllamaServer:
    async def main() -> FakeOllamaServer:
        async with FakeOllamaServer() as fake:
            runner = OllamaRunner(fake.base_url, timeout_s=5, policy=FAST)
            try:
                for request in requests:
                    assert (await runner.generate(request)).ok
            finally:
                await runner.aclose()
            return fake

    return asyncio.run(main())


def test_num_ctx_goes_in_options_only_when_set():
    fake = send([chat("问题", num_ctx=16384, max_tokens=64), chat("问题", max_tokens=64)])
    assert fake.requests[0].payload["options"] == {"temperature": 0.0, "num_predict": 64, "num_ctx": 16384}
    assert "num_ctx" not in fake.requests[1].payload["options"]


def test_pool_file_num_ctx_reaches_the_request_and_is_refused_elsewhere(write_pool):
    config = load_pool(
        write_pool(
            POOL
            + """\
defaults:
  num_ctx: 8192
models:
  - {name: a, backend: ol}
  - {name: b, backend: ol, num_ctx: 32768}
  - {name: c, backend: api}
""",
        )
    )
    assert config.model("a").generation_params().num_ctx == 8192  # from defaults:
    assert config.model("b").generation_params().num_ctx == 32768
    assert config.model("c").num_ctx is None  # defaults: reach only backends that take it
    with pytest.raises(PoolConfigError) as info:
        load_pool(write_pool(POOL + "models:\n  - {name: c, backend: api, num_ctx: 8192}\n"))
    text = str(info.value)
    assert "model_pool.yaml:5: models[0].num_ctx" in text and "only sent to ollama" in text and "type openai" in text
    with pytest.raises(PoolConfigError) as info:
        load_pool(write_pool(POOL + "models:\n  - {name: d, backend: ol, num_ctx: 100}\n"))
    assert "models[0].num_ctx" in str(info.value) and "256" in str(info.value)


def test_unset_num_ctx_leaves_fingerprint_identity_and_cache_key_as_before(write_pool):
    plain = load_pool(write_pool(POOL + "models:\n  - {name: a, backend: ol}\n"))
    assert "num_ctx" not in plain.model("a").model_dump(mode="json")  # identities and fingerprint
    with_ctx = load_pool(write_pool(POOL + "models:\n  - {name: a, backend: ol, num_ctx: 8192}\n"))
    assert with_ctx.fingerprint() != plain.fingerprint()
    request = chat("问题")
    assert '"num_ctx"' not in canonical_json(request_payload(request))
    assert cache_key("ollama", "http://h:11434", request) != cache_key(
        "ollama", "http://h:11434", chat("问题", num_ctx=8192)
    )


def test_prompt_estimate_counts_one_token_per_character_plus_the_answer():
    request = chat("字" * 1000, max_tokens=200)
    assert estimated_tokens(request) >= 1000 + 200
    assert context_warning(chat("字" * 1000, max_tokens=200)) is None
    warning = context_warning(chat("字" * 4000, max_tokens=512))
    assert warning is not None and f"default context ({DEFAULT_NUM_CTX}" in warning and "num_ctx: 5120" in warning
    assert context_warning(chat("字" * 4000, max_tokens=512, num_ctx=8192)) is None
    assert "its num_ctx 4096" in (context_warning(chat("字" * 4000, max_tokens=512, num_ctx=4096)) or "")


def test_the_warning_comes_once_per_model_not_per_request(caplog):
    long = "字" * 6000
    with caplog.at_level(logging.WARNING, logger="runners.protocols.ollama"):
        send(
            [
                chat(long, model="m1"),
                chat(long, model="m1"),
                chat("短", model="m1"),
                chat(long, model="m2"),
                chat(long, model="m3", num_ctx=16384),
            ]
        )
    warned = [r.getMessage() for r in caplog.records if r.name == "runners.protocols.ollama"]
    assert len(warned) == 2
    assert "'m1'" in warned[0] and "'m2'" in warned[1]


@pytest.fixture(scope="module")
def med_long_qa() -> Path:
    need_shared(MED_LONG_QA)
    return MED_LONG_QA


def test_a_medlongqa_prompt_is_warned_at_the_default_and_fits_a_large_num_ctx(med_long_qa):
    items = [item for item in load_items([med_long_qa]).items if item.scorable]
    longest = max(items, key=lambda item: len(item.chat_messages()[-1]["content"]))
    messages = tuple(longest.chat_messages())
    assert sum(len(m["content"]) for m in messages) > 30_000  # the longest long-document question
    request = GenerationRequest("qwen3:8b", messages=messages, params=GenerationParams(max_tokens=512))
    assert context_warning(request) is not None
    fits = GenerationRequest("qwen3:8b", messages=messages, params=GenerationParams(max_tokens=512, num_ctx=40960))
    assert context_warning(fits) is None
