"""Tool-decision YAML: ``items: [{id, kind, expected_action: call|direct, question, source, validity}]``.

The gold is ``expected_action``: ``call`` when answering needs the tool described in the question,
``direct`` when it does not (scored symmetrically). As with probes, only ``validity: verified``
items are scorable. The task is the file's stem.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eval.gold_checks import TOOL_ACTIONS
from eval.items import Item
from eval.loaders.base import Loader
from eval.loaders.formats.probes import validity_fields
from eval.loaders.yaml_records import yaml_records

_STRUCTURAL = ("id", "question", "expected_action")


def recognise(sample: Any) -> bool:
    entries = sample.get("items") if isinstance(sample, dict) else None
    return isinstance(entries, list) and any(isinstance(e, dict) and "expected_action" in e for e in entries[:1])


def load(path: Path, suite: str) -> Iterator[Item]:
    task = path.stem
    _, records = yaml_records(path, "items")
    for record in records:
        local_id = record.require("id", (str, int))
        question = record.require("question")
        action = record.require("expected_action")
        if action not in TOOL_ACTIONS:
            raise record.fail("expected_action", f"must be one of {list(TOOL_ACTIONS)}, got {action!r}")
        meta = {key: value for key, value in record.data.items() if key not in _STRUCTURAL}
        yield record.build(
            id=Item.make_id(suite, task, str(local_id)),
            suite=suite,
            track="orchestration",
            task=task,
            gold_type="tool_decision",
            question=question,
            gold=action,
            **validity_fields(record),
            meta=meta,
        )


LOADER = Loader(
    name="tool_decision",
    description="tool-decision YAML: items with expected_action call|direct",
    suffixes=(".yaml", ".yml"),
    recognise=recognise,
    load=load,
)
