"""Who answered and who judged: the identities that keep two runs' results from being merged by mistake.

A judge's identity (:class:`JudgeSetup`) names its verdicts' stage, so a new judge, server or
setting never reuses old verdicts; a model's identity (:func:`model_identity`) goes into every
scores row, so results of differently set-up models are never compared as one. Both are built
from :func:`answerer_fields`: every pool-file field that shapes what a model says, plus the
backend type and the endpoint that served it.

A judge whose backend constrains its verdicts to the contract's JSON Schema (``structured_output``
other than ``none``, :mod:`runners.structured`) is another judge: its identity also names the mode,
so constrained and free-text verdicts are never merged, and an unconstrained judge's identity is
what it always was (its runs resume). Likewise a judge that asks for token logprobs to weigh its
scores (``top_logprobs``, :func:`judge_top_logprobs`) is another judge; one that does not keeps its identity.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from eval.items import Item
from eval.items.scores import JudgeIdentity
from judge import contract_for, prompt_version
from judge.contracts.table import CONTRACT_SPECS, request_schema
from pool.config import Model, PoolConfig
from pool.config.schema import NOT_RESULT_SHAPING
from pool.execute.cache_key import normalize_endpoint
from pool.execute.endpoints import local_model_identity
from runners.structured import grammar_schema


@dataclass(frozen=True)
class JudgeSetup:
    """One judge of a run: its pool model, backend and the endpoint that serves it."""

    model: Model
    backend: str
    endpoint: str = ""  # the judge's endpoint identity: same name on another server is another judge
    backend_type: str = ""
    structured_output: str = "none"  # how its backend constrains a verdict (runners.structured)
    top_logprobs: int | None = None  # alternatives asked per verdict token, to weigh scores (judge.weighting)

    @property
    def constrained(self) -> bool:
        return self.structured_output != "none"

    def contract_schema(self, contract: str, item: Item | None = None) -> dict[str, Any] | None:
        """The schema this judge's requests for ``contract`` carry: the contract's verdict schema, narrowed
        to ``item`` where the contract does so (``request_schema``: a criteria_items request lists exactly
        that item's ids), as a grammar holds it when the backend decodes with one
        (``runners.structured.grammar_schema``), so the bounds are in the request and so in its cache key;
        None when the judge is not constrained."""
        if not self.constrained:
            return None
        grammar = self.structured_output == "grammar"
        schema = request_schema(contract, item, ordered=grammar)
        return grammar_schema(schema) if grammar else schema

    def output_schema(self, stage: str, item: Item | None) -> dict[str, Any] | None:
        """The schema a request of ``stage`` is constrained to (:meth:`contract_schema`): None when this
        judge is not constrained or the stage's contract is not known (see :func:`stage_contract`)."""
        contract = stage_contract(stage, item) if self.constrained else None
        return self.contract_schema(contract, item) if contract is not None else None

    def identity(self, item: Item, contract: str | None = None) -> JudgeIdentity:
        """Pool name, backend, prompt version and every other field that shapes a verdict (see ``answerer_fields``)."""
        setup = {
            k: v
            for k, v in answerer_fields(self.model, self.backend_type, self.endpoint).items()
            if k not in ("name", "backend")
        }
        if self.constrained:
            setup["structured_output"] = self.structured_output
        if self.top_logprobs is not None:
            setup["top_logprobs"] = self.top_logprobs
        return JudgeIdentity.of(self.model.name, self.backend, prompt_version(contract or contract_for(item)), setup)

    def stage(self, item: Item, reask: bool = False, contract: str | None = None) -> str:
        """The stage name of this judge's verdicts: a new judge, server or setting never reuses old ones."""
        key = self.identity(item, contract).key()
        suffix = (":" + contract if contract else "") + (":reask" if reask else "")
        return f"judge:{hashlib.sha256(key.encode('utf-8')).hexdigest()[:10]}{suffix}"


# Alternatives a weighing judge asks per verdict token: all eleven 0..10 scores rarely have mass beyond
# the first few; more only makes every stored verdict larger.
JUDGE_TOP_LOGPROBS = 10


def judge_top_logprobs(config: PoolConfig, judge: Model) -> int | None:
    """What a judge asks in ``top_logprobs``: :data:`JUDGE_TOP_LOGPROBS` when the pool weighs judge scores
    (``judge_scores: weighted``, the default) and the judge's backend returns token logprobs; else None."""
    if config.judge_scores != "weighted" or not config.backends[judge.backend].token_logprobs():
        return None
    return JUDGE_TOP_LOGPROBS


# What :meth:`JudgeSetup.stage` and the stages built on it append after the judge's hash and contract.
_STAGE_SUFFIXES = frozenset({"reask", "rejudge", "anchor"})


def stage_contract(stage: str, item: Item | None) -> str | None:
    """The contract a judge stage asks (``judge:<hash>[:<contract>][:reask|:rejudge|:anchor]``): the one
    it names, else the item's own; None when a part is neither (a stage this module does not build)."""
    parts = stage.split(":")[2:]
    named = [p for p in parts if p in CONTRACT_SPECS]
    if len(named) > 1 or any(p not in CONTRACT_SPECS and p not in _STAGE_SUFFIXES for p in parts):
        return None
    if named:
        return named[0]
    return contract_for(item) if item is not None else None


def answerer_fields(model: Model, backend_type: str, endpoint: str) -> dict[str, Any]:
    """Every field that shapes what ``model`` says, as plain JSON values.

    The pool entry minus what does not reach the server (``enabled``, ``notes``) — name, backend,
    model id, mode, temperature, max_tokens, stop, top_p, seed, think, gguf, chat_format, and any
    generation field added later — plus the backend type and the endpoint identity (the URL without
    credentials or query, or ``llamacpp://<weights sha256>/<chat_format>``; ``""`` when unknown).
    """
    fields = model.model_dump(mode="json", exclude={"enabled", "notes", *NOT_RESULT_SHAPING})
    return {**fields, "backend_type": backend_type, "endpoint": normalize_endpoint(endpoint) if endpoint else ""}


def configured_endpoint(config: PoolConfig, model: Model) -> str:
    """The endpoint identity the pool file gives ``model`` without starting anything ("" if unknowable).

    Used only when no live endpoint and no stored answer says which server answered (a run store
    older than the ``endpoint`` column): a remote backend's ``base_url``; for the managed llama.cpp
    server the weights' sha256 identity, or "" when the file is gone.
    """
    backend = config.backends[model.backend]
    if backend.type != "llamacpp":
        return str(getattr(backend, "base_url", ""))
    if model.gguf is None:
        return ""
    try:
        return local_model_identity(model)
    except (OSError, ValueError):
        return ""


def model_identity(config: PoolConfig, model: Model, endpoint: str = "") -> dict[str, Any]:
    """What makes two runs of a model comparable: results differing here are never merged.

    ``endpoint`` is the identity of the server that answered (``Result.endpoint``); when empty the
    pool file's is used (:func:`configured_endpoint`).
    """
    return answerer_fields(model, config.backends[model.backend].type, endpoint or configured_endpoint(config, model))
