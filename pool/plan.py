"""What work a run has: every enabled model × every selected item, as units with their requests.

Planning is separate from executing (the OpenCompass split): the plan names the units, the request
each one sends and the backend limits that apply, and can be printed (``--dry-run``) or stored
without starting anything. Units are ordered model by model, so a backend that serves one model at
a time (the managed llama.cpp server, Ollama) never reloads weights between consecutive requests.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

# JUDGED_GOLD_TYPES: gold types whose answers the LLM judge scores (the rest have judge-free
# scorers); RUBRIC_GOLD_TYPES: those judged on the rubric, which --hallu also checks claim by claim.
from eval.gold_types import JUDGED_GOLD_TYPES, RUBRIC_GOLD_TYPES
from eval.items import Item
from pool.config import Model, PoolConfig, load_pool
from pool.items_source import DataError, load_run_items, select_items
from pool.store.outcome import ANSWER_STAGE, Unit  # noqa: F401  (ANSWER_STAGE: part of the plan's surface)
from runners.base import GenerationRequest


class PromptItem(Protocol):
    """The part of an evaluation item the scheduler needs: an id and what to send."""

    @property
    def id(self) -> str: ...

    def chat_messages(self) -> tuple[dict[str, str], ...]: ...

    def completion_prompt(self) -> str: ...


def answer_request(model: Model, item: PromptItem) -> GenerationRequest:
    """The request a model gets for an item: chat messages, or a raw prompt for base models.

    An item's own ``max_tokens`` (its answer budget) caps the model's: the smaller one is sent.
    """
    params = model.generation_params()
    budget = getattr(item, "max_tokens", None)
    if budget is not None and (params.max_tokens is None or budget < params.max_tokens):
        params = replace(params, max_tokens=budget)
    if model.mode == "completion":
        return GenerationRequest(model=model.model, mode="completion", prompt=item.completion_prompt(), params=params)
    return GenerationRequest(model=model.model, mode="chat", messages=item.chat_messages(), params=params)


def data_fingerprint(items: Sequence[PromptItem]) -> str:
    """sha256 over the item ids and exactly what each item sends, in order."""
    digest = hashlib.sha256()
    for item in items:
        record = {"id": item.id, "messages": list(item.chat_messages()), "prompt": item.completion_prompt()}
        budget = getattr(item, "max_tokens", None)
        if budget is not None:  # only when set: the fingerprints of suites without budgets stay as they were
            record["max_tokens"] = budget
        digest.update(json.dumps(record, ensure_ascii=False, sort_keys=True).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


@dataclass(frozen=True)
class Plan:
    """The units of a run and everything needed to send them."""

    config: PoolConfig
    models: tuple[Model, ...]
    items: tuple[PromptItem, ...]

    def __post_init__(self) -> None:
        ids = [item.id for item in self.items]
        if len(set(ids)) != len(ids):
            raise ValueError("item ids must be unique within a run")

    @property
    def items_by_id(self) -> Mapping[str, PromptItem]:
        return {item.id: item for item in self.items}

    def units(self) -> Iterator[Unit]:
        for model in self.models:
            for item in self.items:
                yield Unit(model.name, item.id, ANSWER_STAGE)

    @property
    def unit_count(self) -> int:
        return len(self.models) * len(self.items)

    def fingerprints(self) -> tuple[str, str]:
        return self.config.fingerprint(), data_fingerprint(self.items)

    def describe(self, judges: Sequence[Model] = (), *, hallu: bool = False) -> dict[str, Any]:
        """The ``--dry-run`` view: models × items × stages, backends and their limits, requests.

        Judge requests are counted too: one verdict per (model, judged item) and panel member, and
        at most one re-ask each; ``hallu`` adds a claim check (and its re-ask) per
        reference/criteria answer, asked of the judge (a panel's lead).
        """
        backends: dict[str, Any] = {}
        for model in self.models:
            backend = self.config.backend_of(model)
            entry = backends.setdefault(
                model.backend,
                {
                    "type": backend.type,
                    "max_concurrency": backend.max_concurrency,
                    "requests_per_minute": backend.requests_per_minute,
                    "timeout_s": backend.timeout_s,
                    "max_retries": backend.max_retries,
                    "models": [],
                    "requests": 0,
                },
            )
            entry["models"].append(model.name)
            entry["requests"] += len(self.items)
        judged = sum(getattr(item, "gold_type", None) in JUDGED_GOLD_TYPES for item in self.items) * len(self.models)
        checked = sum(getattr(item, "gold_type", None) in RUBRIC_GOLD_TYPES for item in self.items) * len(self.models)
        judge_view = None
        stages = [ANSWER_STAGE]
        if judges and judged:
            verdicts, claim_checks = judged * len(judges), checked if hallu else 0
            if self.config.criteria_grading != "holistic":  # each criteria answer is also graded criterion by criterion
                verdicts += (
                    sum(getattr(i, "gold_type", None) == "criteria" for i in self.items)
                    * len(self.models)
                    * len(judges)
                )
            judge_view = {
                "model": judges[0].name,
                "backend": judges[0].backend,
                "verdicts": verdicts,
                "reasks_at_most": verdicts,
                "hallu_checks": claim_checks,
                "requests_at_most": 2 * (verdicts + claim_checks),
            }
            if len(judges) > 1:
                judge_view["panel"] = [{"model": m.name, "backend": m.backend} for m in judges]
            stages += ["judge"] + (["hallu"] if hallu else [])
        return {
            "models": [m.name for m in self.models],
            "items": len(self.items),
            "stages": stages,
            "units": self.unit_count,
            "backends": backends,
            "judge": judge_view,
            "requests_at_most": self.unit_count + (judge_view["requests_at_most"] if judge_view else 0),
        }


def plan_from_options(options: Mapping[str, Any], notes: list[str] | None = None) -> tuple[Plan, int]:
    """The plan a run's stored options describe, and how many loaded items were skipped; ``notes``
    collects what each item filter dropped. Raises the loaders' and the pool file's own errors
    (each names its file, line or flag)."""
    config = load_pool(options["pool"])
    loaded = load_run_items(options["data"])
    items = select_items(loaded, options, notes)
    _check_scorers(items)
    models = select_models(config, options["models"].split(",") if options.get("models") else None, options["all"])
    if not models:
        raise DataError(
            f"{options['pool']}: no model selected: set `enabled: true` on a model, or pass --models / --all"
        )
    return Plan(config, models, tuple(items)), len(loaded.skipped)


def _check_scorers(items: Sequence[Item]) -> None:
    """Every selected gold type has a scorer: found now, before any answer is paid for."""
    from eval.scorers import SCORERS, missing_scorer_message

    first: dict[str, Item] = {}
    for item in items:
        first.setdefault(item.gold_type, item)
    missing = [gold_type for gold_type in first if gold_type not in SCORERS]
    if missing:
        raise DataError(
            "\n".join(f"{first[t].source}: item {first[t].id}: {missing_scorer_message(t)}" for t in missing)
        )


def select_models(config: PoolConfig, names: Sequence[str] | None, include_disabled: bool) -> tuple[Model, ...]:
    """The models a run asks: the named ones (enabled or not), else all or only the enabled ones."""
    if names:
        known = {m.name for m in config.models}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(
                f"--models: unknown model(s) {', '.join(unknown)}; the pool has {', '.join(sorted(known))}"
            )
        wanted = set(names)
        return tuple(m for m in config.models if m.name in wanted)
    return tuple(config.models if include_disabled else config.enabled_models())
