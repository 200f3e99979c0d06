"""Constrained decoding on the real engines: the tiny SmolLM2 answers a verdict schema's JSON through the
grammar the runner builds from it (``runners.structured``), in both managed engines, and the same answer in
both; a grammar that does not parse is a 400 from the batched engine. Without the grammar the same model
writes no such JSON, which is why a small judge needs it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import jsonschema
import pytest

from runners.base import GenerationParams, GenerationRequest
from runners.llamacpp.server import ManagedLlamaServer, ServedModel
from runners.llamacpp.settings import LlamaCppSettings
from runners.protocols.openai_compat import OpenAICompatRunner
from tests.local_models import requires_llama

pytestmark = requires_llama

SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"enum": ["success", "failure"]},
        "score": {"type": "integer", "minimum": 0, "maximum": 10},
        "reason": {"type": "string", "maxLength": 40},
    },
    "required": ["verdict", "score", "reason"],
    "additionalProperties": False,
}
QUESTION = '判断这个回答是否正确并打分（0-10）："发烧时要多喝水。" 只输出JSON。'


def _request(schema: dict[str, Any] | None) -> GenerationRequest:
    params = GenerationParams(temperature=0.0, max_tokens=64)
    return GenerationRequest(
        model="smol", messages=({"role": "user", "content": QUESTION},), params=params, output_schema=schema
    )


async def _answers(engine: str) -> tuple[list[str], int]:
    settings = LlamaCppSettings.of(engine=engine, n_threads=1, n_ctx=512, structured_output="grammar")
    async with ManagedLlamaServer([ServedModel("smol", "smollm2-135m-instruct")], settings) as server:
        runner = OpenAICompatRunner(server.base_url, structured_output=settings.structured_output, timeout_s=600)
        try:
            texts = []
            for schema in (SCHEMA, None):
                response = await runner.generate(_request(schema))
                assert response.ok, response.error_detail
                texts.append(response.text)
        finally:
            await runner.aclose()
        status = 0
        if engine == "batched":
            body = {"model": "smol", "messages": [{"role": "user", "content": "x"}], "grammar": "root ::= missing"}
            async with (
                aiohttp.ClientSession() as session,
                session.post(server.base_url + "/chat/completions", json=body) as r,
            ):
                status = r.status
        return texts, status


def _valid(text: str) -> bool:
    try:
        jsonschema.validate(json.loads(text), SCHEMA)
    except (ValueError, jsonschema.ValidationError):
        return False
    return True


@pytest.fixture(scope="module")
def engines() -> dict[str, tuple[list[str], int]]:
    return {engine: asyncio.run(_answers(engine)) for engine in ("batched", "llama_cpp")}


def test_both_engines_answer_schema_valid_json_with_the_grammar(engines: dict[str, tuple[list[str], int]]) -> None:
    (batched, _), (single, _) = engines["batched"], engines["llama_cpp"]
    assert _valid(batched[0]) and _valid(single[0])
    assert batched[0] == single[0]  # one request at a time the engines answer alike, grammar included


def test_without_the_grammar_the_model_writes_no_such_json(engines: dict[str, tuple[list[str], int]]) -> None:
    assert not _valid(engines["batched"][0][1]) and not _valid(engines["llama_cpp"][0][1])


def test_the_batched_engine_refuses_a_grammar_that_does_not_parse(engines: dict[str, tuple[list[str], int]]) -> None:
    assert engines["batched"][1] == 400
