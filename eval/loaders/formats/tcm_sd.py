"""TCM-SD JSON lines: one syndrome-differentiation record per line.

Fields: ``{example_id, lcd_id, lcd_name, syndrome, norm_syndrome, chief_complaint, medical_history, FDMR}``.

Syndrome differentiation as classification: the gold is ``norm_syndrome`` (the normalised label),
the label set is every ``norm_syndrome`` in the file (``meta["labels"]``, for macro-F1 at
aggregate). The question joins the record's own texts, unchanged, one per line:

    主诉：<chief_complaint>
    现病史：<medical_history>
    四诊摘要：<FDMR>                       (when present)
    请根据以上病历进行中医辨证，只回答一个证型名称。

The disease (``lcd_name``) and raw ``syndrome`` stay in meta: the benchmark's input is the record
text only. The task is ``TCM-SD`` whatever the file is called (sample, train, dev, test).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eval.items import Item
from eval.loaders.base import Loader, read_json_lines

TASK = "TCM-SD"
INSTRUCTION = "请根据以上病历进行中医辨证，只回答一个证型名称。"
_TEXT_FIELDS = (("chief_complaint", "主诉"), ("medical_history", "现病史"), ("FDMR", "四诊摘要"))


def recognise(sample: Any) -> bool:
    return isinstance(sample, dict) and {"norm_syndrome", "chief_complaint"} <= sample.keys()


def build_question(data: dict[str, Any]) -> str:
    lines = [
        f"{label}：{data[key]}" for key, label in _TEXT_FIELDS if isinstance(data.get(key), str) and data[key].strip()
    ]
    return "\n".join([*lines, INSTRUCTION])


def load(path: Path, suite: str) -> Iterator[Item]:
    records = list(read_json_lines(path))
    for record in records:
        record.require("example_id", (str, int))
        record.require("chief_complaint")
        record.require("medical_history")
        record.require("norm_syndrome")
    labels = sorted({record.data["norm_syndrome"] for record in records})
    for record in records:
        data = record.data
        meta = {key: data[key] for key in ("syndrome", "lcd_id", "lcd_name") if key in data}
        meta["labels"] = labels
        yield record.build(
            id=Item.make_id(suite, TASK, str(data["example_id"])),
            suite=suite,
            track="tcm",
            task=TASK,
            gold_type="classification",
            question=build_question(data),
            gold=data["norm_syndrome"],
            meta=meta,
        )


LOADER = Loader(
    name="tcm_sd",
    description="TCM-SD JSON lines: chief_complaint, medical_history, FDMR → norm_syndrome (classification)",
    suffixes=(".json", ".jsonl"),
    recognise=recognise,
    load=load,
)
