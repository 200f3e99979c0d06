"""Constrained decoding on the wire: each backend type sends a request's ``output_schema`` its own way
(OpenAI-compatible ``response_format``, a llama.cpp ``grammar``, Ollama ``format``), a request without one
is sent as before, and an OpenAI-compatible server that refuses ``response_format`` costs exactly one
refused request per runner, however many constrained requests are in flight (a FAKE server counts them)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from runners.base import GenerationRequest
from runners.protocols import ollama, openai_compat
from runners.protocols.openai_compat import OpenAICompatRunner
from runners.registry import make_runner
from runners.structured import GRAMMAR_STRING_CHARS, GRAMMAR_STRING_ITEMS, grammar_schema
from tests.fakes import bad_request, ok
from tests.fakes.openai_fake import FakeOpenAIServer
from tests.local_models import HAVE_LLAMA

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"enum": ["success", "failure"]}, "score": {"type": "integer"}},
    "required": ["verdict", "score"],
    "additionalProperties": False,
}
MESSAGES = ({"role": "user", "content": "judge this"},)
VALID = json.dumps({"verdict": "success", "score": 7})


def request(schema: dict[str, Any] | None = SCHEMA) -> GenerationRequest:
    return GenerationRequest(model="judge", messages=MESSAGES, output_schema=schema)


def test_openai_compatible_sends_response_format_with_the_schema() -> None:
    _, payload = openai_compat.build_payload(request(), structured="json_schema")
    assert payload["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": True},
    }
    assert "grammar" not in payload


@pytest.mark.skipif(not HAVE_LLAMA, reason="the grammar is built by llama-cpp-python (scripts/install.sh local)")
def test_grammar_mode_sends_a_gbnf_grammar_built_from_the_schema() -> None:
    _, payload = openai_compat.build_payload(request(), structured="grammar")
    assert payload["grammar"].count("root ::=") == 1 and '"\\"success\\""' in payload["grammar"]
    assert "response_format" not in payload


def test_ollama_sends_the_schema_as_format() -> None:
    _, payload = ollama.build_payload(request(), "json_schema")
    assert payload["format"] == SCHEMA


@pytest.mark.parametrize("structured", ["json_schema", "grammar", "none"])
def test_a_request_without_a_schema_or_a_backend_set_to_none_is_sent_as_before(structured: str) -> None:
    plain = openai_compat.build_payload(request(None), structured=structured)  # type: ignore[arg-type]
    assert plain == openai_compat.build_payload(request(None))
    assert openai_compat.build_payload(request(), structured="none") == plain
    assert ollama.build_payload(request(), "none") == ollama.build_payload(request(None))


def test_server_side_schemas_by_default_and_the_llamacpp_grammar_opt_in() -> None:
    from pool.config.schema import BACKEND_CLASSES  # noqa: F401 (the registry's types, loaded)
    from runners.registry import settings_classes

    defaults = {name: cls.model_fields["structured_output"].default for name, cls in settings_classes().items()}
    assert defaults == {"llamacpp": "none", "ollama": "json_schema", "openai": "json_schema", "vllm": "json_schema"}
    with pytest.raises(ValueError, match="Ollama takes a JSON schema"):
        make_runner("ollama", "http://127.0.0.1:9", options={"structured_output": "grammar"})


def refuses_response_format(index: int, payload: dict[str, Any]) -> Any:
    if "response_format" in payload:
        return bad_request(400, "response_format is not supported by this server")
    return ok(VALID)


async def _ask_at_once(runner: OpenAICompatRunner, n: int) -> list[Any]:
    return list(await asyncio.gather(*(runner.generate(request()) for _ in range(n))))


def test_a_server_refusing_response_format_costs_one_refused_request_and_is_remembered() -> None:
    async def scenario() -> tuple[int, int, list[Any], bool | None, int]:
        async with FakeOpenAIServer(behave=refuses_response_format) as fake:
            runner = OpenAICompatRunner(fake.base_url, structured_output="json_schema")
            try:
                first = await _ask_at_once(runner, 5)  # five in flight: one finds out, four wait
                after_first = fake.request_count
                later = await _ask_at_once(runner, 3)
            finally:
                await runner.aclose()
            refused = sum("response_format" in r.payload for r in fake.requests)
            return after_first, fake.request_count, first + later, runner.schema_accepted, refused

    after_first, total, responses, accepted, refused = asyncio.run(scenario())
    assert after_first == 6 and total == 9  # 1 refused + 5, then 3 sent without the schema at once
    assert accepted is False and refused == 1
    assert all(r.ok and r.text == VALID for r in responses)


def test_a_server_taking_response_format_keeps_getting_it() -> None:
    async def scenario() -> tuple[int, int, bool | None]:
        async with FakeOpenAIServer(default=ok(VALID)) as fake:
            runner = OpenAICompatRunner(fake.base_url, structured_output="json_schema")
            try:
                await _ask_at_once(runner, 4)
            finally:
                await runner.aclose()
            return (
                fake.request_count,
                sum("response_format" in r.payload for r in fake.requests),
                runner.schema_accepted,
            )

    assert asyncio.run(scenario()) == (4, 4, True)


def test_a_400_about_something_else_is_not_a_refusal_of_the_schema() -> None:
    async def scenario() -> tuple[int, str | None, bool | None]:
        async with FakeOpenAIServer(default=bad_request(400, "model 'judge' does not exist")) as fake:
            runner = OpenAICompatRunner(fake.base_url, structured_output="json_schema")
            try:
                response = await runner.generate(request())
            finally:
                await runner.aclose()
            return fake.request_count, response.error_class, runner.schema_accepted

    assert asyncio.run(scenario()) == (1, "client_error", None)  # not resent; the next request asks again


def test_the_grammar_holds_integer_ranges_and_bounds_free_text() -> None:
    schema = {
        "type": "object",
        "properties": {
            "score": {"type": "integer", "minimum": 0, "maximum": 10},
            "rationale": {"type": "string"},
            "id": {"type": "string", "pattern": "^T[0-9]$"},
            "short": {"type": "string", "maxLength": 5},
            "flags": {"type": "array", "items": {"type": "string"}},
            "items": {"type": "array", "items": {"type": "object", "properties": {"met": {"type": "boolean"}}}},
        },
    }
    held = grammar_schema(schema)["properties"]
    assert held["score"] == {"enum": list(range(11))}  # the converter alone lets a 0-10 score be 100
    assert held["rationale"] == {"type": "string", "maxLength": GRAMMAR_STRING_CHARS}
    assert held["id"] == schema["properties"]["id"] and held["short"] == {"type": "string", "maxLength": 5}
    assert held["flags"]["maxItems"] == GRAMMAR_STRING_ITEMS
    assert "maxItems" not in held["items"]  # one entry per criterion: as many as the item has
    assert schema["properties"]["rationale"] == {"type": "string"}  # the request's schema is not changed
