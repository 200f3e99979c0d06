"""The managed llama.cpp engines return token logprobs in OpenAI's shape when asked, on a real model.

A short greedy SmolLM2 answer (repeat penalty off, so the greedy token is the model's own top token):
one entry per generated token, the tokens spell the answer, each token's top alternative is the
token itself, and the alternatives' probabilities sum to at most 1 — in both the chat and the
completion shape. Asked for none, the body says ``logprobs: null`` and the answer is the same.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import aiohttp
import pytest

from runners.base import GenerationParams, GenerationRequest
from runners.llamacpp.server import ManagedLlamaServer, ServedModel
from runners.llamacpp.settings import LlamaCppSettings
from runners.protocol import parse_logprobs
from runners.protocols.openai_compat import build_payload
from tests.local_models import requires_llama

pytestmark = requires_llama

SMOL = [ServedModel("smol", "smollm2-135m-instruct")]
K = 5


def _body(mode: str, top_logprobs: int | None) -> tuple[str, dict[str, Any]]:
    """The runner's own payload for a short greedy request, with the repeat penalty off."""
    params = GenerationParams(temperature=0, max_tokens=10, top_logprobs=top_logprobs)
    if mode == "chat":
        messages = ({"role": "user", "content": "What is a fever? Answer in one sentence."},)
        request = GenerationRequest(model="smol", messages=messages, params=params)
    else:
        request = GenerationRequest(model="smol", mode="completion", prompt="A fever is", params=params)
    path, body = build_payload(request)
    return path, {**body, "repeat_penalty": 1.0}


def _text(choice: dict[str, Any]) -> str:
    return choice["message"]["content"] if "message" in choice else choice["text"]


def _check(text: str, logprobs: Any) -> None:
    assert logprobs is not None and len(logprobs) > 0
    assert "".join(t.token for t in logprobs) == text
    for entry in logprobs:
        assert len(entry.top) == K
        assert entry.top[0][1] == pytest.approx(entry.logprob, abs=1e-5)  # greedy: the top token was generated
        assert sum(math.exp(lp) for _, lp in entry.top) <= 1 + 1e-6
        assert all(a >= b for (_, a), (_, b) in zip(entry.top, entry.top[1:], strict=False))


async def _engine_logprobs(engine: str) -> None:
    settings = LlamaCppSettings.of(engine=engine, n_threads=1, n_ctx=512)
    async with ManagedLlamaServer(SMOL, settings) as server, aiohttp.ClientSession() as session:
        for mode in ("chat", "completion"):
            answers = []
            for k in (K, None):
                path, body = _body(mode, k)
                async with session.post(server.base_url + path, json=body) as response:
                    assert response.status == 200, await response.text()
                    answers.append((await response.json())["choices"][0])
            asked, plain = answers
            _check(_text(asked), parse_logprobs(asked["logprobs"]))
            assert plain["logprobs"] is None
            assert _text(plain) == _text(asked)  # asking for logprobs does not change the answer


@pytest.mark.parametrize("engine", ["batched", "llama_cpp"])
def test_the_engine_returns_top_logprobs_whose_top_token_is_the_greedy_one(engine: str) -> None:
    asyncio.run(_engine_logprobs(engine))
