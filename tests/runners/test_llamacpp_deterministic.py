"""``deterministic: true`` on the batched llama.cpp engine: a greedy answer does not depend on which
other requests share the server, on the shipped GGUF models.

Batch composition is made different by construction: the same prompts answered one at a time, in a
batch of four, and in another batch of four with other neighbours in another order (engine level);
and two pool nights, one with four requests in flight and one with one at a time (end to end).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from pool import RunSpec, run_pool
from pool.config import load_pool
from runners.llamacpp.gguf_models import model_path
from runners.llamacpp.settings import LlamaCppSettings
from tests.fake_pool import PoolWriter, two_option_items, write_jsonl
from tests.local_models import requires_llama

QUESTIONS = [
    "高血压患者日常饮食要注意什么？",
    "What is a fever?",
    "儿童发烧38.5℃怎么办？",
    "List three symptoms of flu.",
]
PROMPTS = [
    f"问题：{q}\n回答：" for q in (*QUESTIONS, "What are common side effects of metformin?", "糖尿病的典型症状有哪些？")
]


def _answers(model: Any, prompts: list[str], max_tokens: int = 24) -> list[str]:
    """The greedy answers of ``prompts``, submitted together, stepped until the engine is idle."""
    from runners.llamacpp.batching import Job, Sampling

    out: dict[int, Any] = {}
    for i, text in enumerate(prompts):
        done = lambda c, i=i: out.__setitem__(i, c)  # noqa: E731
        prompt = model.tokenize(text, add_special=True)
        model.submit(Job(prompt=prompt, max_tokens=max_tokens, sampling=Sampling(temperature=0), stop=(), done=done))
    while model.has_work:
        model.step()
    return [out[i].text for i in range(len(prompts))]


@requires_llama
def test_a_greedy_answer_is_the_same_alone_and_in_any_batch() -> None:
    from runners.llamacpp.batching import BatchedModel

    path = str(model_path("gemma3-270m"))  # its default batched answers do move with the batch
    model = BatchedModel(path, LlamaCppSettings.of(slots=4, n_ctx=256, n_threads=1, deterministic=True))
    try:
        alone = [_answers(model, [p])[0] for p in PROMPTS]
        first = _answers(model, PROMPTS[:4])
        other = _answers(model, [PROMPTS[3], PROMPTS[5], PROMPTS[4], PROMPTS[0]])
    finally:
        model.close()
    assert first == alone[:4]
    assert other == [alone[3], alone[5], alone[4], alone[0]]
    fresh = []  # a one-slot engine loaded afresh per prompt: nothing cached, nothing shared
    for prompt in PROMPTS[:2]:
        single = BatchedModel(path, LlamaCppSettings.of(slots=1, n_ctx=256, n_threads=1))
        try:
            fresh.append(_answers(single, [prompt])[0])
        finally:
            single.close()
    assert fresh == alone[:2]


@requires_llama
def test_two_nights_with_different_concurrency_give_identical_answers(tmp_path: Path, write_pool: PoolWriter) -> None:
    data = write_jsonl(tmp_path / "items.jsonl", two_option_items(6))
    root = tmp_path / "runs"

    def night(name: str, concurrency: int) -> dict[str, str]:
        pool = write_pool(
            f"""
            backends:
              local: {{type: llamacpp, deterministic: true, slots: 4, n_threads: 1, n_ctx: 512,
                       max_concurrency: {concurrency}}}
            models:
              - {{name: gemma, backend: local, gguf: gemma3-270m, mode: completion, temperature: 0, max_tokens: 16,
                  stop: ["\\n\\n", "问题："]}}
            """,
            name=f"{name}.yaml",
        )
        result = run_pool(RunSpec(pool=pool, data=[data], out=root / name, no_cache=True, no_routing=True))
        assert result.exit_code == 0
        rows = [json.loads(line) for line in (root / name / "results.jsonl").read_text(encoding="utf-8").splitlines()]
        return {r["item_id"]: r["text"] for r in rows if r["stage"] == "answer"}

    together, alone = night("n1", 4), night("n2", 1)
    assert len(together) == 6 and together == alone


def test_deterministic_is_a_batched_engine_option_outside_the_fingerprint_when_unset(write_pool: PoolWriter) -> None:
    assert "deterministic" not in LlamaCppSettings.of().model_dump()
    assert LlamaCppSettings.of(deterministic=True).model_dump()["deterministic"] is True
    with pytest.raises(ValidationError, match="deterministic: true needs engine: batched"):
        LlamaCppSettings.of(engine="llama_cpp", deterministic=True)
    model = "models:\n  - {name: m, backend: local, gguf: smollm2-135m-instruct}\n"
    plain = load_pool(write_pool("backends:\n  local: {type: llamacpp}\n" + model, name="a.yaml"))
    same = load_pool(write_pool("backends:\n  local: {type: llamacpp, deterministic: false}\n" + model, name="b.yaml"))
    det = load_pool(write_pool("backends:\n  local: {type: llamacpp, deterministic: true}\n" + model, name="c.yaml"))
    assert plain.fingerprint() == same.fingerprint() != det.fingerprint()
