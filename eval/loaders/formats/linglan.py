"""LingLan standardized items (``../shared/seeds/linglan-methodology.txt`` step 2), as JSON lines or one JSON list.

Each item is an object ``{id, task_type, question, options, gold_answer, metadata}``:

=============  ================================================================================
field          read as
=============  ================================================================================
id             local id (string or integer); the item id is ``<suite>/<task>/<id>``
task_type      the gold type, one of single_choice, multi_choice, cloze, extraction,
               open_label, quantitative
question       the question, sent unchanged
options        null, ``{"A": "text", …}``, ``[["A", "text"], …]``, or ``["A. text", …]`` /
               ``["text", …]`` (lettered A, B, … in order); required for the choice types
gold_answer    by task_type (below); ``null`` or empty → the item is loaded unscorable
metadata       null or an object (source, difficulty, …), carried into ``meta``
gold_vector    quantitative only: ``[{"herb", "dose_grams"}, …]``
=============  ================================================================================

Gold by task_type (the shapes of ``eval.items``):

- single_choice: an option label ``"B"`` (an exact option text is mapped to its label);
- multi_choice: ``["A", "C"]``, ``"A;C"`` or ``"AC"`` (option texts are mapped to labels);
- cloze: a string, or a list of acceptable fillers;
- extraction: ``[{"entity", "type", "count"}]`` expanded into the entity multiset the extraction
  scorer counts (``count`` defaults to 1; ``{"头痛", "症状", 2}`` becomes two entries);
- open_label: a list of labels (a single string is one label);
- quantitative: ``gold_vector`` → ``{herb: grams}`` (else ``gold_answer`` in that list shape or as
  ``{herb: grams}``).

Track is ``tcm`` for every item: LingLan is one TCM benchmark, so ``--track tcm`` selects all of it;
the metric family (exam for choice/cloze, tcm for the rest) follows the gold type
(``eval.items.scores.family_of``), so choice and cloze items are still reported with exam metrics.
The task is ``metadata.task`` or ``metadata.dataset`` when given (spaces and ``/`` become ``_``),
else the task_type. ``meta`` holds ``metadata``'s keys, ``task_type``, and any other top-level field.

An explicit ``gold_answer: null`` (or an empty gold) follows the methodology's "skip items with
empty gold annotations": the item is listed unscorable with a placeholder gold (the Item model
checks a gold's shape even when the item is not scored) and ``meta["gold_missing"]``; a missing
``gold_answer`` key is an error, so a misspelt field cannot pass silently.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from eval.items import Item, ItemError
from eval.loaders.base import Loader, Record, read_json_records

TASK_TYPES = ("single_choice", "multi_choice", "cloze", "extraction", "open_label", "quantitative")
FIELDS = ("id", "task_type", "question", "options", "gold_answer", "metadata", "gold_vector")
EMPTY_GOLD = "<empty gold>"
_HINT = "see the LingLan item format in eval/loaders/formats/linglan.py"
_LETTERED = re.compile(r"^\s*([A-Z])\s*[.．:：、)）]\s*(\S.*?)\s*$")
_CHOICE_SPLIT = re.compile(r"[;；,，、\s]+")
_ITEM_FIELDS = {"gold": "gold_answer", "meta": "metadata"}


def _first(sample: Any) -> Any:
    return sample[0] if isinstance(sample, list) and sample else sample


def recognise(sample: Any) -> bool:
    """An object (or a list starting with one) with ``task_type`` and ``gold_answer``."""
    sample = _first(sample)
    return isinstance(sample, dict) and {"task_type", "gold_answer"} <= sample.keys()


def _empty(value: Any) -> bool:
    return value is None or (
        isinstance(value, (str, list, dict)) and not (value.strip() if isinstance(value, str) else value)
    )


def _options(record: Record) -> list[tuple[str, str]] | None:
    value = record.data.get("options")
    if value is None:
        return None
    if isinstance(value, Mapping):
        return [(str(label), text) for label, text in value.items()]
    if isinstance(value, list) and value and all(isinstance(v, list) and len(v) == 2 for v in value):
        return [(str(label), text) for label, text in value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        lettered = [_LETTERED.match(unicodedata.normalize("NFKC", v)) for v in value]
        if all(lettered):
            return [(m.group(1), m.group(2)) for m in lettered if m]
        return [(chr(ord("A") + index), text) for index, text in enumerate(value)]
    raise record.fail(
        "options", 'must be null, {"A": "text", ...}, [["A", "text"], ...] or a list of option texts', _HINT
    )


def _label(answer: str, options: list[tuple[str, str]]) -> str:
    """An option label from a label (case- and width-insensitive) or an exact option text."""
    folded = unicodedata.normalize("NFKC", answer).strip()
    labels = {label.upper(): label for label, _ in options}
    if folded.upper() in labels:
        return labels[folded.upper()]
    texts = {unicodedata.normalize("NFKC", text).strip(): label for label, text in options}
    return texts.get(folded, folded)


def _choice_gold(record: Record, value: Any, options: list[tuple[str, str]] | None, multi: bool) -> Any:
    if options is None:
        raise record.fail("options", "a choice item needs options", _HINT)
    if not multi:
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        if not isinstance(value, str):
            raise record.fail("gold_answer", f"must be one option label, got {type(value).__name__}", _HINT)
        return _label(value, options)
    if isinstance(value, str):
        pieces = [p for p in _CHOICE_SPLIT.split(unicodedata.normalize("NFKC", value).strip()) if p]
        if len(pieces) == 1 and re.fullmatch(r"[A-Za-z]{2,}", pieces[0]):
            pieces = list(pieces[0])  # "ACD"
        value = pieces
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise record.fail("gold_answer", "must be a list of option labels (or 'A;C')", _HINT)
    return [_label(v, options) for v in value]


def _extraction_gold(record: Record, value: Any) -> list[dict[str, str]]:
    if not isinstance(value, list):
        raise record.fail("gold_answer", 'must be a list of {"entity", "type", "count"} objects', _HINT)
    entities: list[dict[str, str]] = []
    for index, entry in enumerate(value):
        where = f"gold_answer[{index}]"
        if (
            not isinstance(entry, Mapping)
            or not isinstance(entry.get("entity"), str)
            or not isinstance(entry.get("type"), str)
        ):
            raise record.fail(
                where, 'must be an object with string "entity" and "type" (and an optional "count")', _HINT
            )
        count = entry.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise record.fail(f"{where}.count", f"must be a positive integer, got {count!r}", _HINT)
        entities.extend({"entity": entry["entity"], "type": entry["type"]} for _ in range(count))
    return entities


def _dose_gold(record: Record, name: str, value: Any) -> dict[str, float]:
    if isinstance(value, Mapping):
        pairs = [(herb, grams, f"{name}.{herb}") for herb, grams in value.items()]
    elif isinstance(value, list):
        pairs = []
        for index, entry in enumerate(value):
            if not isinstance(entry, Mapping) or not isinstance(entry.get("herb"), str) or "dose_grams" not in entry:
                raise record.fail(f"{name}[{index}]", 'must be an object {"herb": str, "dose_grams": number}', _HINT)
            pairs.append((entry["herb"], entry["dose_grams"], f"{name}[{index}]"))
    else:
        raise record.fail(name, 'must be a list of {"herb", "dose_grams"} objects', _HINT)
    doses: dict[str, float] = {}
    for herb, grams, where in pairs:
        herb = str(herb).strip()
        if isinstance(grams, bool) or not isinstance(grams, (int, float)) or grams < 0:
            raise record.fail(where, f"dose_grams must be a non-negative number, got {grams!r}", _HINT)
        if not herb or herb in doses:
            raise record.fail(where, f"herb {herb!r} is empty or repeated", _HINT)
        doses[herb] = grams
    return doses


def _gold(record: Record, task_type: str, options: list[tuple[str, str]] | None) -> tuple[Any, bool]:
    """(gold, present): the gold in the Item shape, or a placeholder and False when it is empty."""
    data = record.data
    value = data.get("gold_answer")
    if task_type == "quantitative":
        if not _empty(data.get("gold_vector")):
            return _dose_gold(record, "gold_vector", data["gold_vector"]), True
        if isinstance(value, str) and value.strip():
            raise record.fail("gold_vector", "missing: a quantitative item's gold is its dose vector", _HINT)
        if not _empty(value):
            return _dose_gold(record, "gold_answer", value), True
    if _empty(value):
        return _placeholder(record, task_type, options), False
    if task_type in ("single_choice", "multi_choice"):
        return _choice_gold(record, value, options, multi=task_type == "multi_choice"), True
    if task_type == "extraction":
        return _extraction_gold(record, value), True
    if task_type == "open_label" and isinstance(value, str):
        return [value], True
    return value, True  # cloze, open_label: the Item model checks the shape


def _placeholder(record: Record, task_type: str, options: list[tuple[str, str]] | None) -> Any:
    if task_type in ("single_choice", "multi_choice"):
        if options is None:
            raise record.fail("options", "a choice item needs options", _HINT)
        return options[0][0] if task_type == "single_choice" else [options[0][0]]
    return {"cloze": EMPTY_GOLD, "extraction": [], "open_label": [EMPTY_GOLD], "quantitative": {EMPTY_GOLD: 0}}[
        task_type
    ]


def _task(record: Record, metadata: Mapping[str, Any], task_type: str) -> str:
    for key in ("task", "dataset"):
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            return re.sub(r"[\s/]+", "_", value.strip())
    return task_type


def item_from_record(record: Record, suite: str) -> Item:
    """One LingLan object as an Item (see the module doc)."""
    data = record.data
    local_id = record.require("id", (str, int), hint=_HINT)
    task_type = record.require("task_type", hint=_HINT)
    if task_type not in TASK_TYPES:
        raise record.fail("task_type", f"unknown task_type {task_type!r}", f"use one of {list(TASK_TYPES)}")
    question = record.require("question", hint=_HINT)
    if "gold_answer" not in data and not (task_type == "quantitative" and "gold_vector" in data):
        raise record.fail(
            "gold_answer", "missing", "write gold_answer: null to list an item without a gold as unscorable"
        )
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise record.fail("metadata", f"must be null or an object, got {type(metadata).__name__}", _HINT)
    options = _options(record)
    gold, present = _gold(record, task_type, options)
    meta = {key: value for key, value in data.items() if key not in FIELDS}
    meta.update(metadata)
    meta["task_type"] = task_type
    if not present:
        meta["gold_missing"] = True
    task = _task(record, metadata, task_type)
    try:
        return Item(
            id=Item.make_id(suite, task, str(local_id).strip()),
            suite=suite,
            track="tcm",
            task=task,
            gold_type=task_type,
            gold=gold,
            source=record.source(),
            question=question,
            options=tuple(options) if options else None,
            meta=meta,
            scorable=present,
            skip_reason=None
            if present
            else "empty gold annotation: skipped in metrics and flagged for data review (LingLan)",
        )
    except ItemError as exc:
        raise record.fail(_ITEM_FIELDS.get(exc.field, exc.field), exc.message, _HINT) from None


def load(path: Path, suite: str) -> Iterator[Item]:
    for record in read_json_records(path, _HINT):
        yield item_from_record(record, suite)


LOADER = Loader(
    name="linglan",
    description="LingLan items (JSON list or lines): id, task_type, question, options, gold_answer, metadata",
    suffixes=(".json", ".jsonl"),
    recognise=recognise,
    load=load,
)
