"""Safe YAML loading that keeps the node tree, so validation errors can name a line.

Why a custom loader: PyYAML's default resolver follows YAML 1.1, where ``yes``/``no``/``on``/
``off`` (any case) silently become booleans. In a model pool that turns ``think: off`` into
``False`` by accident, ``name: no`` into a bool and ``stop: [on]`` into ``[True]``.
:class:`PoolYamlLoader` resolves only ``true``/``false`` (``True``/``TRUE``/``False``/``FALSE``)
as booleans, as YAML 1.2's core schema does; every other word stays a string and the schema
decides what it means. Everything else is :class:`yaml.SafeLoader` (no Python object tags).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

_BOOL_TAG = "tag:yaml.org,2002:bool"


class PoolYamlLoader(yaml.SafeLoader):
    """SafeLoader whose implicit booleans are only true/false (YAML 1.2 core semantics)."""


PoolYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _BOOL_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
PoolYamlLoader.add_implicit_resolver(_BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


class YamlProblem(Exception):
    """A YAML-level problem (syntax, duplicate key), with 1-based line and column."""

    def __init__(self, line: int, column: int | None, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.message = message


@dataclass(frozen=True)
class YamlDocument:
    """The constructed Python data plus the node tree it came from (for line numbers)."""

    data: Any
    root: Node | None


def parse_yaml(text: str) -> YamlDocument:
    """Compose once, check for duplicate keys, then construct from the same nodes.

    Raises :class:`YamlProblem` for syntax errors, several documents in one file, and a key
    repeated in one mapping (PyYAML would silently keep the last one).
    """
    loader = PoolYamlLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return YamlDocument(data=None, root=None)
        _reject_duplicate_keys(root)
        return YamlDocument(data=loader.construct_document(root), root=root)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" ({exc.context})" if exc.context and exc.problem else ""
        problem = exc.problem or exc.context or "invalid YAML"
        line = mark.line + 1 if mark else 1
        column = mark.column + 1 if mark else None
        raise YamlProblem(line, column, f"YAML syntax error: {problem}{where}; check indentation and quoting") from None
    except yaml.YAMLError as exc:  # unmarked errors are rare; keep the message short
        raise YamlProblem(1, None, f"YAML error: {exc}") from None
    finally:
        loader.dispose()


def _reject_duplicate_keys(node: Node) -> None:
    """Walk the tree; a scalar key seen twice in one mapping is an error at the second one."""
    seen_ids: set[int] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if id(current) in seen_ids:  # aliases can share nodes
            continue
        seen_ids.add(id(current))
        if isinstance(current, MappingNode):
            first_line: dict[str, int] = {}
            for key, value in current.value:
                if isinstance(key, ScalarNode) and key.value != "<<":
                    if key.value in first_line:
                        raise YamlProblem(
                            key.start_mark.line + 1,
                            key.start_mark.column + 1,
                            f"duplicate key '{key.value}' (first at line {first_line[key.value]}); keep only one",
                        )
                    first_line[key.value] = key.start_mark.line + 1
                stack.extend((key, value))
        elif isinstance(current, SequenceNode):
            stack.extend(current.value)


def locate(root: Node, loc: Sequence[str | int]) -> tuple[int, tuple[str | int, ...], Node]:
    """Map a validation ``loc`` to a 1-based line, the path that exists in YAML, and its node.

    Parts that name no key are pydantic's own (discriminator tags such as ``'llamacpp'``, union
    member names, ``'[key]'``) and are dropped, except a final missing key: that is a missing
    field, reported at the line of the mapping that should hold it.
    """
    node: Node = root
    line = root.start_mark.line
    path: list[str | int] = []
    for index, part in enumerate(loc):
        if part == "[key]" or isinstance(node, ScalarNode):
            break
        if isinstance(node, SequenceNode):
            if isinstance(part, int) and 0 <= part < len(node.value):
                node = node.value[part]
                line = node.start_mark.line
                path.append(part)
            continue
        if isinstance(node, MappingNode):
            match = next(
                ((key, value) for key, value in node.value if isinstance(key, ScalarNode) and key.value == str(part)),
                None,
            )
            if match is not None:
                line = match[0].start_mark.line
                node = match[1]
                path.append(part)
            elif index == len(loc) - 1:
                path.append(part)
    return line + 1, tuple(path), node


def format_path(path: Sequence[str | int]) -> str:
    """``('models', 2, 'backend')`` -> ``models[2].backend``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def node_kind(node: Node | None) -> str:
    """A word for error messages: mapping, list or scalar."""
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    return "a single value"
