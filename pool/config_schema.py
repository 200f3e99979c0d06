"""The ``model_pool.yaml`` schema: backends, defaults, models and the judge, as pydantic models.

Every block rejects unknown keys and uses strict types, so a typo or a quoted number is an error
rather than a silently ignored or coerced value. Cross-references (a model's backend, the judge's
model, unique names) are checked in :meth:`PoolConfig._resolve`, which also folds ``defaults:``
into each model, so ``config.models`` are complete and need no further merging.

Booleans (``enabled``, ``think``) accept YAML ``true``/``false`` and also the words
``yes``/``no``/``on``/``off`` in any case. The loader (:mod:`pool.yaml_lines`) keeps those words
as strings, so ``think: off`` means ``False`` here while ``name: no`` stays the text ``"no"``.

``think`` (Ollama's reasoning switch: a bool, or ``low``/``medium``/``high``) is rejected on a
model or inline judge whose backend is not ``ollama``: other servers would ignore or refuse it,
and a silently ignored setting is worse than an error. ``defaults.think`` applies to
ollama-backed models only.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from pool.config_refs import reference_issues
from pool.config_values import (
    KNOWN_GGUF,
    check_api_key_env,
    check_base_url,
    check_model_name,
    parse_think,
    parse_yaml_bool,
)
from runners.base import GenerationParams, Mode

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
    # pool.config_errors) must not echo values such as a pasted key.
    model_config = ConfigDict(
        extra="forbid", strict=True, frozen=True, allow_inf_nan=False, hide_input_in_errors=True
    )


MAX_TIMEOUT_S = 3600  # one attempt; longer waits look like a hung server, not a slow answer
MAX_CONCURRENCY = 256  # per backend; beyond this a typo, not a plan (and file handles run out)
RESPONSE_BYTES_RANGE = (1024, 1024**3)  # 1 KiB .. 1 GiB
ANSWER_CHARS_RANGE = (1_000, 10_000_000)


class _BackendBase(_Block):
    """Settings every backend type has: limits, retries and caps on what comes back.

    ``max_response_bytes`` caps an HTTP response body after decompression (a runaway or
    hostile server cannot fill memory); ``max_answer_chars`` caps an answer's text: longer
    answers are recorded as ``oversize`` and never sent to the judge.
    """

    timeout_s: float = Field(default=120.0, gt=0, le=MAX_TIMEOUT_S)
    max_retries: int = Field(default=3, ge=0, le=20)
    requests_per_minute: float | None = Field(default=None, gt=0)
    max_response_bytes: int = Field(
        default=8 * 1024**2, ge=RESPONSE_BYTES_RANGE[0], le=RESPONSE_BYTES_RANGE[1]
    )
    max_answer_chars: int = Field(
        default=200_000, ge=ANSWER_CHARS_RANGE[0], le=ANSWER_CHARS_RANGE[1]
    )


class OpenAIBackend(_BackendBase):
    """Any OpenAI-compatible server or API (DeepSeek, vLLM, llama.cpp you run yourself...)."""

    type: Literal["openai"]
    base_url: BaseUrl
    api_key_env: EnvVarName | None = None
    max_concurrency: int = Field(default=8, ge=1, le=MAX_CONCURRENCY)


class OllamaBackend(_BackendBase):
    type: Literal["ollama"]
    base_url: BaseUrl
    api_key_env: EnvVarName | None = None
    max_concurrency: int = Field(default=1, ge=1, le=MAX_CONCURRENCY)


class LlamaCppBackend(_BackendBase):
    """The managed local llama.cpp server; its URL is assigned when it starts, so none here."""

    type: Literal["llamacpp"]
    # the server answers one request at a time
    max_concurrency: int = Field(default=1, ge=1, le=MAX_CONCURRENCY)
    n_ctx: int = Field(default=2048, ge=128)
    n_threads: int | None = Field(default=None, ge=1)


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


class PoolConfig(_Block):
    """A validated pool; ``models`` already carry their defaults.

    Cross-reference problems (unknown backend, duplicate name, judge) are reported once every
    block is valid on its own, so a badly broken file may need two rounds of fixes.
    """

    backends: dict[BackendName, Backend] = Field(min_length=1)
    defaults: Defaults = Defaults()  # frozen, so sharing one instance is safe
    models: tuple[Model, ...] = Field(min_length=1, strict=False)
    judge: Judge | None = None

    @field_validator("defaults", mode="before")
    @classmethod
    def _empty_defaults_block(cls, value: Any) -> Any:
        return {} if value is None else value  # `defaults:` with every line commented out

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
                name: backend.model_dump(mode="json", exclude={"api_key_env"})
                for name, backend in sorted(self.backends.items())
            },
            "models": sorted(
                (m.model_dump(mode="json", exclude={"notes"}) for m in self.models),
                key=lambda entry: entry["name"],
            ),
            "judge": judge.model_dump(mode="json", exclude={"notes"}) if judge else None,
        }
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


__all__ = [
    "ANSWER_CHARS_RANGE",
    "BACKEND_CLASSES",
    "KNOWN_GGUF",
    "MAX_CONCURRENCY",
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
