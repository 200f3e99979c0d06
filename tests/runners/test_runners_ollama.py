"""The Ollama native runner against the fake: payload shape, think on/off/absent, parsing, faults."""

from __future__ import annotations

import asyncio

import pytest

from runners.base import GenerationParams, GenerationRequest, GenerationResponse
from runners.protocols.ollama import OllamaRunner
from runners.retry import RetryPolicy
from tests.fakes import (
    OLLAMA_ANSWER_SHELL,
    Behavior,
    bad_request,
    giant_answer,
    gzip_bomb,
    ok,
    raw_json,
    server_error,
    truncated_json,
)
from tests.fakes.ollama_fake import FakeOllamaServer

FAST = RetryPolicy(max_retries=2, backoff_base_s=0.01, backoff_max_s=0.02)
MESSAGES = ({"role": "user", "content": "Dose of amoxicillin?"},)


async def _no_sleep(seconds: float) -> None:
    return None


def chat(think: bool | str | None = None, **params) -> GenerationRequest:
    return GenerationRequest(model="qwen3:0.6b", messages=MESSAGES, params=GenerationParams(think=think, **params))


def call(
    request: GenerationRequest, script: list[Behavior] | None = None
) -> tuple[GenerationResponse, FakeOllamaServer]:
    async def main() -> tuple[GenerationResponse, FakeOllamaServer]:
        async with FakeOllamaServer(script=script or []) as fake:
            runner = OllamaRunner(fake.base_url, timeout_s=5, policy=FAST, sleep=_no_sleep)
            try:
                return await runner.generate(request), fake
            finally:
                await runner.aclose()

    return asyncio.run(main())


def test_chat_payload_maps_params_to_ollama_options():
    _, fake = call(chat(temperature=0.2, max_tokens=99, stop=("END",), top_p=0.8, seed=3))
    sent = fake.requests[0]
    assert sent.path == "/api/chat"
    assert sent.payload["stream"] is False and sent.payload["model"] == "qwen3:0.6b"
    assert sent.payload["messages"] == [dict(m) for m in MESSAGES]
    assert sent.payload["options"] == {"temperature": 0.2, "num_predict": 99, "stop": ["END"], "top_p": 0.8, "seed": 3}


def test_unset_optional_options_are_not_sent():
    _, fake = call(chat())
    assert set(fake.requests[0].payload["options"]) == {"temperature", "num_predict"}


def test_think_on_keeps_thinking_out_of_text():
    resp, fake = call(chat(think=True), [ok("500 mg", thinking="Adult dosing is ...")])
    assert fake.requests[0].payload["think"] is True
    assert resp.ok and resp.text == "500 mg"
    assert resp.reasoning == "Adult dosing is ..."
    assert "Adult dosing" not in resp.text


def test_think_off_is_sent_and_yields_no_reasoning():
    resp, fake = call(chat(think=False))
    assert fake.requests[0].payload["think"] is False
    assert resp.text == "echo: Dose of amoxicillin?" and resp.reasoning is None


def test_think_absent_is_not_sent():
    resp, fake = call(chat(think=None))
    assert "think" not in fake.requests[0].payload
    assert resp.reasoning is None


def test_think_level_string_is_sent_verbatim():
    resp, fake = call(chat(think="high"))
    assert fake.requests[0].payload["think"] == "high"
    assert resp.reasoning and resp.reasoning not in resp.text


def test_counts_done_reason_and_server_timing():
    resp, _ = call(chat(max_tokens=2), [ok("take 500 mg twice daily")])
    assert (resp.text, resp.finish_reason) == ("take 500", "length")
    assert resp.completion_tokens == 2 and resp.prompt_tokens and resp.prompt_tokens > 0
    assert resp.server_timing_s == pytest.approx(2 * 0.01)  # eval_duration ns -> s


def test_completion_mode_uses_generate_raw_and_never_sends_think():
    request = GenerationRequest(
        model="base", mode="completion", prompt="Q: dose? A:", params=GenerationParams(think=True)
    )
    resp, fake = call(request)
    sent = fake.requests[0]
    assert sent.path == "/api/generate"
    assert sent.payload["prompt"] == "Q: dose? A:" and sent.payload["raw"] is True
    assert "think" not in sent.payload and "messages" not in sent.payload
    assert resp.ok and resp.text == "echo: Q: dose? A:" and resp.reasoning is None


def test_generate_body_with_thinking_is_parsed():
    body = {
        "response": "B",
        "thinking": "A is wrong",
        "done": True,
        "done_reason": "stop",
        "eval_count": 1,
        "prompt_eval_count": 4,
        "eval_duration": 5_000_000,
    }
    resp, _ = call(GenerationRequest(model="m", mode="completion", prompt="x"), [raw_json(body)])
    assert (resp.text, resp.reasoning, resp.server_timing_s) == ("B", "A is wrong", 0.005)


def test_model_not_found_is_client_error_with_the_servers_message():
    resp, fake = call(chat(), [bad_request(404, "model 'qwen3:0.6b' not found"), ok()])
    assert resp.error_class == "client_error" and fake.request_count == 1
    assert "model 'qwen3:0.6b' not found" in resp.error_detail


def test_server_error_and_truncated_body_are_retried():
    resp, fake = call(chat(), [server_error(503), truncated_json(), ok()])
    assert resp.ok and fake.request_count == 3
    assert [a.error_class for a in resp.attempts] == ["server_error", "bad_response", None]


def test_body_without_message_or_response_is_retried_then_succeeds():
    resp, fake = call(chat(), [raw_json({"done": True}), ok()])
    assert resp.ok and fake.request_count == 2
    assert [a.error_class for a in resp.attempts] == ["bad_response", None]


def test_persistent_wrong_shape_is_bad_response_after_max_retries():
    resp, fake = call(chat(), [raw_json({"message": {"content": 7}})] * 10)
    assert resp.error_class == "bad_response" and resp.text == ""
    assert len(resp.attempts) == FAST.max_retries + 1 == fake.request_count


def test_gzip_bomb_is_oversize_and_not_retried():
    resp, fake = call(chat(), [gzip_bomb(64 * 1024 * 1024, shell=OLLAMA_ANSWER_SHELL), ok()])
    assert resp.error_class == "oversize" and fake.request_count == 1
    assert "max_response_bytes=8388608" in resp.error_detail


def test_compressed_answer_under_the_caps_is_read():
    resp, _ = call(chat(), [gzip_bomb(100_000, shell=OLLAMA_ANSWER_SHELL)])
    assert resp.ok and resp.text == "a" * 100_000


def test_giant_answer_text_is_oversize_and_not_retried():
    resp, fake = call(chat(), [giant_answer(), ok()])
    assert resp.error_class == "oversize" and fake.request_count == 1
    assert "max_answer_chars=200000" in resp.error_detail
