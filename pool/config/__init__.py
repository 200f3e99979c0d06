"""Load and check ``model_pool.yaml``: the one public entry point for pool configuration.

``load_pool(path)`` parses with a safe YAML 1.2-style loader (see :mod:`pool.config.yaml_lines`),
validates with the schema in :mod:`pool.config.schema` and the cross-reference checks of
:mod:`pool.config.refs` (together :class:`~pool.config.resolved.PoolConfig`), and on any problem raises
:class:`PoolConfigError` listing every issue as ``file:line: field: what; what to do``.

API keys are never read here: backends name the env var (``api_key_env``) and the runner reads
it at call time, so a config can be checked on a machine without keys;
:mod:`pool.config.preflight` checks, before a run starts, that the keys and model files its
backends need are there. :mod:`pool.config.errors` turns validation errors into those lines, and
:mod:`pool.config.values` holds the value checks the schema shares (YAML words, model names, GGUF keys).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from pydantic import ValidationError
from yaml.nodes import MappingNode

from pool.config.errors import Issue, issues_from_errors
from pool.config.resolved import PoolConfig
from pool.config.schema import (
    KNOWN_GGUF,
    Backend,
    Defaults,
    GenerationFields,
    Judge,
    LlamaCppBackend,
    Model,
    OllamaBackend,
    OpenAIBackend,
    ThinkSetting,
)
from pool.config.values import file_stem
from pool.config.yaml_lines import YamlProblem, node_kind, parse_yaml

MAX_ISSUES_SHOWN = 20


class PoolConfigError(ValueError):
    """The pool file cannot be used; ``issues`` holds each problem with its line and field."""

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = tuple(issues)
        lines = [str(i) for i in issues[:MAX_ISSUES_SHOWN]]
        if len(issues) > MAX_ISSUES_SHOWN:
            lines.append(f"... and {len(issues) - MAX_ISSUES_SHOWN} more problems")
        super().__init__("\n".join(lines))


def load_pool(path: str | os.PathLike[str]) -> PoolConfig:
    """Read, parse and validate a pool file; raise :class:`PoolConfigError` on any problem."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise PoolConfigError(
            [Issue(file, None, "", f"cannot read the pool file ({reason}); check the path")]
        ) from None
    return parse_pool(text, file)


def parse_pool(text: str, file: str = "<string>") -> PoolConfig:
    """Like :func:`load_pool` for text already in memory; ``file`` names it in messages."""
    try:
        document = parse_yaml(text)
    except YamlProblem as problem:
        raise _single(file, problem.line, problem.message, problem.column) from None
    root = document.root
    if root is None or document.data is None:  # no document, or only `---`
        raise _single(file, 1, f"the file is empty; {_TOP_LEVEL_HINT}")
    if not isinstance(root, MappingNode):
        line = root.start_mark.line + 1
        raise _single(file, line, f"the top level is {node_kind(root)}; {_TOP_LEVEL_HINT}")
    try:
        return PoolConfig.model_validate(document.data)
    except ValidationError as exc:
        raise PoolConfigError(issues_from_errors(exc.errors(), root, file)) from None


_TOP_LEVEL_HINT = (
    "the top level must be a mapping with backends: and models: (and optional defaults:, "
    "judge: or a judges: panel); see the shipped model_pool.yaml"
)


def _single(file: str, line: int, message: str, column: int | None = None) -> PoolConfigError:
    return PoolConfigError([Issue(file, line, "", message, column)])


def backends_missing_keys(
    config: PoolConfig, models: Iterable[Model], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The backends ``models`` use whose ``api_key_env`` variable is unset or empty: {backend: variable}."""
    env = os.environ if environ is None else environ
    named = {m.backend: getattr(config.backends[m.backend], "api_key_env", None) for m in models}
    return {backend: var for backend, var in named.items() if var and not env.get(var)}


def missing_api_keys(config: PoolConfig, environ: Mapping[str, str] | None = None) -> list[str]:
    """Env vars named by backends that enabled models or the judge use, and that are unset/empty."""
    used = [*config.enabled_models(), *config.judge_models()]
    return sorted(set(backends_missing_keys(config, used, environ).values()))


__all__ = [
    "KNOWN_GGUF",
    "Backend",
    "Defaults",
    "GenerationFields",
    "Issue",
    "Judge",
    "LlamaCppBackend",
    "Model",
    "OllamaBackend",
    "OpenAIBackend",
    "PoolConfig",
    "PoolConfigError",
    "ThinkSetting",
    "file_stem",
    "load_pool",
    "backends_missing_keys",
    "missing_api_keys",
    "parse_pool",
]
