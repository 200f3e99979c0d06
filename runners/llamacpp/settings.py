"""The settings block of a managed llama.cpp backend (``type: llamacpp``), sized to the machine.

Its servers are started by the run (:mod:`runners.llamacpp.replicas`) on loopback ports assigned
when they start, so the block has no ``base_url``; requests go through the OpenAI-compatible runner.

This block is the one place a llama.cpp option is declared, with its default and its limits. It is
built once from the pool file and handed whole down the chain — replicas, server launcher, the
batched server's config file, the batching engine — so a new option is a field here plus the code
that uses it, and nothing in between copies it or its default: declare it with :func:`option` (its
default and limits; pools that do not name it keep their fingerprint), read it in
:func:`runners.llamacpp.server.llama_cpp_model_fields` for llama-cpp-python's server and in
:class:`runners.llamacpp.batching.BatchedModel` for the batched engine, and give it a row in the
table of docs/pool-file.md.
"""

from __future__ import annotations

import os
from typing import Any, Literal, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator

from runners.llamacpp.engines import Engine
from runners.settings import MAX_CONCURRENCY, BackendSettings

MAX_REPLICAS = 16  # per llamacpp backend: each replica holds its own copy of the weights
MAX_SLOTS = 64  # per batched server: requests one model decodes together
# Sequences the batched engine decodes per step, per model, when a pool does not say: 4 reached
# 1.45-1.57x one sequence on 2 cores, 8 no more (bench/README.md, "llamacpp.throughput").
DEFAULT_SLOTS = 4
# Threads of llama-cpp-python's server when it runs alone and the file leaves n_threads out; the
# sizing keeps n_threads unset there (pools planned that way keep their fingerprint).
SINGLE_SERVER_THREADS = 2


def _available_cpus() -> int:
    """Cores this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def _positive_int(value: Any) -> int | None:
    """``value`` if the schema will accept it as a count (bools are not counts), else None."""
    return value if type(value) is int and value >= 1 else None


def option(default: Any, **limits: Any) -> Any:
    """A llama.cpp option's field: its default and limits, left out of dumps at its default, so a pool
    file that does not name it keeps its fingerprint and its runs still resume."""
    return Field(default=default, exclude_if=lambda value: value == default, **limits)


class LlamaCppSettings(BackendSettings):
    """The managed local llama.cpp servers; their URLs are assigned when they start, so none here.

    ``engine`` picks the server. ``batched`` (the default, ``runners.llamacpp.batched_server``)
    decodes up to ``slots`` requests per model in one step: a decode step of a small model is
    bound by memory bandwidth, so on 2 cores one 2-thread batched server gives 1.45x (Qwen2.5-0.5B)
    and 1.57x (Gemma-3-270M) the tokens per second of two 1-thread single-request servers, and the
    same answers as llama-cpp-python's server when it decodes one request at a time.
    ``llama_cpp`` is llama-cpp-python's own server (``python -m llama_cpp.server``), which answers
    one request at a time, so throughput comes from ``replicas`` of it behind one lane.
    Left out (or null), the settings are sized to the machine when the file is loaded:

    * batched: ``replicas`` 1, ``n_threads`` cores // replicas, ``slots`` 4, ``max_concurrency``
      replicas x slots;
    * llama_cpp: ``replicas`` cores // ``n_threads`` (1 thread each when ``n_threads`` is unset),
      at least 1, at most :data:`MAX_REPLICAS` and at most an explicit ``max_concurrency``;
      ``n_threads`` 1 with several replicas, with one unset (the managed server's 2);
      ``max_concurrency`` = ``replicas``.

    Fewer requests in flight than replicas would leave replicas idle and is an error.
    ``replicas: 1``, ``slots: 1`` and ``engine: llama_cpp`` are left out of dumps (and so of the
    pool fingerprint), so runs planned with llama-cpp-python's server before engines existed still
    resume with ``engine: llama_cpp``.
    """

    summary = "managed local"
    type: Literal["llamacpp"]
    engine: Engine = Field(default="batched", exclude_if=lambda e: e == "llama_cpp")
    # declared before max_concurrency, whose check reads them
    replicas: int = option(1, ge=1, le=MAX_REPLICAS)
    slots: int = option(1, ge=1, le=MAX_SLOTS)
    max_concurrency: int = Field(default=1, ge=1, le=MAX_CONCURRENCY)
    n_ctx: int = Field(default=2048, ge=128)  # per slot
    n_threads: int | None = Field(default=None, ge=1)
    # How a judge's verdict schema constrains decoding: a grammar built from it (both engines), or none.
    structured_output: Literal["grammar", "none"] = option("none")
    # Greedy answers independent of which other requests share the server: the batched engine decodes
    # one request per step and reads every prompt afresh (see runners.llamacpp.batching).
    deterministic: bool = option(False)

    @classmethod
    def of(cls, **keys: Any) -> Self:
        """The block a pool file with these keys gives (``type`` implied, the rest sized to the machine),
        for starting servers without a pool file: ``LlamaCppSettings.of(engine="llama_cpp", n_ctx=512)``."""
        return cls.model_validate({"type": "llamacpp", **keys})

    def runner_options(self) -> dict[str, Any]:
        return {"structured_output": self.structured_output}

    def token_logprobs(self) -> bool:
        """Both engines return them, from the logits row of each sampled token (runners.llamacpp.batching,
        runners.llamacpp.single_server)."""
        return True

    @property
    def threads(self) -> int:
        """Threads each server decodes with: ``n_threads``, or :data:`SINGLE_SERVER_THREADS` where the
        sizing left it unset."""
        return self.n_threads or SINGLE_SERVER_THREADS

    def to_json(self) -> dict[str, Any]:
        """Every field of the block, defaults included, for another process to rebuild exactly this
        block with ``LlamaCppSettings.model_validate`` (a dump leaves some defaults out, and the sizing
        would fill them anew). Fields a pool adds to a backend (``price``, ``node``) are not the
        servers' business and stay out."""
        return {name: getattr(self, name) for name in LlamaCppSettings.model_fields}

    @model_validator(mode="before")
    @classmethod
    def _size_to_the_machine(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        replicas = data.get("replicas")
        if replicas is not None and not 1 <= (_positive_int(replicas) or 0) <= MAX_REPLICAS:
            return data  # a bad value: the field check reports it
        if data.get("engine", "batched") == "batched":
            return cls._size_batched(data, replicas or 1)
        if replicas is None:
            threads = _positive_int(data.get("n_threads")) or 1
            replicas = min(MAX_REPLICAS, max(1, _available_cpus() // threads))
            replicas = min(replicas, _positive_int(data.get("max_concurrency")) or replicas)
        sized = {**data, "replicas": replicas}
        if replicas > 1 and data.get("n_threads") is None:
            sized["n_threads"] = 1
        if "max_concurrency" not in data:
            sized["max_concurrency"] = replicas
        return sized

    @staticmethod
    def _size_batched(data: dict[str, Any], replicas: int) -> dict[str, Any]:
        sized = {**data, "replicas": replicas}
        if data.get("n_threads") is None:
            sized["n_threads"] = max(1, _available_cpus() // replicas)
        if data.get("slots") is None:
            sized["slots"] = DEFAULT_SLOTS
        slots = _positive_int(sized["slots"])
        if "max_concurrency" not in data and slots is not None:
            sized["max_concurrency"] = min(MAX_CONCURRENCY, replicas * slots)
        return sized

    @field_validator("slots")
    @classmethod
    def _one_slot_for_llama_cpp(cls, value: int, info: ValidationInfo) -> int:
        if info.data.get("engine") == "llama_cpp" and value != 1:
            raise ValueError(
                f"{value} slots need engine: batched; llama_cpp's server answers one request at a "
                "time (use replicas for more)"
            )
        return value

    @field_validator("deterministic")
    @classmethod
    def _deterministic_needs_batched(cls, value: bool, info: ValidationInfo) -> bool:
        if value and info.data.get("engine") == "llama_cpp":
            raise ValueError(
                "deterministic: true needs engine: batched; llama_cpp's server reuses the previous "
                "request's cached prompt, so its answers depend on what it answered before"
            )
        return value

    @field_validator("max_concurrency")
    @classmethod
    def _a_request_for_every_replica(cls, value: int, info: ValidationInfo) -> int:
        replicas = info.data.get("replicas")
        if isinstance(replicas, int) and value < replicas:
            raise ValueError(
                f"{value} is fewer than replicas ({replicas}), so {replicas - value} replica(s) would "
                f"never get a request; set max_concurrency to at least {replicas} or replicas to {value}"
            )
        return value
