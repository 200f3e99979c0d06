"""Reference-answer JSONL (the MedBench-Agent shape): ``{"question", "answer", "other": {"id", "source"}}``.

One file per task; the task is the file's stem. A ``<Task>.md`` beside the file describes the task:
its first paragraph is kept as ``meta["task_description"]``. Items are capability-track reference
items: the judge grades the answer against the reference. The tasks in ``CHECK_OF_TASK`` declare an
objective check as well (``Item.check``): their answers are SQL or an API call, and executing or
parsing them says more than a judge's reading.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eval.items import Item
from eval.loaders.base import Loader, read_json_lines

# MedBench-Agent task (file stem) -> the objective check of its items (see eval.items).
CHECK_OF_TASK = {"MedDBOps": "sql", "MedCallAPI": "api_call"}
_HINT = 'each line must be {"question": str, "answer": str, "other": {"id": int|str, "source": str}}'


def task_description(markdown: Path) -> str | None:
    """The first paragraph of a task's .md that is not a heading, or None."""
    if not markdown.is_file():
        return None
    paragraph: list[str] = []
    for line in markdown.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            paragraph.append(line.strip())
        elif paragraph:
            break
    return "\n".join(paragraph) or None


def recognise(sample: Any) -> bool:
    return isinstance(sample, dict) and {"question", "answer", "other"} <= sample.keys()


def load(path: Path, suite: str) -> Iterator[Item]:
    task = path.stem
    markdown = path.with_suffix(".md")
    description = task_description(markdown)
    for record in read_json_lines(path):
        question = record.require("question", hint=_HINT)
        answer = record.require("answer", hint=_HINT)
        record.require("other", dict, hint=_HINT)
        local_id = record.require("other.id", (int, str), hint=_HINT)
        meta: dict[str, Any] = {"source": record.data["other"].get("source")}
        if description is not None:
            meta.update(task_doc=markdown.name, task_description=description)
        yield record.build(
            id=Item.make_id(suite, task, str(local_id)),
            suite=suite,
            track="capability",
            task=task,
            gold_type="reference",
            question=question,
            gold=answer,
            meta=meta,
            check=CHECK_OF_TASK.get(task),
        )


LOADER = Loader(
    name="reference",
    description="reference-answer JSONL {question, answer, other: {id, source}} with <task>.md beside it",
    suffixes=(".jsonl",),
    recognise=recognise,
    load=load,
)
