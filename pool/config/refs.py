"""Cross-reference checks of a pool: names unique, backends declared, per-backend keys, judge.

These need the whole config, so they run after every block has validated on its own; each
problem is returned as a pydantic line error with the ``loc`` of the offending key, so the
loader can point at its line like any other validation error.
"""

from __future__ import annotations

import difflib
from typing import Any

from pydantic_core import InitErrorDetails, PydanticCustomError

from pool.config.schema import Judge, Model, PoolFile, ReferenceAgent
from pool.config.values import check_gguf

Loc = tuple[str | int, ...]


def reference_issues(config: PoolFile) -> list[InitErrorDetails]:
    """Every cross-reference problem, in file order."""
    issues: list[InitErrorDetails] = []
    first_index: dict[str, int] = {}
    for index, model in enumerate(config.models):
        if model.name in first_index:
            issues.append(
                _issue(
                    ("models", index, "name"),
                    f"duplicate model name '{model.name}' (also models[{first_index[model.name]}]); "
                    f"names must be unique because they name result files: rename one",
                )
            )
        first_index.setdefault(model.name, index)
        explicit = {key: getattr(model, key) for key in _SPECIFIC_KEYS if key in model.model_fields_set}
        issues += _backend_issues(config, ("models", index), model, model.backend, explicit)
    if config.judge is not None:
        issues += _judge_issues(config, config.judge, sorted(first_index), ("judge",), "judge")
    issues += _panel_issues(config, sorted(first_index))
    if config.reference_agent is not None:
        issues += _agent_issues(config, config.reference_agent, sorted(first_index))
    return issues


# The keys of a command agent (``argv:``); every other key of ``reference_agent:`` describes a model.
_COMMAND_KEYS = frozenset({"argv", "name", "notes", "timeout_s", "max_concurrency"})


def _agent_issues(config: PoolFile, agent: ReferenceAgent, pool_names: list[str]) -> list[InitErrorDetails]:
    """``reference_agent:``: a command (``argv``, which must pass ``{question}`` on) or a model, checked
    like a judge (a pool model, or an endpoint defined here)."""
    where: Loc = ("reference_agent",)
    if agent.argv is None:
        return [
            _issue((*where, key), f"{key} is for a command agent (argv:); a model agent's limits are its backend's")
            for key in ("timeout_s", "max_concurrency")
            if getattr(agent, key) is not None
        ] + _judge_issues(config, agent, pool_names, where, "reference-agent")
    issues = [
        _issue(
            (*where, key),
            f"{key} is for a model agent; a command agent (argv:) takes only {', '.join(sorted(_COMMAND_KEYS))}: "
            "remove it, or remove argv:",
        )
        for key in sorted(agent.model_fields_set - _COMMAND_KEYS)
        if getattr(agent, key) is not None
    ]
    if not any("{question}" in arg for arg in agent.argv):
        issues.append(
            _issue(
                (*where, "argv"),
                "no argument holds {question}, so the agent would never see the question; write it where "
                'the command takes the question, e.g. ["./bin/ask.sh", "{question}", "--mode", "{mode}"]',
            )
        )
    return issues


def _panel_issues(config: PoolFile, pool_names: list[str]) -> list[InitErrorDetails]:
    """``judges:``: exclusive with ``judge:``, each member checked like a judge, member names unique."""
    if config.judges is None:
        if config.panel_rule != "majority":  # the default is harmless (a dumped config carries it)
            return [_issue(("panel_rule",), "panel_rule is the rule of a judges: panel; this pool has no judges: list")]
        return []
    if len(config.judges) < 2:
        return [
            _issue(
                ("judges",),
                f"a panel needs at least 2 judges, got {len(config.judges)}; for one judge write judge: instead",
            )
        ]
    if config.judge is not None:
        return [
            _issue(
                ("judges",),
                "give either judge: (one judge) or judges: (a panel), not both; "
                "move the judge: entry into the judges: list",
            )
        ]
    issues: list[InitErrorDetails] = []
    seen: dict[str, int] = {}
    for index, member in enumerate(config.judges):
        where: Loc = ("judges", index)
        issues += _judge_issues(config, member, pool_names, where, f"judge-{index + 1}")
        name = member.model if member.backend is None else (member.name or f"judge-{index + 1}")
        if name in seen:
            issues.append(
                _issue(
                    (*where, "name" if member.backend is not None else "model"),
                    f"'{name}' is already judges[{seen[name]}]; a panel needs distinct judges "
                    "(give an inline member its own name:)",
                )
            )
        seen.setdefault(str(name), index)
    return issues


def _issue(loc: Loc, message: str) -> InitErrorDetails:
    return {"type": PydanticCustomError("pool_reference", message), "loc": loc, "input": None}


def _suggest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def _backend_issues(
    config: PoolFile, where: Loc, entry: Model | Judge, backend_name: str, explicit: dict[str, Any]
) -> list[InitErrorDetails]:
    if backend_name not in config.backends:
        declared = ", ".join(config.backends)
        hint = _suggest(backend_name, list(config.backends)) or "; name one of them or declare it"
        return [
            _issue(
                (*where, "backend"),
                f"unknown backend '{backend_name}'; declared backends: {declared}{hint}",
            )
        ]
    kind = config.backends[backend_name].type
    issues = []
    if kind == "llamacpp":
        problem = check_gguf(entry.gguf)
        if problem:
            issues.append(_issue((*where, "gguf"), problem))
        if entry.chat_format is not None and getattr(config.backends[backend_name], "engine", None) == "batched":
            issues.append(
                _issue(
                    (*where, "chat_format"),
                    f"chat_format needs llama-cpp-python's server: add 'engine: llama_cpp' to backend "
                    f"'{backend_name}' (the batched engine uses the GGUF's own chat template), or remove it",
                )
            )
    else:
        for key in ("gguf", "chat_format"):
            if getattr(entry, key) is not None:
                issues.append(
                    _issue(
                        (*where, key),
                        f"{key} is only for llamacpp backends; backend '{backend_name}' is type {kind}; remove it",
                    )
                )
    return issues + _specific_key_issues(
        config, where, explicit, backend_name, f"backend '{backend_name}' is type {kind}"
    )


# Generation keys only some backend types take (``BackendSettings.generation_keys()``).
_SPECIFIC_KEYS = ("think", "num_ctx")
_THINK_PARAM_HINT = (
    "add think_param: chat_template_kwargs (vLLM or SGLang serving Qwen3) or think_param: "
    "enable_thinking (SiliconFlow) to the backend, or remove think"
)


def _specific_key_issues(
    config: PoolFile, where: Loc, values: dict[str, Any], backend_name: str, whose: str
) -> list[InitErrorDetails]:
    """``think`` / ``num_ctx`` set where the backend does not take them, or ``think`` as a level where
    the backend takes only true/false. ``whose`` names the backend in the message."""
    backend = config.backends[backend_name]
    takes = backend.generation_keys()
    issues = []
    for key, value in values.items():
        if value is None:
            continue
        if key == "num_ctx" and key not in takes:
            issues.append(
                _issue(
                    (*where, key),
                    f"num_ctx is only sent to ollama backends (its context window); "
                    f"{whose}; remove it (other servers set their context themselves: "
                    "n_ctx on a llamacpp backend, --max-model-len for vLLM)",
                )
            )
        elif key == "think" and key not in takes:
            hint = _THINK_PARAM_HINT if "think_param" in type(backend).model_fields else "remove it"
            issues.append(
                _issue(
                    (*where, key),
                    f"think is only sent to ollama backends and to OpenAI-compatible "
                    f"backends with a think_param; {whose}; {hint}",
                )
            )
        elif key == "think" and backend.type != "ollama" and not isinstance(value, bool):
            param = getattr(backend, "think_param", "")
            issues.append(
                _issue(
                    (*where, key),
                    f"think {value!r}: levels are Ollama's; backend '{backend_name}' sends "
                    f"think as {param}, which takes true or false; write think: true",
                )
            )
    return issues


_COMPLETION_JUDGE = "the judge must be a chat model (it gets the rubric as chat messages): choose an instruct model"


def _judge_issues(
    config: PoolFile, judge: Judge, pool_names: list[str], where: Loc, default_name: str
) -> list[InitErrorDetails]:
    if judge.backend is not None:
        issues = _backend_issues(
            config, where, judge, judge.backend, {key: getattr(judge, key) for key in _SPECIFIC_KEYS}
        )
        if judge.mode == "completion":
            issues.append(_issue((*where, "mode"), _COMPLETION_JUDGE))
        name = judge.name or default_name
        if name in pool_names:
            issues.append(
                _issue(
                    (*where, "name"),
                    f"'{name}' is already a pool model; reference it without backend: or choose another name",
                )
            )
        return issues
    if judge.model is None:
        return [
            _issue(
                (*where, "model"),
                "set model: to a pool model name, or give backend: and model: for a judge defined here",
            )
        ]
    if judge.model not in pool_names:
        hint = _suggest(judge.model, pool_names) or "; or add backend: to define the judge here"
        return [
            _issue(
                (*where, "model"),
                f"unknown pool model '{judge.model}'; pool models: {', '.join(pool_names)}{hint}",
            )
        ]
    issues = [
        _issue(
            (*where, key),
            f"{key} is only for a judge defined here (with backend:); "
            f"a referenced judge takes it from pool model '{judge.model}'",
        )
        for key in ("name", "gguf", "chat_format")
        if getattr(judge, key) is not None
    ]
    referenced = next(m for m in config.models if m.name == judge.model)
    if (judge.mode or referenced.mode) == "completion":
        issues.append(
            _issue(
                (*where, "mode" if judge.mode else "model"),
                f"'{judge.model}' is a completion (base) model; " + _COMPLETION_JUDGE,
            )
        )
    kind = config.backends[referenced.backend].type
    issues += _specific_key_issues(
        config,
        where,
        {key: getattr(judge, key) for key in _SPECIFIC_KEYS},
        referenced.backend,
        f"'{judge.model}' is on a {kind} backend",
    )
    return issues
