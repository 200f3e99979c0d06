"""An OpenAI-compatible server that refuses token logprobs (``runners.refusable``): with five requests in
flight exactly one is refused, the rest are sent without ``logprobs`` and the endpoint remembers; the
refusal may name the field or be a bare 4xx (then the same request answering without it confirms it);
a 400 that the request without logprobs gets too refuses nothing. FAKE servers count the requests."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import replace
from typing import Any

import pytest

from runners.base import GenerationParams, GenerationRequest
from runners.protocols.openai_compat import OpenAICompatRunner
from tests.fakes import bad_request, ok
from tests.fakes.openai_fake import FakeOpenAIServer

SCHEMA = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}
VALID = json.dumps({"score": 7})


def request(schema: dict[str, Any] | None = None, mode: str = "chat") -> GenerationRequest:
    params = replace(GenerationParams(), top_logprobs=10)
    if mode == "chat":
        return GenerationRequest(
            model="judge", messages=({"role": "user", "content": "judge"},), params=params, output_schema=schema
        )
    return GenerationRequest(model="judge", prompt="judge", mode="completion", params=params)


def refusing(message: str, code: int = 400):
    def behave(index: int, payload: dict[str, Any]) -> Any:
        return bad_request(code, message) if "logprobs" in payload else ok(VALID)

    return behave


async def _scenario(behave: Any, requests: list[GenerationRequest], structured: str = "none"):
    async with FakeOpenAIServer(behave=behave) as fake:
        runner = OpenAICompatRunner(fake.base_url, structured_output=structured)
        try:
            first = await asyncio.gather(*(runner.generate(r) for r in requests))  # in flight together
            after_first = fake.request_count
            later = await asyncio.gather(*(runner.generate(r) for r in requests[:3]))
        finally:
            await runner.aclose()
        payloads = [r.payload for r in fake.requests]
        return [*first, *later], after_first, payloads, runner


@pytest.mark.parametrize(
    ("message", "code"),
    [("logprobs is not supported by this model", 400), ("Invalid request: unsupported parameter", 400), ("x", 422)],
)
def test_five_in_flight_one_refused_all_answered_without_logprobs_and_remembered(message, code, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="runners.refusable"):
        responses, after_first, payloads, runner = asyncio.run(_scenario(refusing(message, code), [request()] * 5))
    assert after_first == 6 and len(payloads) == 9  # 1 refused + 5, then 3 sent without logprobs at once
    assert sum("logprobs" in p or "top_logprobs" in p for p in payloads) == 1
    assert all(r.ok and r.text == VALID and r.token_logprobs is None for r in responses)
    assert runner.logprobs_accepted is False
    warnings = [r.getMessage() for r in caplog.records if "refused logprobs" in r.getMessage()]
    assert len(warnings) == 1 and runner._endpoint.base_url in warnings[0]
    assert "judge_scores: argmax" in warnings[0]


def test_a_completion_request_s_logprobs_are_refusable_too() -> None:
    responses, _, payloads, runner = asyncio.run(_scenario(refusing("bad"), [request(mode="completion")] * 2))
    assert all(r.ok for r in responses) and runner.logprobs_accepted is False
    assert sum("logprobs" in p for p in payloads) == 1


def test_a_bare_400_on_a_constrained_request_drops_logprobs_and_keeps_the_schema() -> None:
    responses, _, payloads, runner = asyncio.run(
        _scenario(refusing("unsupported parameter"), [request(SCHEMA)] * 5, structured="json_schema")
    )
    assert all(r.ok for r in responses)
    assert runner.logprobs_accepted is False and runner.schema_accepted is True
    assert all("response_format" in p for p in payloads)


def test_a_server_refusing_both_costs_one_refused_request_for_each() -> None:
    def behave(index: int, payload: dict[str, Any]) -> Any:
        if "response_format" in payload:
            return bad_request(400, "response_format is not supported")
        return bad_request(400, "logprobs not supported") if "logprobs" in payload else ok(VALID)

    responses, after_first, payloads, runner = asyncio.run(
        _scenario(behave, [request(SCHEMA)] * 5, structured="json_schema")
    )
    assert all(r.ok for r in responses) and after_first == 7 and len(payloads) == 10
    assert (runner.schema_accepted, runner.logprobs_accepted) == (False, False)


def test_a_400_the_request_gets_without_logprobs_too_refuses_nothing() -> None:
    async def scenario():
        async with FakeOpenAIServer(default=bad_request(400, "model 'judge' does not exist")) as fake:
            runner = OpenAICompatRunner(fake.base_url)
            try:
                response = await runner.generate(request())
            finally:
                await runner.aclose()
            return fake.request_count, response.error_class, runner.logprobs_accepted

    assert asyncio.run(scenario()) == (2, "client_error", None)  # asked again without; the next request asks again


def test_a_server_taking_logprobs_keeps_getting_them() -> None:
    responses, _, payloads, runner = asyncio.run(_scenario(lambda i, p: ok(VALID), [request()] * 4))
    assert all(r.ok for r in responses) and runner.logprobs_accepted is True
    assert len(payloads) == 7 and all(p.get("top_logprobs") == 10 for p in payloads)
