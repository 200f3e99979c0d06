"""What ``deterministic: true`` costs, and whether it holds: the batched engine with and without it.

For each local model of the pool, the same fixed prompt set (the short clinical questions of
:mod:`bench.llamacpp.throughput`, temperature 0) goes to two batched servers of the same size
(``slots`` per step, ``--threads`` each, 2 unless told), one with ``deterministic: true``:

* **throughput**: completion tokens / wall time with ``slots`` requests in flight, three rounds,
  the two servers alternating within each round (which goes first alternates too), best round of
  each; ``ratio`` = deterministic tok/s / default tok/s (the baseline is the default engine, in the
  same process);
* **invariance**: each server's answers in every round against its own answers one request at a
  time (concurrency 1): ``same`` counts the prompts whose answer was identical in all of them.
  ``deterministic`` must give all of them (exit 1 otherwise); the default engine's count shows what
  batching alone changes.

    python -m bench.llamacpp.deterministic                                 # the pool's local models
    python -m bench.llamacpp.deterministic --models gemma3-270m --prompts 8 --max-tokens 32 --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.harness.measure import write_json_report
from bench.llamacpp.throughput import (
    QUESTIONS,
    WARM_UP,
    _batch,
    _check,
    _load_average,
    local_models,
    request_for,
)
from pool.config.schema import Model
from runners.base import GenerationRequest, Runner
from runners.llamacpp.replicas import ManagedLlamaReplicas
from runners.llamacpp.server import ServedModel
from runners.llamacpp.settings import DEFAULT_SLOTS, LlamaCppSettings
from runners.registry import make_runner

ROUNDS = 3
MODES = ("default", "deterministic")


@dataclass
class Row:
    model: str
    mode: str
    slots: int
    requests: int
    completion_tokens: int
    best_wall_s: float
    rounds_s: tuple[float, ...]
    same: int  # prompts answered identically in every round and one at a time

    @property
    def tokens_per_s(self) -> float:
        return self.completion_tokens / self.best_wall_s if self.best_wall_s > 0 else 0.0


class Server:
    """One batched server for every model, with or without ``deterministic``."""

    def __init__(self, mode: str, models: Sequence[Model], slots: int, threads: int, log_dir: Path) -> None:
        served = list({m.model: ServedModel(m.model, m.gguf or "") for m in models}.values())
        settings = LlamaCppSettings.of(slots=slots, n_threads=threads, deterministic=mode == "deterministic")
        self.mode = mode
        self.group = ManagedLlamaReplicas(served, settings, log_path=log_dir / f"llamacpp-{mode}.log")
        self.runner: Runner | None = None

    async def start(self) -> None:
        await self.group.start()
        self.runner = make_runner("llamacpp", self.group.base_urls[0], max_retries=0, timeout_s=1200)

    async def stop(self) -> None:
        try:
            if self.runner is not None:
                await self.runner.aclose()
        finally:
            await self.group.stop()

    async def answers(self, requests: Sequence[GenerationRequest], concurrency: int) -> tuple[float, int, list[str]]:
        """Wall seconds, completion tokens and texts of ``requests`` with ``concurrency`` in flight."""
        assert self.runner is not None
        start = time.perf_counter()
        answers = await _batch(self.runner, requests, concurrency)
        wall = time.perf_counter() - start
        _check(answers, f"{self.mode} server")
        return wall, sum(a.completion_tokens or 0 for a in answers), [a.text for a in answers]


async def run(
    models: Sequence[Model], prompts: int, max_tokens: int, slots: int, threads: int, log_dir: Path
) -> list[Row]:
    servers = [Server(mode, models, slots, threads, log_dir) for mode in MODES]
    rows: list[Row] = []
    try:
        await asyncio.gather(*(s.start() for s in servers))
        for model in models:
            requests = [request_for(model, q, max_tokens) for q in QUESTIONS[:prompts]]
            measured: dict[str, list[tuple[float, int]]] = {m: [] for m in MODES}  # (wall, tokens) per round
            texts: dict[str, list[list[str]]] = {m: [] for m in MODES}
            for server in servers:
                await server.answers([request_for(model, WARM_UP, max_tokens)], 1)
                texts[server.mode].append((await server.answers(requests, 1))[2])  # one at a time
            for r in range(ROUNDS):
                for server in servers if r % 2 == 0 else servers[::-1]:
                    wall, n, answers = await server.answers(requests, slots)
                    measured[server.mode].append((wall, n))
                    texts[server.mode].append(answers)
                    print(f"  {model.name:<20} {server.mode:<13} round {r + 1}: {n / wall:6.1f} tok/s", flush=True)
            for mode in MODES:
                same = sum(len(set(group)) == 1 for group in zip(*texts[mode], strict=True))
                wall, n = max(measured[mode], key=lambda m: m[1] / m[0])  # the best round's tokens per second
                rounds = tuple(w for w, _ in measured[mode])
                rows.append(Row(model.name, mode, slots, prompts, n, wall, rounds, same))
    finally:
        await asyncio.gather(*(s.stop() for s in servers), return_exceptions=True)
    return rows


def summarise(rows: Sequence[Row], prompts: int) -> str:
    lines = [
        f"{'model':<24} {'default tok/s':>14} {'determ. tok/s':>14} {'ratio':>7} "
        f"{'same default':>13} {'same determ.':>13}"
    ]
    for name in dict.fromkeys(r.model for r in rows):
        base, det = (next(r for r in rows if r.model == name and r.mode == m) for m in MODES)
        lines.append(
            f"{name:<24} {base.tokens_per_s:14.1f} {det.tokens_per_s:14.1f} "
            f"{det.tokens_per_s / base.tokens_per_s:6.2f}x {base.same:>9}/{prompts} {det.same:>9}/{prompts}"
        )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.llamacpp.deterministic",
        description="Tokens per second of the batched llama.cpp engine with deterministic: true against without, "
        "and whether each gives the same greedy answers in a batch as alone.",
    )
    parser.add_argument("--pool", default="model_pool.yaml", help="pool whose llamacpp models are measured")
    parser.add_argument("--models", help="comma-separated model names (default: every enabled llamacpp model)")
    parser.add_argument(
        "--prompts", type=int, default=8, choices=range(1, len(QUESTIONS) + 1), metavar=f"1..{len(QUESTIONS)}"
    )
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--slots", type=int, default=DEFAULT_SLOTS, help="slots of both servers = requests in flight")
    parser.add_argument(
        "--threads", type=int, default=2, help="threads of each server (1 on a machine busy with other work)"
    )
    parser.add_argument("--json", metavar="PATH", help="also write rows and machine details as JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        local = local_models(args.pool, args.models)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    machine = {"cpus": os.cpu_count(), "load_average_before": _load_average()}
    started, start = datetime.datetime.now().astimezone(), time.perf_counter()
    print(
        f"deterministic vs default batched engine {started:%Y-%m-%d %H:%M %Z}; "
        f"models {', '.join(m.name for m in local)}; "
        f"{args.prompts} prompts, max_tokens {args.max_tokens}, {args.slots} slots in flight, "
        f"{args.threads} thread(s), "
        f"best of {ROUNDS}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="medpool-deterministic-") as tmp:
        try:
            rows = asyncio.run(run(local, args.prompts, args.max_tokens, args.slots, args.threads, Path(tmp)))
        except Exception as exc:  # noqa: BLE001 - a bench reports what failed and exits 1
            print(f"FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
    total_s = time.perf_counter() - start
    machine["load_average_after"] = _load_average()
    print()
    print(summarise(rows, args.prompts))
    print(
        f"\ntotal {total_s:.1f} s; load average {machine['load_average_before']} before, "
        f"{machine['load_average_after']} after"
    )
    if args.json:
        write_json_report(
            args.json,
            "bench.llamacpp.deterministic",
            started,
            quick=False,
            machine=machine,
            total_s=total_s,
            sizes={
                "prompts": args.prompts,
                "max_tokens": args.max_tokens,
                "slots": args.slots,
                "threads": args.threads,
                "rounds": ROUNDS,
            },
            rows=[{**asdict(r), "tokens_per_s": r.tokens_per_s} for r in rows],
        )
    broken = [r.model for r in rows if r.mode == "deterministic" and r.same != args.prompts]
    if broken:
        print(f"FAILED: deterministic answers moved with the batch for {', '.join(broken)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
