"""What asking for token logprobs costs the managed llama.cpp engines per generated token.

A judge that weighs its scores (``judge_scores: weighted``) asks for the 10 most likely tokens at every
position of its verdict. The batched engine computes them from the step's logits row (one row of
``n_vocab`` floats per generated token: a log-softmax and a top-k in numpy), so the cost grows with
the vocabulary (SmolLM2 49k, Gemma 262k, Qwen 152k tokens) and not with the context, and the memory
with one row; the ``llama_cpp`` engine does the same in :mod:`runners.llamacpp.single_server`. This
bench decodes the same greedy prompts with and without ``top_logprobs``, in one process, alternating
the order each round, and reports ms per generated token of each and their ratio (median of the
rounds' ratios): the batched engine straight through :class:`~runners.llamacpp.batching.BatchedModel`
(one slot), the ``llama_cpp`` engine through :class:`~runners.llamacpp.single_server.StepLogprobsLlama`,
both with one thread, so llama.cpp computes in the calling thread and the time is that thread's CPU
time (``time.thread_time``: a shared machine's load does not count, its memory-bandwidth contention
still does) over the whole request, its short prompt read included. HTTP is left out, and the
answers are the same tokens either way.

    python -m bench.llamacpp.logprobs                      # the three shipped models, 3 rounds
    python -m bench.llamacpp.logprobs --models qwen2.5-coder-0.5b --rounds 5 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from typing import Any

PROMPTS = (
    "Rate this answer from 0 to 10 and explain: fever above 38.5 C in a child needs paracetamol.",
    "高血压患者日常饮食要注意什么？请给出评分。",
    "Give a JSON object with coverage, accuracy, safety and grounding scores for: drink more water.",
    "List three warning signs of a stroke.",
)
MAX_TOKENS = 48
TOP = 10


def _decode(model: Any, prompt: str, top: int | None) -> tuple[float, int]:
    """(CPU ms of the request, tokens generated) for one greedy request to the batched engine's model."""
    from runners.llamacpp.batching import Job, Sampling

    out: list[Any] = []
    job = Job(
        prompt=model.tokenize(prompt, add_special=True),
        max_tokens=MAX_TOKENS,
        sampling=Sampling(temperature=0),
        stop=(),
        done=out.append,
        top_logprobs=top,
    )
    started = time.thread_time()
    model.submit(job)
    while model.has_work:
        model.step()
    spent = (time.thread_time() - started) * 1000
    done = out[0]
    if isinstance(done, BaseException):
        raise done
    return spent, done.completion_tokens


def _single(model: Any, prompt: str, top: int | None) -> tuple[float, int]:
    """(CPU ms of the request, tokens generated) for one greedy request to the llama_cpp engine's model."""
    started = time.thread_time()
    done = model.create_completion(prompt, max_tokens=MAX_TOKENS, temperature=0, logprobs=top)
    return (time.thread_time() - started) * 1000, done["usage"]["completion_tokens"]


def _rounds(decode: Any, rounds: int) -> dict[str, float]:
    """Median ms per token of each mode and of their ratio over ``rounds`` interleaved rounds."""
    decode(PROMPTS[0], None)  # warm-up: weights paged in
    per_mode: dict[str, list[float]] = {"plain": [], "logprobs": []}
    ratios = []
    for r in range(rounds):
        order = (None, TOP) if r % 2 == 0 else (TOP, None)
        spent: dict[str, float] = {}
        for top in order:
            ms = tokens = 0.0
            for prompt in PROMPTS:
                m, t = decode(prompt, top)
                ms, tokens = ms + m, tokens + t
            spent["plain" if top is None else "logprobs"] = ms / tokens
        for mode, value in spent.items():
            per_mode[mode].append(value)
        ratios.append(spent["logprobs"] / spent["plain"])
    return {
        "plain_ms_per_token": statistics.median(per_mode["plain"]),
        "logprobs_ms_per_token": statistics.median(per_mode["logprobs"]),
        "ratio": statistics.median(ratios),
    }


def measure(key: str, rounds: int, engine: str) -> dict[str, Any]:
    from runners.llamacpp.batching import BatchedModel
    from runners.llamacpp.gguf_models import model_path
    from runners.llamacpp.settings import LlamaCppSettings

    path = str(model_path(key, None))
    row: dict[str, Any] = {
        "model": key,
        "engine": engine,
        "rounds": rounds,
        "tokens_per_round": len(PROMPTS) * MAX_TOKENS,
    }
    if engine == "batched":
        batched = BatchedModel(path, LlamaCppSettings.of(slots=1, n_ctx=512, n_threads=1))
        try:
            return {**row, "n_vocab": batched.n_vocab, **_rounds(lambda p, t: _decode(batched, p, t), rounds)}
        finally:
            batched.close()
    from runners.llamacpp.single_server import StepLogprobsLlama

    single = StepLogprobsLlama(path, n_ctx=512, n_threads=1, n_threads_batch=1, logits_all=False, verbose=False)
    try:
        return {**row, "n_vocab": single.n_vocab(), **_rounds(lambda p, t: _single(single, p, t), rounds)}
    finally:
        single.close()


def main(argv: Sequence[str] | None = None) -> int:
    from runners.llamacpp.gguf_models import MODELS

    parser = argparse.ArgumentParser(prog="python -m bench.llamacpp.logprobs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--engines", nargs="+", default=["batched", "llama_cpp"], choices=["batched", "llama_cpp"])
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    rows = [measure(key, args.rounds, engine) for engine in args.engines for key in args.models]
    print(f"| engine | model | n_vocab | plain ms/token | top_logprobs={TOP} ms/token | ratio |")
    print("|---|---|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['engine']} | {row['model']} | {row['n_vocab']} | {row['plain_ms_per_token']:.1f} | "
            f"{row['logprobs_ms_per_token']:.1f} | {row['ratio']:.3f}× |"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
