"""The batched llama.cpp engine and server, on the shipped GGUF models.

The promise: switching ``engine: llama_cpp`` to ``engine: batched`` changes speed, not answers.
Decoding one request at a time it answers exactly as llama-cpp-python's server does; several at
once they all finish, each with its own budget and stops; a reused cached prefix gives the answer
a fresh model gives; bad requests are 400s that say why.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

import aiohttp
import pytest

from runners.llamacpp.gguf_models import model_path
from runners.llamacpp.server import ManagedLlamaServer, ServedModel
from runners.llamacpp.settings import LlamaCppSettings
from tests.local_models import requires_llama

pytestmark = requires_llama

MODELS = [ServedModel("smol", "smollm2-135m-instruct"), ServedModel("gemma", "gemma3-270m")]
QUESTIONS = [
    "高血压患者日常饮食要注意什么？",
    "What is a fever?",
    "儿童发烧38.5℃怎么办？",
    "List three symptoms of flu.",
]


async def _ask(session: aiohttp.ClientSession, base_url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    path = "/chat/completions" if "messages" in body else "/completions"
    async with session.post(base_url + path, json=body) as response:
        return response.status, await response.json()


def _chat(question: str, max_tokens: int = 24) -> dict[str, Any]:
    return {
        "model": "smol",
        "messages": [{"role": "user", "content": question}],
        "temperature": 0,
        "max_tokens": max_tokens,
    }


def _completion(question: str, max_tokens: int = 24) -> dict[str, Any]:
    return {
        "model": "gemma",
        "prompt": f"问题：{question}\n回答：",
        "temperature": 0,
        "max_tokens": max_tokens,
        "stop": ["\n\n", "问题："],
    }


def _text(body: dict[str, Any]) -> str:
    choice = body["choices"][0]
    return choice["message"]["content"] if "message" in choice else choice["text"]


async def _answers(
    engine: str, bodies: Sequence[dict[str, Any]], *, slots: int = 1, at_once: bool = False
) -> list[tuple[int, dict[str, Any]]]:
    async with (
        ManagedLlamaServer(MODELS, LlamaCppSettings.of(engine=engine, slots=slots, n_threads=1, n_ctx=512)) as server,
        aiohttp.ClientSession() as session,
    ):
        if at_once:
            return list(await asyncio.gather(*(_ask(session, server.base_url, b) for b in bodies)))
        return [await _ask(session, server.base_url, b) for b in bodies]


def test_one_request_at_a_time_it_answers_exactly_as_llama_cpp_python_s_server() -> None:
    bodies = [_chat(q) for q in QUESTIONS] + [_completion(q) for q in QUESTIONS]
    reference = asyncio.run(_answers("llama_cpp", bodies))
    batched = asyncio.run(_answers("batched", bodies))
    assert [status for status, _ in batched] == [200] * len(bodies)
    assert [(_text(b), b["choices"][0]["finish_reason"], b["usage"]) for _, b in batched] == [
        (_text(b), b["choices"][0]["finish_reason"], b["usage"]) for _, b in reference
    ]


def test_requests_in_flight_together_each_get_their_own_budget_and_stops() -> None:
    budgets = [1, 5, 12, 30, 8, 3]
    bodies = [_chat(q, n) for q, n in zip(QUESTIONS * 2, budgets, strict=False)]
    bodies += [_completion(q, n) for q, n in zip(QUESTIONS, budgets, strict=False)]
    results = asyncio.run(_answers("batched", bodies, slots=4, at_once=True))
    for body, (status, answer) in zip(bodies, results, strict=True):
        assert status == 200, answer
        usage, reason = answer["usage"], answer["choices"][0]["finish_reason"]
        # as llama-cpp-python: up to 3 tokens past the budget to finish a UTF-8 character
        assert usage["completion_tokens"] <= body["max_tokens"] + 3
        assert reason in {"stop", "length"}
        assert reason == "stop" or usage["completion_tokens"] >= body["max_tokens"]
        assert answer["model"] == body["model"]
        assert "\n\n" not in _text(answer) or "messages" in body  # a stop string never reaches the text
        assert answer["timings"]["predicted_n"] == usage["completion_tokens"]


def _greedy_job(model: Any, text: str, out: list[Any], max_tokens: int) -> Any:
    """An engine job for ``text`` whose result (a Completion or an error) is appended to ``out``."""
    from runners.llamacpp.batching import Job, Sampling

    return Job(
        prompt=model.tokenize(text, add_special=True),
        max_tokens=max_tokens,
        sampling=Sampling(temperature=0),
        stop=(),
        done=out.append,
    )


def _drain(model: Any, out: list[Any]) -> Any:
    """Steps the engine until it is idle; the one result in ``out`` must be a Completion."""
    from runners.llamacpp.batching import Completion

    while model.has_work:
        model.step()
    assert len(out) == 1 and isinstance(out[0], Completion)
    return out[0]


def _run_alone(model: Any, text: str, max_tokens: int) -> Any:
    out: list[Any] = []
    model.submit(_greedy_job(model, text, out, max_tokens))
    return _drain(model, out)


def test_a_cached_prefix_gives_the_answer_a_fresh_model_gives() -> None:
    from runners.llamacpp.batching import BatchedModel

    path = str(model_path("smollm2-135m-instruct"))
    first = "The patient has a fever and a cough. Question: what should the patient do first?"
    second = "The patient has a fever and a cough. Question: when should the patient see a doctor?"

    settings = LlamaCppSettings.of(slots=2, n_ctx=256, n_threads=1)
    warm = BatchedModel(path, settings)
    fresh = BatchedModel(path, settings)
    try:
        _run_alone(warm, first, 20)
        reused = _run_alone(warm, second, 20)
        alone = _run_alone(fresh, second, 20)
    finally:
        warm.close()
        fresh.close()
    assert reused.prompt_tokens_evaluated < reused.prompt_tokens  # the shared prefix was not read again
    assert alone.prompt_tokens_evaluated == alone.prompt_tokens
    assert (reused.text, reused.completion_tokens, reused.finish_reason) == (
        alone.text,
        alone.completion_tokens,
        alone.finish_reason,
    )


def test_a_prefix_copied_from_a_busy_slot_gives_the_answer_a_fresh_model_gives() -> None:
    """Slot 0 holds the shared prefix and is busy, so the request goes to slot 1 with a copy of it."""
    from runners.llamacpp.batching import SHARE_MIN_TOKENS, BatchedModel

    path = str(model_path("smollm2-135m-instruct"))
    preamble = "You are a careful clinician. Answer in one short sentence. " * 8
    first, second = preamble + "Question: what is a fever?", preamble + "Question: what is a cough?"

    settings = LlamaCppSettings.of(slots=2, n_ctx=512, n_threads=1)
    warm = BatchedModel(path, settings)
    fresh = BatchedModel(path, settings)
    try:
        _run_alone(warm, first, 16)
        holder = warm._slots[0]  # keeps its cached prefix but looks busy: nothing to read, no token
        holder.job = _greedy_job(warm, first, [], 16)
        copied_out: list[Any] = []
        warm.submit(_greedy_job(warm, second, copied_out, 16))
        warm.step()
        assert warm._slots[1].job is not None  # admitted to the other slot
        holder.job = None
        copied = _drain(warm, copied_out)
        alone = _run_alone(fresh, second, 16)
    finally:
        warm.close()
        fresh.close()
    assert copied.prompt_tokens - copied.prompt_tokens_evaluated > SHARE_MIN_TOKENS  # the prefix was copied
    assert (copied.text, copied.completion_tokens, copied.finish_reason) == (
        alone.text,
        alone.completion_tokens,
        alone.finish_reason,
    )


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"model": "nope", "prompt": "x"}, "unknown model 'nope'"),
        ({"model": "gemma", "prompt": "x " * 600}, "a slot's context is 512"),
        ({"model": "gemma", "prompt": "x", "stream": True}, "streaming is not supported"),
        ({"model": "smol", "messages": "hi"}, "messages must be a list"),
        (
            {"model": "smol", "messages": [{"role": "user", "content": {"nested": 1}}]},
            "its chat template rejected the messages",
        ),
        ({"model": "gemma", "prompt": "x", "max_tokens": "ten"}, "max_tokens must be an integer"),
        ({"model": "gemma", "prompt": "x", "stop": [1]}, "stop must be a string or a list of strings"),
    ],
)
def test_a_bad_request_is_a_400_that_says_why(body: dict[str, Any], words: str) -> None:
    [(status, answer)] = asyncio.run(_answers("batched", [body]))
    assert status == 400
    assert words in answer["error"]["message"]


def test_a_model_option_the_engine_cannot_honour_stops_the_start_with_its_name(tmp_path: Any) -> None:
    from runners.llamacpp.server import LlamaServerError

    served = [ServedModel("smol", "smollm2-135m-instruct", {"chat_format": "chatml"})]

    async def start() -> None:
        async with ManagedLlamaServer(served, LlamaCppSettings.of(slots=2, n_ctx=256), ready_timeout_s=60):
            pass

    with pytest.raises(LlamaServerError) as info:
        asyncio.run(start())
    assert "['chat_format'] not supported by the batched engine (use engine: llama_cpp)" in str(info.value)


def test_a_pool_s_llamacpp_backend_is_one_batched_server_by_default(tmp_path: Any) -> None:
    import json

    from pool.config import parse_pool
    from pool.execute.endpoints import open_backends
    from runners.base import GenerationRequest

    config = parse_pool(
        "backends:\n  local:\n    type: llamacpp\n    n_ctx: 512\n"
        "models:\n  - {name: smol, backend: local, gguf: smollm2-135m-instruct, max_tokens: 8}\n",
        "<test pool>",
    )
    model = config.model("smol")

    async def scenario() -> None:
        async with open_backends(config, [model], tmp_path) as endpoints:
            local = endpoints["local"]
            assert local.lane.max_concurrency == 4  # 1 server x 4 slots
            assert local.server_logs == [tmp_path / "llamacpp-local.log"]
            record = json.loads((tmp_path / "llamacpp-local.pid").read_text())
            assert record["cmdline_marker"] == "runners.llamacpp.batched_server"
            requests = [
                GenerationRequest(
                    model="smol", messages=({"role": "user", "content": f"Say {i}."},), params=model.generation_params()
                )
                for i in range(6)
            ]
            answers = await asyncio.gather(*(local.lane.runner.generate(r) for r in requests))
            assert all(a.ok for a in answers), answers
            assert all(a.server_timing_s is not None for a in answers)  # the server's own times came back

    asyncio.run(scenario())
    assert not (tmp_path / "llamacpp-local.pid").exists()  # stopped, and its pid file gone


def _exited_within(pid: int, seconds: float) -> bool:
    """Gone, or a zombie not yet reaped (its memory is released before its state says so)."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/status") as status:
                if "\nState:\tZ" in status.read():
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_a_killed_run_s_batched_server_is_found_and_stopped_by_the_next_start(tmp_path: Any) -> None:
    """--resume's guard: the pid file names the batched server's module, so it is trusted and stopped."""
    from runners.llamacpp.server import server_pid_path, stop_leftover_server

    log = tmp_path / "llamacpp-local.log"

    async def start_and_abandon() -> int:
        server = ManagedLlamaServer(MODELS[:1], LlamaCppSettings.of(slots=2, n_ctx=256), log_path=log)
        await server.start()
        assert server.process is not None
        return server.process.pid  # never stopped: as if pool.run had been SIGKILLed

    pid = asyncio.run(start_and_abandon())
    try:
        assert stop_leftover_server(server_pid_path(log)) is True
        assert not server_pid_path(log).exists()
        assert _exited_within(pid, 10.0)
    finally:
        try:
            os.killpg(pid, 9)
        except ProcessLookupError:
            pass
