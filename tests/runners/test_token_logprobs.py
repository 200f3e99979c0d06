"""Token logprobs through the protocols: what is sent, both OpenAI answer shapes read back, Ollama's
shape, the response cache keeping them, and requests that do not ask keeping their cache keys.

The servers are FAKES returning known logprobs.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pool.execute.cache_key import cache_key, request_payload
from pool.execute.response_cache import ResponseCache
from runners.base import GenerationParams, GenerationRequest, GenerationResponse, TokenLogprob
from runners.protocols import ollama, openai_compat
from runners.protocols.openai_compat import OpenAICompatRunner
from tests.fakes import raw_json
from tests.fakes.openai_fake import FakeOpenAIServer

MESSAGES = ({"role": "user", "content": "评分"},)
ASK = GenerationParams(temperature=0, max_tokens=32, top_logprobs=3)
CHAT_LOGPROBS = {
    "content": [
        {"token": '{"a": ', "logprob": 0.0, "top_logprobs": [{"token": '{"a": ', "logprob": 0.0}]},
        {
            "token": "8",
            "logprob": -0.5,
            "top_logprobs": [{"token": "8", "logprob": -0.5}, {"token": "7", "logprob": -1.2}],
        },
        {"token": "}", "logprob": -0.01, "top_logprobs": []},
    ]
}
EXPECTED = (
    TokenLogprob('{"a": ', 0.0, (('{"a": ', 0.0),)),
    TokenLogprob("8", -0.5, (("8", -0.5), ("7", -1.2))),
    TokenLogprob("}", -0.01, ()),
)


def test_openai_requests_ask_in_each_mode_s_field_and_only_when_set() -> None:
    chat = GenerationRequest(model="m", messages=MESSAGES, params=ASK)
    completion = GenerationRequest(model="m", mode="completion", prompt="p", params=ASK)
    plain = GenerationRequest(model="m", messages=MESSAGES)
    assert openai_compat.build_payload(chat)[1].items() >= {"logprobs": True, "top_logprobs": 3}.items()
    assert openai_compat.build_payload(completion)[1]["logprobs"] == 3
    assert "top_logprobs" not in openai_compat.build_payload(completion)[1]
    assert not {"logprobs", "top_logprobs"} & set(openai_compat.build_payload(plain)[1])
    assert ollama.build_payload(chat)[1].items() >= {"logprobs": True, "top_logprobs": 3}.items()
    assert not {"logprobs", "top_logprobs"} & set(ollama.build_payload(plain)[1])


def test_both_openai_shapes_are_read_back_and_a_body_without_them_gives_none() -> None:
    chat = {"choices": [{"message": {"content": '{"a": 8}'}, "logprobs": CHAT_LOGPROBS, "finish_reason": "stop"}]}
    completion_logprobs = {
        "tokens": ['{"a": ', "8", "}"],
        "token_logprobs": [0.0, -0.5, -0.01],
        "top_logprobs": [{'{"a": ': 0.0}, {"7": -1.2, "8": -0.5}, {}],
    }
    completion = {"choices": [{"text": '{"a": 8}', "logprobs": completion_logprobs, "finish_reason": "stop"}]}
    assert openai_compat.parse_body(chat).token_logprobs == EXPECTED
    assert openai_compat.parse_body(completion).token_logprobs == EXPECTED  # alternatives most likely first
    bare = {"choices": [{"message": {"content": "x"}, "logprobs": None}]}
    assert openai_compat.parse_body(bare).token_logprobs is None


def test_ollama_s_top_level_logprobs_are_read() -> None:
    body = {"message": {"content": '{"a": 8}'}, "done_reason": "stop", "logprobs": CHAT_LOGPROBS["content"]}
    assert ollama.parse_body(body).token_logprobs == EXPECTED
    assert ollama.parse_body({"message": {"content": "x"}}).token_logprobs is None


def test_the_runner_sends_the_fields_to_a_fake_server_and_returns_its_logprobs() -> None:
    body = {"choices": [{"message": {"content": '{"a": 8}'}, "logprobs": CHAT_LOGPROBS, "finish_reason": "stop"}]}

    async def main() -> tuple[GenerationResponse, dict[str, Any]]:
        async with FakeOpenAIServer(script=[raw_json(body)]) as fake:
            runner = OpenAICompatRunner(fake.base_url)
            try:
                response = await runner.generate(GenerationRequest(model="m", messages=MESSAGES, params=ASK))
            finally:
                await runner.aclose()
            return response, fake.requests[0].payload

    response, sent = asyncio.run(main())
    assert sent["logprobs"] is True and sent["top_logprobs"] == 3
    assert response.ok and response.token_logprobs == EXPECTED


def test_a_request_that_asks_nothing_keeps_its_cache_key_and_one_that_asks_gets_another() -> None:
    plain = GenerationRequest(model="m", messages=MESSAGES, params=GenerationParams(temperature=0, max_tokens=32))
    asked = GenerationRequest(model="m", messages=MESSAGES, params=ASK)
    assert "top_logprobs" not in request_payload(plain)["params"]
    assert request_payload(asked)["params"]["top_logprobs"] == 3
    assert cache_key("openai", "http://h/v1", plain) != cache_key("openai", "http://h/v1", asked)
    # a request without top_logprobs has exactly the params of the key layout before the field existed
    assert set(request_payload(plain)["params"]) == {"temperature", "max_tokens", "stop", "top_p", "seed", "think"}


def test_the_response_cache_keeps_logprobs_and_reads_an_older_file(tmp_path: Path) -> None:
    import sqlite3

    old = tmp_path / "old"
    old.mkdir()
    with sqlite3.connect(old / "responses.sqlite") as conn:  # a cache file from before the column
        conn.execute(
            "CREATE TABLE responses (key TEXT PRIMARY KEY, text TEXT NOT NULL, finish_reason TEXT, "
            "prompt_tokens INTEGER, completion_tokens INTEGER, latency_s REAL NOT NULL, server_timing_s REAL, "
            "created_at TEXT NOT NULL)"
        )
        conn.execute("INSERT INTO responses VALUES ('k0', 'old', 'stop', 1, 1, 0.1, NULL, '2026-01-01T00:00:00Z')")
    for write_behind in (False, True):
        cache = ResponseCache(old, write_behind=write_behind)
        try:
            assert cache.get("k0") is not None and cache.get("k0").token_logprobs is None  # type: ignore[union-attr]
            answer = GenerationResponse('{"a": 8}', "stop", 3, 3, 0.1, token_logprobs=EXPECTED)
            cache.put(f"k{int(write_behind) + 1}", answer)
            cache.put("plain", GenerationResponse("x", "stop", 1, 1, 0.1))
            cache.flush()
        finally:
            cache.close()
        again = ResponseCache(old)
        try:
            assert again.get(f"k{int(write_behind) + 1}").token_logprobs == EXPECTED  # type: ignore[union-attr]
            assert again.get("plain").token_logprobs is None  # type: ignore[union-attr]
        finally:
            again.close()
