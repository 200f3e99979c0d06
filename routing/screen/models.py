"""Who the screen scores: the local candidates (a pool file's models, or a list of names), and what a
model's name says about it — its family and its size.

- family: the first word of :data:`FAMILIES` found in the lower-cased name (so
  ``deepseek-r1-distill-qwen-7b`` is deepseek), extendable with ``--family WORD`` (added after these);
  none found: no family, and the candidate gets the neutral prior.
- size: the number before ``b`` (billions: ``7b``, ``0.5b``, ``72B``) or ``m`` (millions: ``135m`` is
  0.135b) that starts the name or follows a separator, so ``qwen3-235b-a22b`` is 235b and
  ``qwen2.5-7b`` is 7b (the ``2.5`` is a version); none: unknown.

A pool model's family and size are read from its name, else from the id it sends (``model:``) and its
``gguf:``, so ``name: local-a`` with ``model: qwen2.5-7b-instruct`` is still a 7b qwen. The pool file
is read with a safe YAML loader for its ``models:`` list only: routing imports nothing of ``pool``, and
the screen needs no backend, key or server.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

FAMILIES = (
    "claude",
    "gpt",
    "gemini",
    "mistral",
    "deepseek",
    "phi",
    "pulse",
    "qwen",
    "llama",
    "glm",
    "baichuan",
    "minimind",
    "safemed",
)
_BOOL_TAG = "tag:yaml.org,2002:bool"


class _PoolLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans (only true/false), as the pool file is read by ``pool.config``:
    a model named ``off`` or ``no`` stays a name."""


_PoolLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _BOOL_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_PoolLoader.add_implicit_resolver(_BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_SIZE = re.compile(r"(?:^|[^a-z0-9.])(\d+(?:\.\d+)?)\s*([bm])(?![a-z])")
_UNITS = {"b": 1.0, "m": 0.001}


class CandidatesError(ValueError):
    """A pool file or a models list the screen cannot read; the message names file:line:field."""


def families_with(extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The default family words, then ``extra`` (lower-cased, without repeats)."""
    words = list(FAMILIES)
    for word in extra:
        word = word.strip().lower()
        if word and word not in words:
            words.append(word)
    return tuple(words)


def family_of(name: str, families: Sequence[str] = FAMILIES) -> str | None:
    """The first of ``families`` found in ``name`` (case-insensitive), else None."""
    lowered = name.lower()
    return next((word for word in families if word in lowered), None)


def size_of(name: str) -> float | None:
    """The size in billions the name states (``7b`` → 7.0, ``135m`` → 0.135), else None."""
    match = _SIZE.search(name.lower())
    return None if match is None else float(match.group(1)) * _UNITS[match.group(2)]


@dataclass(frozen=True)
class Candidate:
    """A local model the screen scores: its pool name, and the names its family and size are read from."""

    name: str
    aliases: tuple[str, ...] = ()  # the model id it sends, its gguf: read when the name says nothing

    def family(self, families: Sequence[str]) -> str | None:
        return next((f for f in (family_of(n, families) for n in (self.name, *self.aliases)) if f), None)

    def size_b(self) -> float | None:
        return next((s for s in (size_of(n) for n in (self.name, *self.aliases)) if s is not None), None)


def candidates_from_names(names: Sequence[str]) -> list[Candidate]:
    """``--models a,b``: candidates by name alone, each once."""
    return [Candidate(name) for name in dict.fromkeys(n.strip() for n in names) if name]


def _line_of(node: yaml.Node | None, index: int) -> int:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == "models" and isinstance(value, yaml.SequenceNode) and index < len(value.value):
                return value.value[index].start_mark.line + 1
    return 1


def candidates_from_pool(path: Path, include_disabled: bool = False) -> list[Candidate]:
    """The pool file's models (enabled ones unless ``include_disabled``), in file order."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CandidatesError(
            f"{path}: cannot read the pool file ({exc}); pass an existing pool file to --pool"
        ) from None
    try:
        node = yaml.compose(text, Loader=_PoolLoader)
        data: Any = yaml.load(text, Loader=_PoolLoader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise CandidatesError(
            f"{path}{line}: invalid YAML; fix the pool file (python -m pool.check checks it)"
        ) from None
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, list) or not models:
        raise CandidatesError(f"{path}:1: models: missing or empty; the screen scores the pool file's models")
    out: list[Candidate] = []
    for index, entry in enumerate(models):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"].strip():
            raise CandidatesError(
                f"{path}:{_line_of(node, index)}: models[{index}].name: missing; every pool model needs a name"
            )
        if entry.get("enabled", True) is False and not include_disabled:
            continue
        aliases = tuple(str(entry[key]) for key in ("model", "gguf") if isinstance(entry.get(key), str))
        out.append(Candidate(entry["name"].strip(), aliases))
    if not out:
        raise CandidatesError(f"{path}: no enabled model; enable one, or pass --all to screen the disabled ones")
    return out
