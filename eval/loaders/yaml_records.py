"""YAML with line numbers: the records of a top-level list, each knowing its own line and its fields'."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from eval.loaders.base import ItemFormatError, Record, read_utf8


def _parse(path: Path) -> tuple[Any, yaml.Node | None]:
    loader = yaml.SafeLoader(read_utf8(path))
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise ItemFormatError(
            path, line, None, f"invalid YAML: {exc.problem or exc.context}", "fix the YAML syntax"
        ) from None
    except yaml.YAMLError as exc:
        raise ItemFormatError(path, None, None, f"invalid YAML: {exc}", "fix the YAML syntax") from None
    finally:
        loader.dispose()
    return data, node


def read_yaml(path: Path) -> Any:
    """The whole document (errors at path:line)."""
    return _parse(path)[0]


def yaml_records(path: Path, key: str) -> tuple[Any, list[Record]]:
    """(document, records of ``document[key]``); the document must be a mapping holding that list."""
    data, node = _parse(path)
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise ItemFormatError(path, 1, None, f"expected a mapping with a '{key}:' list at the top")
    value_node = next((value for key_node, value in node.value if key_node.value == key), None)
    if value_node is None:
        raise ItemFormatError(path, 1, key, "missing", f"the file must hold its items under '{key}:'")
    if not isinstance(data[key], list):
        raise ItemFormatError(
            path, value_node.start_mark.line + 1, key, f"must be a list, got {type(data[key]).__name__}"
        )
    records = []
    for entry, entry_node in zip(data[key], value_node.value, strict=True):
        line = entry_node.start_mark.line + 1
        field_lines = None
        if isinstance(entry_node, yaml.MappingNode):
            field_lines = {
                k.value: v.start_mark.line + 1 for k, v in entry_node.value if isinstance(k, yaml.ScalarNode)
            }
        if not isinstance(entry, dict):
            raise ItemFormatError(
                path, line, None, f"each entry of '{key}' must be a mapping, got {type(entry).__name__}"
            )
        records.append(Record(entry, path, line, field_lines))
    return data, records
