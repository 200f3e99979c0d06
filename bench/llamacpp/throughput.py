"""Local throughput: one 2-thread llama.cpp server against 1-thread replicas and the batched server.

For each local model of the pool (``model_pool.yaml``: the three GGUFs), the same fixed prompt set
(24 short clinical questions, ``max_tokens`` 64, temperature 0) goes through

(a) **single**: one managed server with 2 threads, requests one at a time (concurrency 1), which
    is how a llamacpp backend ran before replicas;
(b) **replicas**: the default replica layout for this machine (what a llamacpp backend with
    ``replicas``, ``n_threads`` and ``max_concurrency`` left out gets: one 1-thread server per core)
    behind :class:`~runners.balanced.BalancedRunner`, with concurrency = replicas (``engine:
    llama_cpp``);
(c) **batched**: the default engine as sized for this machine (``engine: batched``: one server
    with every core decoding ``slots`` requests per step), with concurrency = ``max_concurrency``.

The layouts run in this process, model by model, back to back, so drift from other
load on a shared machine hits both alike. Every server gets one warm-up request per model first
(the first request after a model load pages the weights in and is several times slower).

Reported per model and over all models:

* ``tok/s`` = completion tokens (``usage``) / wall time of the batch;
* ``speed-up`` = a layout's tok/s / single tok/s (goal ≥ 1.6 on 2 cores);
* ``util`` = Σ server generation time / (wall × servers), the server time read from each
  server's own log (``timings_since``: prompt eval + decode, no HTTP); goal ≥ 0.95 for replicas.
  Not given for batched: its requests share steps, so their times overlap;
* ``same`` = answers identical in both layouts. The thread count does not change a greedy answer
  (checked: 1 and 2 threads agree 24/24 with the same request order); a server's previous request
  does, because llama.cpp reuses the KV cache of a prompt prefix shared with it, computed in another
  batch shape, and the layouts give each server a different history (gemma3-270m: 22/24 agree).

    python -m bench.llamacpp.throughput                     # the pool's 3 local models, minutes on an idle
                                                         # 2-core machine, far longer under other load
    python -m bench.llamacpp.throughput --models smollm2-135m --prompts 8
    python -m bench.llamacpp.throughput --replicas 2 --slots 4 --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from bench.harness.measure import write_json_report
from pool.config import load_pool
from pool.config.schema import LlamaCppBackend, Model
from runners.balanced import BalancedRunner
from runners.base import GenerationRequest, GenerationResponse, Runner
from runners.llamacpp.engines import Engine
from runners.llamacpp.replicas import ManagedLlamaReplicas
from runners.llamacpp.server import ServedModel
from runners.llamacpp.settings import LlamaCppSettings
from runners.registry import make_runner

QUESTIONS = (
    "What are the classic symptoms of type 2 diabetes?",
    "How does aspirin reduce the risk of a heart attack?",
    "What is the first-line treatment for uncomplicated hypertension?",
    "Name three warning signs of a stroke.",
    "What does a high TSH level usually indicate?",
    "Why should warfarin patients avoid sudden changes in vitamin K intake?",
    "What is the difference between a virus and a bacterium?",
    "How is iron-deficiency anaemia usually treated?",
    "What are common side effects of metformin?",
    "When should a fever in an infant be seen by a doctor?",
    "What is the normal resting heart rate for an adult?",
    "How does asthma narrow the airways?",
    "What is the main risk of untreated sleep apnoea?",
    "Why are antibiotics not useful for the common cold?",
    "What lifestyle changes lower LDL cholesterol?",
    "What is the purpose of an HbA1c test?",
    "Name two causes of acute kidney injury.",
    "What are the symptoms of appendicitis?",
    "How does insulin lower blood glucose?",
    "What is a normal adult blood pressure reading?",
    "Why is folic acid recommended before pregnancy?",
    "What does the liver enzyme ALT measure?",
    "What are the signs of dehydration in older adults?",
    "How is a migraine different from a tension headache?",
)
WARM_UP = "In one sentence, what is a pulse?"
LOCAL_DEFAULT = LlamaCppBackend.model_validate({"type": "llamacpp"})  # sized to this machine: batched
REPLICAS_DEFAULT = LlamaCppBackend.model_validate({"type": "llamacpp", "engine": "llama_cpp"})


@dataclass(frozen=True)
class Layout:
    """How a backend is served: ``replicas`` servers of ``n_threads`` threads, ``concurrency`` in flight."""

    name: str
    replicas: int
    n_threads: int
    concurrency: int
    engine: Engine = "llama_cpp"
    slots: int = 1


@dataclass
class Row:
    model: str
    layout: str
    replicas: int
    n_threads: int
    concurrency: int
    requests: int
    completion_tokens: int
    wall_s: float
    server_s: float
    per_replica: tuple[int, ...]

    @property
    def tokens_per_s(self) -> float:
        return self.completion_tokens / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def utilisation(self) -> float | None:
        """None for the batched engine: its requests share decode steps, so their times overlap."""
        if self.layout == "batched" or self.wall_s <= 0:
            return None
        return self.server_s / (self.wall_s * self.replicas)


def request_for(model: Model, question: str, max_tokens: int) -> GenerationRequest:
    """The request the pool would send for a bare question (base models get a Question/Answer prompt)."""
    params = replace(model.generation_params(), temperature=0.0, max_tokens=max_tokens, seed=None)
    if model.mode == "completion":
        return GenerationRequest(
            model=model.model, mode="completion", prompt=f"Question: {question}\nAnswer:", params=params
        )
    return GenerationRequest(model=model.model, messages=({"role": "user", "content": question},), params=params)


async def _batch(runner: Runner, requests: Sequence[GenerationRequest], concurrency: int) -> list[GenerationResponse]:
    limit = asyncio.Semaphore(concurrency)

    async def one(request: GenerationRequest) -> GenerationResponse:
        async with limit:
            return await runner.generate(request)

    return await asyncio.gather(*(one(r) for r in requests))


class ServedLayout:
    """A layout's servers and the runners in front of them (one per replica, plus the balancer)."""

    def __init__(self, layout: Layout, models: Sequence[Model], log_dir: Path) -> None:
        served = list({m.model: ServedModel(m.model, m.gguf or "") for m in models}.values())
        self.layout = layout
        settings = LlamaCppSettings.of(
            engine=layout.engine, replicas=layout.replicas, n_threads=layout.n_threads, slots=layout.slots
        )
        self.group = ManagedLlamaReplicas(served, settings, log_path=log_dir / f"llamacpp-{layout.name}.log")
        self.runners: list[Runner] = []
        self.balancer: BalancedRunner | None = None

    async def start(self) -> None:
        await self.group.start()
        self.runners = [make_runner("llamacpp", url, max_retries=0, timeout_s=600) for url in self.group.base_urls]
        self.balancer = BalancedRunner(self.runners)

    async def stop(self) -> None:
        try:
            if self.balancer is not None:
                await self.balancer.aclose()
        finally:
            await self.group.stop()

    async def warm_up(self, model: Model, max_tokens: int) -> None:
        """One request to every replica directly: loads the model there and pages its weights in."""
        request = request_for(model, WARM_UP, max_tokens)
        answers = await asyncio.gather(*(r.generate(request) for r in self.runners))
        _check(answers, f"{self.layout.name} warm-up of {model.name}")

    async def measure(self, model: Model, requests: Sequence[GenerationRequest]) -> tuple[Row, list[str]]:
        assert self.balancer is not None
        offsets = self.group.log_offsets()
        sent_before = self.balancer.sent
        start = time.perf_counter()
        answers = await _batch(self.balancer, requests, self.layout.concurrency)
        wall = time.perf_counter() - start
        _check(answers, f"{self.layout.name} on {model.name}")
        timings = self.group.timings_since(offsets)
        if [len(t) for t in timings] != [b - a for a, b in zip(sent_before, self.balancer.sent, strict=True)]:
            raise RuntimeError(
                f"{self.layout.name}: server logs list {[len(t) for t in timings]} generations, "
                f"but {self.balancer.sent} requests were sent; see {self.group.log_paths}"
            )
        row = Row(
            model.name,
            self.layout.name,
            self.layout.replicas,
            self.layout.n_threads,
            self.layout.concurrency,
            len(requests),
            sum(a.completion_tokens or 0 for a in answers),
            wall,
            sum(t.total_s for per_server in timings for t in per_server),
            tuple(b - a for a, b in zip(sent_before, self.balancer.sent, strict=True)),
        )
        return row, [a.text for a in answers]


def _check(answers: Sequence[GenerationResponse], where: str) -> None:
    failed = [a for a in answers if not a.ok]
    if failed:
        raise RuntimeError(
            f"{where}: {len(failed)} of {len(answers)} requests failed, first: "
            f"{failed[0].error_class}: {failed[0].error_detail}"
        )


async def run(
    models: Sequence[Model], layouts: Sequence[Layout], prompts: int, max_tokens: int, log_dir: Path
) -> tuple[list[Row], dict[str, int]]:
    """Every model through every layout, back to back; rows, and per model how many answers all layouts share."""
    served = [ServedLayout(layout, models, log_dir) for layout in layouts]
    rows: list[Row] = []
    same: dict[str, int] = {}
    try:
        await asyncio.gather(*(s.start() for s in served))
        for model in models:
            requests = [request_for(model, q, max_tokens) for q in QUESTIONS[:prompts]]
            for layout in served:
                await layout.warm_up(model, max_tokens)
            texts = []
            for layout in served:
                row, answers = await layout.measure(model, requests)
                rows.append(row)
                texts.append(answers)
                print(
                    f"  {row.model:<20} {row.layout:<9} {row.tokens_per_s:7.1f} tok/s  "
                    f"util {_util(row)}  ({row.completion_tokens} tokens in {row.wall_s:.1f} s)",
                    flush=True,
                )
            same[model.name] = sum(len(set(group)) == 1 for group in zip(*texts, strict=True))
    finally:
        await asyncio.gather(*(s.stop() for s in served), return_exceptions=True)
    return rows, same


def _util(row: Row) -> str:
    util = row.utilisation
    return "   —" if util is None else f"{util:.3f}"


def summarise(rows: Sequence[Row], same: dict[str, int], prompts: int) -> str:
    """Per model and overall: tok/s of each layout, its speed-up over single and its utilisation."""
    names = list(dict.fromkeys(r.layout for r in rows))
    lines = [
        f"{'model':<24} "
        + " ".join(f"{n + ' tok/s':>14}" for n in names)
        + " "
        + " ".join(f"{n + ' ×':>11}" for n in names[1:])
        + " "
        + " ".join(f"{'util ' + n:>13}" for n in names)
        + f" {'same':>6}"
    ]
    groups = [(m, [r for r in rows if r.model == m]) for m in dict.fromkeys(r.model for r in rows)]
    total = [Row("all", r.layout, r.replicas, r.n_threads, r.concurrency, 0, 0, 0.0, 0.0, ()) for r in groups[0][1]]
    for model, measured in groups:
        lines.append(_line(model, measured) + f" {same[model]:>3}/{prompts}")
        for acc, row in zip(total, measured, strict=True):
            acc.requests += row.requests
            acc.completion_tokens += row.completion_tokens
            acc.wall_s += row.wall_s
            acc.server_s += row.server_s
    lines.append(_line("all (Σ tokens / Σ wall)", total))
    return "\n".join(lines)


def _line(label: str, measured: Sequence[Row]) -> str:
    base = measured[0].tokens_per_s
    return (
        f"{label:<24} "
        + " ".join(f"{r.tokens_per_s:14.1f}" for r in measured)
        + " "
        + " ".join(f"{r.tokens_per_s / base:10.2f}x" for r in measured[1:])
        + " "
        + " ".join(f"{_util(r):>13}" for r in measured)
    )


def _load_average() -> str:
    """1-, 5- and 15-minute load averages: how busy the shared machine was around the run."""
    return "/".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.llamacpp.throughput",
        description="Tokens per second of one 2-thread llama.cpp server (concurrency 1) against the default "
        "1-thread replicas behind one balancer (concurrency = replicas), on the pool's local models.",
    )
    parser.add_argument("--pool", default="model_pool.yaml", help="pool whose llamacpp models are measured")
    parser.add_argument("--models", help="comma-separated model names (default: every enabled llamacpp model)")
    parser.add_argument(
        "--prompts",
        type=int,
        default=len(QUESTIONS),
        choices=range(1, len(QUESTIONS) + 1),
        metavar=f"1..{len(QUESTIONS)}",
        help="how many of the fixed questions to send",
    )
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument(
        "--replicas", type=int, help=f"replicas in layout (b) (default for this machine: {REPLICAS_DEFAULT.replicas})"
    )
    parser.add_argument("--slots", type=int, help=f"slots of layout (c) (default: {LOCAL_DEFAULT.slots})")
    parser.add_argument("--json", metavar="PATH", help="also write rows and machine details as JSON")
    return parser.parse_args(argv)


def local_models(pool: str, names: str | None) -> list[Model]:
    """The pool's enabled ``llamacpp`` models to measure: all, or the comma-separated ``names``;
    ValueError naming what is wrong (an unknown name, or none to measure)."""
    config = load_pool(pool)
    local = [m for m in config.enabled_models() if isinstance(config.backend_of(m), LlamaCppBackend)]
    if names:
        wanted = names.split(",")
        unknown = sorted(set(wanted) - {m.name for m in local})
        if unknown:
            raise ValueError(
                f"--models: {', '.join(unknown)} not among {pool}'s enabled llamacpp models "
                f"({', '.join(m.name for m in local)})"
            )
        local = [m for m in local if m.name in wanted]
    if not local:
        raise ValueError(f"{pool} has no enabled llamacpp model to measure")
    return local


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        local = local_models(args.pool, args.models)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    replicas = args.replicas or REPLICAS_DEFAULT.replicas
    slots = args.slots or LOCAL_DEFAULT.slots
    batched_threads = LOCAL_DEFAULT.threads
    layouts = [
        Layout("single", 1, 2, 1),
        Layout("replicas", replicas, 1, replicas),
        Layout("batched", 1, batched_threads, slots, engine="batched", slots=slots),
    ]
    machine = {
        "cpus": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_before": _load_average(),
    }
    started, start = datetime.datetime.now().astimezone(), time.perf_counter()
    print(
        f"local throughput {started:%Y-%m-%d %H:%M %Z}; {machine['cpus']} cpus; models "
        f"{', '.join(m.name for m in local)}; {args.prompts} prompts, max_tokens {args.max_tokens}; layouts "
        + "; ".join(
            f"{lay.name}: {lay.replicas}×{lay.n_threads} thread(s), {lay.slots} slot(s), concurrency {lay.concurrency}"
            for lay in layouts
        ),
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="medpool-throughput-") as tmp:
        try:
            rows, same = asyncio.run(run(local, layouts, args.prompts, args.max_tokens, Path(tmp)))
        except Exception as exc:  # noqa: BLE001 - a bench reports what failed and exits 1
            print(f"FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1
    total_s = time.perf_counter() - start
    machine["load_average_after"] = _load_average()
    print()
    print(summarise(rows, same, args.prompts))
    print(
        f"\ngoals: speed-up ≥ 1.6x, replicas utilisation ≥ 0.95; total {total_s:.1f} s; load average "
        f"{machine['load_average_before']} before, {machine['load_average_after']} after (other work on the machine)"
    )
    if args.json:
        write_json_report(
            args.json,
            "bench.llamacpp.throughput",
            started,
            quick=False,
            machine=machine,
            total_s=total_s,
            sizes={"prompts": args.prompts, "max_tokens": args.max_tokens, "layouts": [asdict(lay) for lay in layouts]},
            rows=[
                {
                    **asdict(r),
                    "tokens_per_s": r.tokens_per_s,
                    "utilisation": r.utilisation,
                    "same_answers": same[r.model],
                }
                for r in rows
            ],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
