"""The ``model_pool.yaml`` schema: backends, defaults, models and the judge, as pydantic models.

Every block rejects unknown keys and uses strict types, so a typo or a quoted number is an error
rather than a silently ignored or coerced value. Cross-references (a model's backend, the judge's
model, unique names) are checked once every block is valid (:mod:`pool.config.refs`, called by
:class:`pool.config.resolved.PoolConfig`, which also folds ``defaults:`` into each model, so
``config.models`` are complete and need no further merging).

Booleans (``enabled``, ``think``) accept YAML ``true``/``false`` and also the words
``yes``/``no``/``on``/``off`` in any case. The loader (:mod:`pool.config.yaml_lines`) keeps those words
as strings, so ``think: off`` means ``False`` here while ``name: no`` stays the text ``"no"``.

``think`` (a reasoning switch: a bool, or ``low``/``medium``/``high`` on Ollama) and ``num_ctx``
(Ollama's context window) are rejected on a model or inline judge whose backend does not take them
(its settings' ``generation_keys()``: ``ollama`` takes both, an OpenAI-compatible backend takes
``think`` once its ``think_param`` says where): other servers would ignore or refuse them, and a
silently ignored setting is worse than an error. ``defaults.think`` and ``defaults.num_ctx`` apply
only to models whose backend takes them. Both are left out of fingerprints and identities while
unset, so pools written before ``num_ctx`` existed keep theirs.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import (
    AfterValidator,
    Field,
    PlainValidator,
    StringConstraints,
    create_model,
    field_validator,
    model_validator,
)

from pool.config.values import (
    KNOWN_GGUF,
    check_model_name,
    parse_think,
    parse_yaml_bool,
)
from runners.base import GenerationParams, Mode
from runners.registry import settings_classes
from runners.settings import BackendSettings, SettingsBlock

ThinkSetting = bool | Literal["low", "medium", "high"]
YamlBool = Annotated[bool, PlainValidator(parse_yaml_bool)]
Think = Annotated[ThinkSetting | None, PlainValidator(parse_think)]
ModelName = Annotated[str, AfterValidator(check_model_name)]
# How a judge panel's verdicts become one (``judge.panel``): its documented rules, by name.
PanelRule = Literal["majority", "mean", "reliability"]
# How criteria items are judged: the four-dimension verdict alone (holistic), or also criterion by
# criterion (``criteria_items`` contract), ranking by the holistic verdict (both) or by the points (items).
CriteriaGrading = Literal["holistic", "both", "items"]
# weighted: a judged row's value and pass come from the judge's probability-weighted scores where its
# backend returns token logprobs (judge.weighting); argmax: from its top answer, as a plain verdict.
JudgeScores = Literal["weighted", "argmax"]
BackendName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
StopSequence = Annotated[str, StringConstraints(min_length=1)]
NUM_CTX_RANGE = (256, 1_048_576)  # tokens; below a few hundred no prompt fits, above 1M no model reads


class _Block(SettingsBlock):
    """A block of the pool file (the same strictness as a backend's settings block)."""


class Price(_Block):
    """What a model's tokens cost, in any one currency per million tokens (USD by convention).

    Prices change what a run costs, never what it answers: they are left out of the pool
    fingerprint and of model identities, so a price change neither blocks a resume nor breaks a
    trend line."""

    input_per_million: float = Field(ge=0)
    output_per_million: float = Field(ge=0)


# Fields that shape no answer, left out of fingerprints and identities.
NOT_RESULT_SHAPING = frozenset({"price", "node"})
# Generation keys only some backend types take (their settings' ``generation_keys()``).
BACKEND_SPECIFIC_KEYS = frozenset({"think", "num_ctx"})


class _PoolBackendFields(_Block):
    """What the pool adds to every backend type's own settings (:mod:`runners.settings`)."""

    price: Price | None = None  # every model on this backend, unless the model sets its own
    # Ray executor only: the node (its IP, a Ray ``node:<ip>`` resource) this backend's lane actor must run on
    node: str | None = Field(default=None, min_length=1)


def _pool_backend(settings: type[BackendSettings]) -> type[BackendSettings]:
    """The pool file's block for one backend type: its runner's settings plus the pool's fields."""
    name = settings.__name__.removesuffix("Settings") + "Backend"
    return create_model(name, __base__=(settings, _PoolBackendFields), __module__=__name__, __doc__=settings.__doc__)


# Every backend type a pool file may name, from the runners' registry (a new type is a new module
# in runners/protocols/, nothing here).
BACKEND_CLASSES: dict[str, type[BackendSettings]] = {
    name: _pool_backend(settings) for name, settings in settings_classes().items()
}
OpenAIBackend = BACKEND_CLASSES["openai"]
OllamaBackend = BACKEND_CLASSES["ollama"]
LlamaCppBackend = BACKEND_CLASSES["llamacpp"]
Backend = Annotated[Union[tuple(BACKEND_CLASSES.values())], Field(discriminator="type")]  # noqa: UP007


class GenerationFields(_Block):
    """What shapes an answer; shared by ``defaults:``, models and the judge."""

    mode: Mode = "chat"  # "completion" for base models: raw prompt, no chat template
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=512, ge=1)
    stop: tuple[StopSequence, ...] = Field(default=(), strict=False)
    top_p: float | None = Field(default=None, gt=0, le=1)
    seed: int | None = None
    think: Think = None
    num_ctx: int | None = Field(
        default=None, ge=NUM_CTX_RANGE[0], le=NUM_CTX_RANGE[1], exclude_if=lambda value: value is None
    )


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
            num_ctx=self.num_ctx,
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
    num_ctx: int | None = Field(
        default=None, ge=NUM_CTX_RANGE[0], le=NUM_CTX_RANGE[1], exclude_if=lambda value: value is None
    )

    def generation_overrides(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in GenerationFields.model_fields if getattr(self, k) is not None}


class ReferenceAgent(Judge):
    """``reference_agent:``, who answers a live run's questions (``pool.live``): its answers become the
    reference golds the candidates are judged against. Shaped like ``judge:`` — ``model: NAME`` alone is a
    pool model; with ``backend:`` an endpoint defined here (``model`` the server's id, ``name`` default
    ``reference-agent``) — or a command: ``argv``, run without a shell, each ``{question}`` and ``{mode}``
    in an argument replaced, its stdout the answer, stopped after ``timeout_s`` seconds; ``max_concurrency``
    commands at once."""

    argv: tuple[str, ...] | None = Field(default=None, min_length=1, strict=False)
    timeout_s: float | None = Field(default=None, gt=0)
    max_concurrency: int | None = Field(default=None, ge=1)


class Execution(_Block):
    """Where the plan runs: ``local`` (asyncio lanes in this process) or ``ray`` (one actor per
    backend lane on a Ray cluster; ``ray_address`` as for ``ray.init``, e.g. ``auto``). The CLI's
    ``--executor`` / ``--ray-address`` override it. Results do not depend on it, so it is not part
    of a run's stored options: a run started locally may be resumed on a cluster."""

    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = Field(default=None, min_length=1)


class Pairwise(SettingsBlock):
    """``pairwise:``: after scoring, every ``python -m pool.run`` of this pool has its judge(s) compare the
    answers of the models the night left tied, side by side in both orders (``pool.pairwise``), within
    ``budget`` judge calls (0: no limit); ``enabled: false`` keeps the block as the budget of the
    standalone ``python -m pool.pairwise`` only."""

    enabled: YamlBool = True
    budget: int = Field(default=400, ge=0)


class PoolFile(_Block):
    """A pool file's blocks, each valid on its own; what a run uses is :class:`pool.config.resolved.PoolConfig`,
    which also checks the cross-references and folds ``defaults:`` into each model."""

    backends: dict[BackendName, Backend] = Field(min_length=1)
    defaults: Defaults = Defaults()  # frozen, so sharing one instance is safe
    models: tuple[Model, ...] = Field(min_length=1, strict=False)
    judge: Judge | None = None
    judges: tuple[Judge, ...] | None = Field(default=None, strict=False)
    reference_agent: ReferenceAgent | None = None  # a live run's reference (pool.live)
    panel_rule: PanelRule = "majority"
    criteria_grading: CriteriaGrading = "holistic"
    judge_scores: JudgeScores = "weighted"
    # Ask a candidate once more when its answer to a reference or criteria item is empty or shorter
    # than its gold type's minimum (pool.score.guards), as the med-agent-verifier README does.
    reask_short_answers: YamlBool = False
    execution: Execution = Execution()
    # A gold freshness audit (``python -m pool.freshness``'s freshness.json, relative to this file's folder):
    # the items carrying a drifted gold point are marked "gold may be stale" in each run's report.
    freshness: str | None = Field(default=None, min_length=1)
    # Pairwise judging of the night's ties after scoring (``pool.pairwise``); see :class:`Pairwise`.
    pairwise: Pairwise | None = None

    @model_validator(mode="before")
    @classmethod
    def _pairwise_budget_moved(cls, data: Any) -> Any:
        if isinstance(data, dict) and "pairwise_budget" in data:
            raise ValueError(
                "pairwise_budget: write it as the budget of the pairwise block, `pairwise: {budget: N}` "
                "(the block also judges every run's ties; add `enabled: false` to keep the budget only)"
            )
        return data

    @field_validator("defaults", mode="before")
    @classmethod
    def _empty_defaults_block(cls, value: Any) -> Any:
        return {} if value is None else value  # `defaults:` with every line commented out

    @field_validator("execution", mode="before")
    @classmethod
    def _empty_execution_block(cls, value: Any) -> Any:
        return {} if value is None else value


__all__ = [
    "BACKEND_CLASSES",
    "KNOWN_GGUF",
    "Backend",
    "Defaults",
    "GenerationFields",
    "Judge",
    "LlamaCppBackend",
    "Model",
    "OllamaBackend",
    "OpenAIBackend",
    "Pairwise",
    "PoolFile",
    "ReferenceAgent",
    "ThinkSetting",
]
