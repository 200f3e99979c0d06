"""The OpenAI-compatible runner against the fake server: parsing, faults, retries, key handling."""

from __future__ import annotations

import asyncio
import logging
import resource
import socket

import pytest

from runners.base import GenerationParams, GenerationRequest, GenerationResponse
from runners.protocols.ollama import OllamaRunner
from runners.protocols.openai_compat import OpenAICompatRunner
from runners.registry import make_runner
from runners.retry import RetryPolicy
from tests.fakes import (
    Behavior,
    bad_request,
    cut_body,
    drop,
    garbage,
    giant_answer,
    gzip_bomb,
    ok,
    rate_limited,
    raw_json,
    server_error,
    stall,
    status,
    truncated_json,
)
from tests.fakes.openai_fake import FakeOpenAIServer

FAST = RetryPolicy(max_retries=2, backoff_base_s=0.01, backoff_max_s=0.02)
CHAT = GenerationRequest(model="fake-model", messages=({"role": "user", "content": "What is BP?"},))
KEY_ENV = "MEDPOOL_TEST_OPENAI_KEY"


class RecordingSleep:
    """Stands in for asyncio.sleep: records each requested wait and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def call(
    script: list[Behavior],
    request: GenerationRequest = CHAT,
    *,
    policy: RetryPolicy = FAST,
    timeout_s: float = 5.0,
    api_key_env: str | None = None,
    sleep: RecordingSleep | None = None,
    **caps: int,
) -> tuple[GenerationResponse, FakeOpenAIServer]:
    """One request through a fresh runner against a fake playing ``script``; ``caps`` are
    ``max_response_bytes`` / ``max_answer_chars``."""

    async def main() -> tuple[GenerationResponse, FakeOpenAIServer]:
        async with FakeOpenAIServer(script=script) as fake:
            runner = OpenAICompatRunner(
                fake.base_url,
                api_key_env=api_key_env,
                timeout_s=timeout_s,
                policy=policy,
                sleep=sleep or RecordingSleep(),
                **caps,
            )
            try:
                return await runner.generate(request), fake
            finally:
                await runner.aclose()

    return asyncio.run(main())


# --- success paths ------------------------------------------------------------------------
def test_chat_success_parses_text_finish_and_usage():
    params = GenerationParams(temperature=0.3, max_tokens=64, stop=("\n\n",), top_p=0.9, seed=7)
    request = GenerationRequest(model="fake-model", messages=CHAT.messages, params=params)
    resp, fake = call([ok()], request)
    assert resp.ok and resp.text == "echo: What is BP?"
    assert resp.finish_reason == "stop"
    assert resp.prompt_tokens is not None and resp.completion_tokens == 4
    assert len(resp.attempts) == 1 and resp.attempts[0].status == 200
    sent = fake.requests[0]
    assert sent.path == "/v1/chat/completions" and sent.authorization is None
    assert sent.payload["model"] == "fake-model"
    assert sent.payload["messages"] == [{"role": "user", "content": "What is BP?"}]
    assert (sent.payload["temperature"], sent.payload["max_tokens"]) == (0.3, 64)
    assert (sent.payload["stop"], sent.payload["top_p"], sent.payload["seed"]) == (["\n\n"], 0.9, 7)


def test_unset_optional_params_are_not_sent():
    _, fake = call([ok()])
    assert not {"stop", "top_p", "seed"} & set(fake.requests[0].payload)


def test_completion_mode_posts_prompt_to_completions():
    request = GenerationRequest(model="base", mode="completion", prompt="Q: BP? A:")
    resp, fake = call([ok()], request)
    assert resp.ok and resp.text == "echo: Q: BP? A:"
    assert fake.requests[0].path == "/v1/completions"
    assert fake.requests[0].payload["prompt"] == "Q: BP? A:"


def test_length_finish_reason_is_passed_through():
    request = GenerationRequest(model="m", messages=CHAT.messages, params=GenerationParams(max_tokens=2))
    resp, _ = call([ok("one two three four")], request)
    assert (resp.text, resp.finish_reason) == ("one two", "length")


def test_empty_content_is_an_answer_not_an_error():
    resp, fake = call([ok("")])
    assert resp.ok and resp.text == "" and fake.request_count == 1


def test_reasoning_content_is_kept_out_of_text():
    body = {"choices": [{"message": {"content": "B", "reasoning_content": "weigh A vs B"}, "finish_reason": "stop"}]}
    resp, _ = call([raw_json(body)])
    assert (resp.text, resp.reasoning) == ("B", "weigh A vs B")
    assert resp.prompt_tokens is None  # no usage block: unknown, not zero


WRONG_SHAPES = [
    {"error": {"message": "quota exceeded"}},  # no choices
    {"choices": []},
    {"choices": [{"index": 0, "finish_reason": "stop"}]},  # neither message nor text
    {"choices": [{"message": {"content": 42}}]},  # content of the wrong type
    {"choices": "none"},
    ["not", "an", "object"],
]


@pytest.mark.parametrize("body", WRONG_SHAPES)
def test_wrong_shape_200_is_retried_then_succeeds(body):
    resp, fake = call([raw_json(body), ok()])
    assert resp.ok and resp.text == "echo: What is BP?"
    assert [a.error_class for a in resp.attempts] == ["bad_response", None]
    assert resp.attempts[0].status == 200 and "unexpected shape" in resp.attempts[0].detail
    assert fake.request_count == 2


def test_persistent_wrong_shape_is_bad_response_after_max_retries():
    resp, fake = call([raw_json({"choices": []})] * 10)
    assert resp.error_class == "bad_response" and resp.text == ""
    assert len(resp.attempts) == FAST.max_retries + 1 == fake.request_count
    assert "after 3 attempts" in resp.error_detail


# --- faults: one failure, then an answer --------------------------------------------------
@pytest.mark.parametrize(
    "fault, error_class, status_code",
    [
        (drop(), "connection", None),
        (cut_body(), "connection", None),
        (truncated_json(), "bad_response", 200),
        (garbage(), "bad_response", 200),
        (server_error(500), "server_error", 500),
        (server_error(503), "server_error", 503),
        (rate_limited(None), "rate_limited", 429),
        (stall(30), "timeout", None),
    ],
)
def test_fault_is_retried_then_succeeds(fault, error_class, status_code):
    resp, fake = call([fault, ok()], timeout_s=0.3)
    assert resp.ok and resp.text == "echo: What is BP?"
    assert [a.error_class for a in resp.attempts] == [error_class, None]
    assert resp.attempts[0].status == status_code and resp.attempts[0].detail
    assert fake.request_count == 2


@pytest.mark.parametrize(
    "fault, error_class",
    [(server_error(503), "server_error"), (rate_limited(None), "rate_limited"), (drop(), "connection")],
)
def test_persistent_fault_stops_after_max_retries(fault, error_class):
    resp, fake = call([fault] * 10)
    assert resp.error_class == error_class and not resp.ok and resp.text == ""
    assert len(resp.attempts) == FAST.max_retries + 1 == fake.request_count
    assert "after 3 attempts" in resp.error_detail


def test_timeout_after_all_retries_is_timeout():
    resp, fake = call([stall(30)] * 3, policy=RetryPolicy(max_retries=1, backoff_base_s=0.01), timeout_s=0.2)
    assert resp.error_class == "timeout" and fake.request_count == 2


@pytest.mark.parametrize("code", [400, 404, 422])
def test_client_errors_are_not_retried(code):
    resp, fake = call([bad_request(code, "max_tokens too large"), ok()])
    assert resp.error_class == "client_error" and fake.request_count == 1
    assert len(resp.attempts) == 1 and resp.attempts[0].status == code
    assert "max_tokens too large" in resp.error_detail


@pytest.mark.parametrize("code", [401, 403])
def test_auth_statuses_are_auth_and_not_retried(code):
    resp, fake = call([status(code, message="invalid api key"), ok()])
    assert resp.error_class == "auth" and fake.request_count == 1


@pytest.mark.parametrize("retry_after", ["3", "Wed, 01 Jan 2200 00:00:00 GMT"])
def test_retry_after_sets_a_floor_on_the_wait(retry_after):
    sleep = RecordingSleep()
    resp, fake = call([rate_limited(retry_after), ok()], sleep=sleep)
    assert resp.ok and len(resp.attempts) == 2 and fake.request_count == 2
    assert resp.attempts[0].error_class == "rate_limited"
    expected = 3.0 if retry_after == "3" else 60.0  # a far-future date is capped at 60 s
    assert len(sleep.waits) == 1 and sleep.waits[0] >= expected - 1e-6


def test_connection_refused_is_connection_error():
    with socket.socket() as s:  # grab a free port, then close it so nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def main() -> GenerationResponse:
        runner = OpenAICompatRunner(f"http://127.0.0.1:{port}/v1", policy=FAST, sleep=RecordingSleep())
        try:
            return await runner.generate(CHAT)
        finally:
            await runner.aclose()

    resp = asyncio.run(main())
    assert resp.error_class == "connection" and len(resp.attempts) == 3
    assert all(a.status is None for a in resp.attempts)


# --- caps on what a server can make us hold -----------------------------------------------
def test_gzip_bomb_is_oversize_and_memory_stays_bounded():
    bomb = gzip_bomb()  # built (and cached) before the baseline is taken
    assert len(bomb.body) < 400_000  # ~300 KB on the wire, 300 MiB once inflated
    before_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    resp, fake = call([bomb, ok()])
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before_kib) / 1024
    assert resp.error_class == "oversize" and resp.text == ""
    assert "max_response_bytes=8388608" in resp.error_detail
    assert len(resp.attempts) == 1 == fake.request_count  # the same request gets the same bomb
    # Coarse guard: ru_maxrss is the process's peak, so this only catches a regression that
    # inflates the whole body (>= 300 MiB), never a small one.
    assert grown_mib < 200


def test_compressed_answer_under_the_caps_is_inflated_and_read():
    resp, _ = call([gzip_bomb(1024 * 1024)], max_answer_chars=2 * 1024 * 1024)
    assert resp.ok and resp.text == "a" * (1024 * 1024)


def test_content_length_over_the_cap_is_refused_before_reading():
    resp, fake = call([giant_answer(50_000), ok()], max_response_bytes=10_000)
    assert resp.error_class == "oversize" and fake.request_count == 1
    assert "Content-Length" in resp.error_detail and "max_response_bytes=10000" in resp.error_detail


def test_giant_answer_text_is_oversize_and_not_retried():
    resp, fake = call([giant_answer(250_000), ok()])
    assert resp.error_class == "oversize" and resp.text == "" and fake.request_count == 1
    assert "250000 chars" in resp.error_detail and "max_answer_chars=200000" in resp.error_detail


def test_answer_exactly_at_the_char_cap_is_an_answer():
    resp, _ = call([ok("A" * 1000)], max_answer_chars=1000)
    assert resp.ok and len(resp.text) == 1000


def test_large_error_body_keeps_its_status_class():
    resp, fake = call([status(503, message="x" * 200_000), ok()], max_response_bytes=100_000)
    assert resp.ok and [a.error_class for a in resp.attempts] == ["server_error", None]
    assert fake.request_count == 2


@pytest.mark.parametrize("caps", [{"max_response_bytes": 0}, {"max_answer_chars": -1}])
def test_non_positive_caps_are_refused(caps):
    with pytest.raises(ValueError, match="must be > 0"):
        OpenAICompatRunner("http://h/v1", **caps)


@pytest.mark.parametrize("backend", ["openai", "ollama"])
def test_make_runner_passes_the_caps_on(backend):
    from tests.fakes.ollama_fake import FakeOllamaServer

    async def main() -> GenerationResponse:
        fake_cls = FakeOpenAIServer if backend == "openai" else FakeOllamaServer
        async with fake_cls(script=[ok("A" * 11)]) as fake:
            runner = make_runner(backend, fake.base_url, max_answer_chars=10, max_retries=0)
            try:
                return await runner.generate(CHAT)
            finally:
                await runner.aclose()

    resp = asyncio.run(main())
    assert resp.error_class == "oversize" and "max_answer_chars=10" in resp.error_detail


# --- API key ------------------------------------------------------------------------------
def test_key_is_read_from_env_at_call_time(monkeypatch):
    async def main() -> FakeOpenAIServer:
        async with FakeOpenAIServer() as fake:
            runner = OpenAICompatRunner(fake.base_url, api_key_env=KEY_ENV, policy=FAST)
            monkeypatch.setenv(KEY_ENV, "first-key")
            await runner.generate(CHAT)
            monkeypatch.setenv(KEY_ENV, "rotated-key")
            await runner.generate(CHAT)
            await runner.aclose()
            return fake

    fake = asyncio.run(main())
    assert [r.authorization for r in fake.requests] == ["Bearer first-key", "Bearer rotated-key"]


def test_unset_key_env_is_auth_error_that_never_stores_the_variable(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    resp, fake = call([ok()], api_key_env=KEY_ENV)
    assert resp.error_class == "auth" and KEY_ENV not in resp.error_detail and "api_key_env" in resp.error_detail
    assert fake.request_count == 0


def test_canary_key_never_leaks(monkeypatch, caplog):
    canary = "sk-CANARY-7f3a9b2e"
    monkeypatch.setenv(KEY_ENV, canary)
    caplog.set_level(logging.DEBUG)
    # The server misbehaves, and its error bodies even echo the key back.
    script = [server_error(500), drop(), garbage(), status(400, message=f"bad key: Bearer {canary}")]

    async def main() -> tuple[GenerationResponse, str, FakeOpenAIServer]:
        async with FakeOpenAIServer(script=script) as fake:
            runner = OpenAICompatRunner(
                fake.base_url,
                api_key_env=KEY_ENV,
                timeout_s=2,
                policy=RetryPolicy(max_retries=5, backoff_base_s=0.01),
                sleep=RecordingSleep(),
            )
            resp = await runner.generate(CHAT)
            text = repr(runner)
            await runner.aclose()
            return resp, text, fake

    resp, runner_repr, fake = asyncio.run(main())
    assert fake.requests[0].authorization == f"Bearer {canary}"  # the key was really sent
    assert resp.error_class == "client_error" and len(resp.attempts) == 4
    for text in [repr(resp), resp.error_detail, runner_repr, caplog.text, *(a.detail for a in resp.attempts)]:
        assert canary not in text
    assert KEY_ENV in runner_repr


# --- factory and the fake itself ----------------------------------------------------------
def test_make_runner_maps_backend_types():
    assert isinstance(make_runner("openai", "http://h/v1"), OpenAICompatRunner)
    assert isinstance(make_runner("llamacpp", "http://h/v1"), OpenAICompatRunner)
    assert isinstance(make_runner("ollama", "http://h"), OllamaRunner)
    with pytest.raises(ValueError, match="unknown backend type 'tgi'"):
        make_runner("tgi", "http://h")  # type: ignore[arg-type]


def test_fake_tracks_in_flight_requests():
    async def main() -> FakeOpenAIServer:
        async with FakeOpenAIServer(latency_s=0.1) as fake:
            runner = OpenAICompatRunner(fake.base_url, policy=FAST)
            results = await asyncio.gather(*(runner.generate(CHAT) for _ in range(4)))
            await runner.aclose()
            assert all(r.ok for r in results)
            return fake

    fake = asyncio.run(main())
    assert fake.request_count == 4 and fake.max_in_flight == 4 and fake.in_flight == 0
