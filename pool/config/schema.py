"""The ``model_pool.yaml`` schema: backends, defaults, models and the judge, as pydantic models.

Every block rejects unknown keys and uses strict types, so a typo or a quoted number is an error
rather than a silently ignored or coerced value. Cross-references (a model's backend, the judge's
model, unique names) are checked in :meth:`PoolConfig._resolve`, which also folds ``defaults:``
into each model, so ``config.models`` are complete and need no further merging.

Booleans (``enabled``, ``think``) accept YAML ``true``/``false`` and also the words
``yes``/``no``/``on``/``off`` in any case. The loader (:mod:`pool.config.yaml_lines`) keeps those words
as strings, so ``think: off`` means ``False`` here while ``name: no`` stays the text ``"no"``.

``think`` (Ollama's reasoning switch: a bool, or ``low``/``medium``/``high``) is rejected on a
model or inline judge whose backend is not ``ollama``: other servers would ignore or refuse it,
and a silently ignored setting is worse than an error. ``defaults.think`` applies to
ollama-backed models only.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from pool.config.refs import reference_issues
from pool.config.values import (
    KNOWN_GGUF,
    check_api_key_env,
    check_base_url,
    check_model_name,
    parse_think,
    parse_yaml_bool,
)
from runners.base import GenerationParams, Mode
from runners.llamacpp_engines import DEFAULT_SLOTS, Engine
from runners.registry import runner_class

ThinkSetting = bool | Literal["low", "medium", "high"]
YamlBool = Annotated[bool, PlainValidator(parse_yaml_bool)]
Think = Annotated[ThinkSetting | None, PlainValidator(parse_think)]
ModelName = Annotated[str, AfterValidator(check_model_name)]
BackendName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
EnvVarName = Annotated[str, AfterValidator(check_api_key_env)]
BaseUrl = Annotated[str, AfterValidator(check_base_url)]
StopSequence = Annotated[str, StringConstraints(min_length=1)]
BackendType = Literal["openai", "ollama", "llamacpp"]


class _Block(BaseModel):
    # allow_inf_nan=False: YAML reads .inf/.nan as floats, and no setting here means "forever"
    # or "undefined". hide_input_in_errors: a ValidationError printed raw (outside
    # pool.config.errors) must not echo values such as a pasted key.
    model_config = ConfigDict(
        extra="forbid", strict=True, frozen=True, allow_inf_nan=False, hide_input_in_errors=True
    )


MAX_TIMEOUT_S = 3600  # one attempt; longer waits look like a hung server, not a slow answer
MAX_CONCURRENCY = 256  # per backend; beyond this a typo, not a plan (and file handles run out)
RESPONSE_BYTES_RANGE = (1024, 1024**3)  # 1 KiB .. 1 GiB
ANSWER_CHARS_RANGE = (1_000, 10_000_000)


class Price(_Block):
    """What a model's tokens cost, in any one currency per million tokens (USD by convention).

    Prices change what a run costs, never what it answers: they are left out of the pool
    fingerprint and of model identities, so a price change neither blocks a resume nor breaks a
    trend line."""

    input_per_million: float = Field(ge=0)
    output_per_million: float = Field(ge=0)


# Fields that shape no answer, left out of fingerprints and identities.
NOT_RESULT_SHAPING = frozenset({"price", "node"})


class _BackendBase(_Block):
    """Settings every backend type has: limits, retries and caps on what comes back.

    ``max_response_bytes`` caps an HTTP response body after decompression (a runaway or
    hostile server cannot fill memory); ``max_answer_chars`` caps an answer's text: longer
    answers are recorded as ``oversize`` and never sent to the judge.
    """

    # Left out, timeout_s (and max_concurrency of a remote backend) is the runner's own default
    # (``default_timeout_s`` on the class that serves the type, see runners.registry).
    timeout_s: float = Field(gt=0, le=MAX_TIMEOUT_S)
    max_retries: int = Field(default=3, ge=0, le=20)
    requests_per_minute: float | None = Field(default=None, gt=0)
    max_response_bytes: int = Field(
        default=8 * 1024**2, ge=RESPONSE_BYTES_RANGE[0], le=RESPONSE_BYTES_RANGE[1]
    )
    max_answer_chars: int = Field(
        default=200_000, ge=ANSWER_CHARS_RANGE[0], le=ANSWER_CHARS_RANGE[1]
    )
    price: Price | None = None  # every model on this backend, unless the model sets its own
    # Ray executor only: the node (its IP, a Ray ``node:<ip>`` resource) this backend's lane actor must run on
    node: str | None = Field(default=None, min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _runner_defaults(cls, data: Any) -> Any:
        """Keys left out take the defaults of the runner that serves the type (declared there once);
        a managed llama.cpp backend sizes ``max_concurrency`` to its servers instead."""
        if not isinstance(data, dict) or not isinstance(data.get("type"), str):
            return data
        runner = runner_class(data["type"])
        if runner is None:
            return data  # an unknown type: the type check reports it
        filled = {"timeout_s": runner.default_timeout_s, **data}
        if data["type"] != "llamacpp":
            filled = {"max_concurrency": runner.default_max_concurrency, **filled}
        return filled


class OpenAIBackend(_BackendBase):
    """Any OpenAI-compatible server or API (DeepSeek, vLLM, llama.cpp you run yourself...)."""

    type: Literal["openai"]
    base_url: BaseUrl
    api_key_env: EnvVarName | None = None
    max_concurrency: int = Field(ge=1, le=MAX_CONCURRENCY)


class OllamaBackend(_BackendBase):
    type: Literal["ollama"]
    base_url: BaseUrl
    api_key_env: EnvVarName | None = None
    max_concurrency: int = Field(ge=1, le=MAX_CONCURRENCY)


MAX_REPLICAS = 16  # per llamacpp backend: each replica holds its own copy of the weights


def _available_cpus() -> int:
    """Cores this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def _positive_int(value: Any) -> int | None:
    """``value`` if the schema will accept it as a count (bools are not counts), else None."""
    return value if type(value) is int and value >= 1 else None


MAX_SLOTS = 64  # per batched server: requests one model decodes together


class LlamaCppBackend(_BackendBase):
    """The managed local llama.cpp servers; their URLs are assigned when they start, so none here.

    ``engine`` picks the server. ``batched`` (the default, ``runners.llamacpp_batched_server``)
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

    type: Literal["llamacpp"]
    engine: Engine = Field(default="batched", exclude_if=lambda e: e == "llama_cpp")
    # declared before max_concurrency, whose check reads them
    replicas: int = Field(default=1, ge=1, le=MAX_REPLICAS, exclude_if=lambda count: count == 1)
    slots: int = Field(default=1, ge=1, le=MAX_SLOTS, exclude_if=lambda count: count == 1)
    max_concurrency: int = Field(default=1, ge=1, le=MAX_CONCURRENCY)
    n_ctx: int = Field(default=2048, ge=128)
    n_threads: int | None = Field(default=None, ge=1)

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
            raise ValueError(f"{value} slots need engine: batched; llama_cpp's server answers one request at a "
                             "time (use replicas for more)")  # fmt: skip
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


Backend = Annotated[OpenAIBackend | OllamaBackend | LlamaCppBackend, Field(discriminator="type")]
BACKEND_CLASSES: dict[str, type[_Block]] = {
    "openai": OpenAIBackend,
    "ollama": OllamaBackend,
    "llamacpp": LlamaCppBackend,
}


class GenerationFields(_Block):
    """What shapes an answer; shared by ``defaults:``, models and the judge."""

    mode: Mode = "chat"  # "completion" for base models: raw prompt, no chat template
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=512, ge=1)
    stop: tuple[StopSequence, ...] = Field(default=(), strict=False)
    top_p: float | None = Field(default=None, gt=0, le=1)
    seed: int | None = None
    think: Think = None


class Defaults(GenerationFields):
    """Values every model entry inherits unless it sets the key itself."""

    enabled: YamlBool = True


class Model(GenerationFields):
    """One pool member. After loading, ``defaults:`` are already folded in."""

    name: ModelName
    backend: str
    enabled: YamlBool = True
    model: str  # the id sent to the server; defaults to ``name``
    notes: str = ""
    gguf: str | None = None  # llamacpp only: a known key or a path to a .gguf file
    chat_format: str | None = None  # llamacpp only: llama-cpp-python chat format name
    price: Price | None = None  # overrides the backend's price

    @model_validator(mode="before")
    @classmethod
    def _model_id_defaults_to_name(cls, data: Any) -> Any:
        if isinstance(data, dict) and "model" not in data:
            name = data.get("name")  # a bad or missing name is reported on its own
            return {**data, "model": name if isinstance(name, str) else ""}
        return data

    def generation_params(self) -> GenerationParams:
        """The runner-level parameters (part of the answer cache key)."""
        return GenerationParams(
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            stop=tuple(self.stop),
            top_p=self.top_p,
            seed=self.seed,
            think=self.think,  # levels pass through to Ollama
        )


class Judge(_Block):
    """``model: NAME`` references a pool model; with ``backend:`` it is an inline definition.

    Referenced: the pool model as resolved (with defaults), then the keys set here on top.
    Inline: built-in defaults (not ``defaults:``, which is for candidates), then the keys here;
    ``model`` is then the server's model id and ``name`` defaults to ``judge``.
    Generation keys left empty (null) inherit, so a dumped config loads back the same.
    """

    model: str | None = None
    backend: str | None = None
    name: ModelName | None = None
    gguf: str | None = None
    chat_format: str | None = None
    notes: str = ""
    mode: Mode | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    stop: tuple[StopSequence, ...] | None = Field(default=None, strict=False)
    top_p: float | None = Field(default=None, gt=0, le=1)
    seed: int | None = None
    think: Think = None

    def generation_overrides(self) -> dict[str, Any]:
        return {
            k: getattr(self, k)
            for k in GenerationFields.model_fields
            if getattr(self, k) is not None
        }


class Execution(_Block):
    """Where the plan runs: ``local`` (asyncio lanes in this process) or ``ray`` (one actor per
    backend lane on a Ray cluster; ``ray_address`` as for ``ray.init``, e.g. ``auto``). The CLI's
    ``--executor`` / ``--ray-address`` override it. Results do not depend on it, so it is not part
    of a run's stored options: a run started locally may be resumed on a cluster."""

    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = Field(default=None, min_length=1)


class PoolConfig(_Block):
    """A validated pool; ``models`` already carry their defaults.

    Cross-reference problems (unknown backend, duplicate name, judge) are reported once every
    block is valid on its own, so a badly broken file may need two rounds of fixes.
    """

    backends: dict[BackendName, Backend] = Field(min_length=1)
    defaults: Defaults = Defaults()  # frozen, so sharing one instance is safe
    models: tuple[Model, ...] = Field(min_length=1, strict=False)
    judge: Judge | None = None
    execution: Execution = Execution()

    @field_validator("defaults", mode="before")
    @classmethod
    def _empty_defaults_block(cls, value: Any) -> Any:
        return {} if value is None else value  # `defaults:` with every line commented out

    @field_validator("execution", mode="before")
    @classmethod
    def _empty_execution_block(cls, value: Any) -> Any:
        return {} if value is None else value

    @model_validator(mode="wrap")
    @classmethod
    def _resolve(cls, data: Any, handler: Any) -> PoolConfig:
        config: PoolConfig = handler(data)
        issues = reference_issues(config)
        if issues:
            raise ValidationError.from_exception_data(cls.__name__, issues)
        return config.model_copy(
            update={"models": tuple(map(config._with_defaults, config.models))}
        )

    def _with_defaults(self, model: Model) -> Model:
        backend_type = self.backends[model.backend].type
        inherited = {
            key: getattr(self.defaults, key)
            for key in self.defaults.model_fields_set - model.model_fields_set
            if key in Model.model_fields and (key != "think" or backend_type == "ollama")
        }
        return model.model_copy(update=inherited)

    # ---- queries -------------------------------------------------------------------------

    def model(self, name: str) -> Model:
        for entry in self.models:
            if entry.name == name:
                return entry
        raise KeyError(
            f"no pool model '{name}'; pool models: {', '.join(m.name for m in self.models)}"
        )

    def enabled_models(self) -> tuple[Model, ...]:
        return tuple(m for m in self.models if m.enabled)

    def backend_of(self, model: Model) -> OpenAIBackend | OllamaBackend | LlamaCppBackend:
        return self.backends[model.backend]

    def price_of(self, model: Model) -> Price | None:
        """The model's own price, else its backend's, else None (unpriced: its cost is unknown, not 0)."""
        return model.price or self.backends[model.backend].price

    def judge_model(self) -> Model | None:
        """The judge as a complete :class:`Model` (see :class:`Judge` for the precedence)."""
        judge = self.judge
        if judge is None:
            return None
        overrides = judge.generation_overrides()
        if judge.backend is None:
            assert judge.model is not None  # checked at validation
            return self.model(judge.model).model_copy(update=overrides)
        name = judge.name or "judge"
        return Model(
            name=name,
            backend=judge.backend,
            model=judge.model or name,
            gguf=judge.gguf,
            chat_format=judge.chat_format,
            notes=judge.notes,
            **overrides,
        )

    def fingerprint(self) -> str:
        """sha256 of the resolved pool (models sorted by name) without api_key_env or notes.

        Resolved, so moving a value between ``defaults:`` and an entry keeps the fingerprint;
        env var names and notes do not change any answer, so they are left out. Every other
        backend setting is in, defaults included: limits and the response caps
        (``max_response_bytes``, ``max_answer_chars``) decide which results a run records.
        """
        judge = self.judge_model()
        payload = {
            "schema": 1,
            "backends": {
                name: backend.model_dump(mode="json", exclude={"api_key_env", *NOT_RESULT_SHAPING})
                for name, backend in sorted(self.backends.items())
            },
            "models": sorted(
                (m.model_dump(mode="json", exclude={"notes", *NOT_RESULT_SHAPING}) for m in self.models),
                key=lambda entry: entry["name"],
            ),
            "judge": judge.model_dump(mode="json", exclude={"notes", *NOT_RESULT_SHAPING}) if judge else None,
        }
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


__all__ = [
    "ANSWER_CHARS_RANGE",
    "BACKEND_CLASSES",
    "KNOWN_GGUF",
    "MAX_CONCURRENCY",
    "MAX_REPLICAS",
    "MAX_TIMEOUT_S",
    "RESPONSE_BYTES_RANGE",
    "Backend",
    "BackendType",
    "Defaults",
    "GenerationFields",
    "Judge",
    "LlamaCppBackend",
    "Model",
    "OllamaBackend",
    "OpenAIBackend",
    "PoolConfig",
    "ThinkSetting",
]
