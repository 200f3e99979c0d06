"""The suite and pool of FAKE specialists of known quality: single-choice items on two tasks, and the pool file.

Task ``T1`` asks cardiology questions, ``T2`` endocrine ones (words drawn from two vocabularies, so
a question's task can be read off its text). A FAKE model with quality q on a task answers an item
right when the item's difficulty u (a hash of its question, uniform on [0, 1)) is below q — the
same u for every model, so a 0.92 model is right on every item a 0.78 model is right on, and paired
tests see the difference plainly. Nothing here is a model: the FAKE server that plays these
qualities is ``tests.fakes.specialists`` (in-process) or ``python -m tests.fakes.serve_specialists``
(its own process); this module writes the data both sides read.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

CARDIOLOGY = (
    "胸痛",
    "心悸",
    "高血压",
    "心衰",
    "冠心病",
    "房颤",
    "心电图",
    "心肌梗死",
    "二尖瓣",
    "早搏",
    "心绞痛",
    "主动脉",
)
ENDOCRINE = (
    "糖尿病",
    "血糖",
    "胰岛素",
    "甲状腺",
    "甲亢",
    "肾上腺",
    "骨质疏松",
    "痛风",
    "血脂",
    "肥胖",
    "垂体",
    "皮质醇",
)
FILLER = ("患者", "请问", "怎么办", "需要", "注意", "什么", "治疗", "检查", "男性", "女性", "岁", "最近", "医生")
VOCABULARY = {"T1": CARDIOLOGY, "T2": ENDOCRINE}
# quality per model and task: the manifest should send T1 to card, T2 to endo
QUALITY: dict[str, dict[str, float]] = {
    "card": {"T1": 0.92, "T2": 0.50},
    "endo": {"T1": 0.50, "T2": 0.92},
    "gen": {"T1": 0.78, "T2": 0.78},
}
LETTERS = ("A", "B", "C", "D")


def unit(text: str) -> float:
    """A hash of ``text`` as a number uniform on [0, 1): the same for every caller and every run."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


def question(task: str, index: int, salt: str) -> str:
    """A question of ``task``: three subject words and four filler words, picked by hash."""
    words = [VOCABULARY[task][int(unit(f"{salt}/{task}/{index}/s{j}") * len(VOCABULARY[task]))] for j in range(3)]
    words += [FILLER[int(unit(f"{salt}/{task}/{index}/f{j}") * len(FILLER))] for j in range(4)]
    order = sorted(range(len(words)), key=lambda j: unit(f"{salt}/{task}/{index}/o{j}"))
    return "".join(words[j] for j in order) + f"（第{index}题）？"


def write_suite(path: Path, per_task: int, salt: str) -> dict[str, dict[str, Any]]:
    """A medpool JSONL suite of ``per_task`` single-choice items per task; returns question text -> {task, gold}."""
    records, key = [], {}
    for task in VOCABULARY:
        for i in range(per_task):
            text = question(task, i, salt)
            gold = LETTERS[int(unit(text + "/gold") * 4)]
            records.append(
                {
                    "id": f"{salt}-{task}-{i:03d}",
                    "task": task,
                    "track": "exam",
                    "gold_type": "single_choice",
                    "question": text,
                    "options": {letter: f"选项{letter}" for letter in LETTERS},
                    "gold": gold,
                    "max_tokens": 8,
                }
            )
            key[text] = {"task": task, "gold": gold}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return key


def write_specialist_pool(
    path: Path, base_url: str, *, router_url: str | None = None, timeout_s: float | None = None
) -> Path:
    """A pool of the three FAKE specialists at ``base_url`` and, with ``router_url``, the router as a fourth member."""
    lines = ["backends:", "  fake:", "    type: openai", f"    base_url: {base_url}", "    max_concurrency: 4"]
    if timeout_s is not None:
        lines.append(f"    timeout_s: {timeout_s}")
    if router_url is not None:
        lines += ["  router:", "    type: openai", f"    base_url: {router_url}", "    max_concurrency: 4"]
    lines.append("models:")
    for name in QUALITY:
        lines += [f"  - name: {name}", "    backend: fake", f"    model: {name}", "    max_tokens: 8"]
    if router_url is not None:
        lines += ["  - name: router", "    backend: router", "    model: medpool-router", "    max_tokens: 8"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read_suite_key(path: Path) -> dict[str, dict[str, Any]]:
    """The question key of a suite :func:`write_suite` wrote: question text -> {task, gold}."""
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return {row["question"]: {"task": row["task"], "gold": row["gold"]} for row in rows}
