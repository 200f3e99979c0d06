"""FAKE candidates whose absolute scores tie and FAKE judges that compare them side by side.

Four candidates (``m1`` worst … ``m4`` best) answer reference questions; each answer carries its
model's hidden quality. Every rubric verdict is the same, so a night's scores tie exactly. Side by side:

- ``oracle`` names the answer of higher quality, whatever the order;
- ``biased`` answers "A" (the first position) for half the requests, chosen by a hash of the
  request, and names the better answer otherwise.

:class:`HeldPairwise` wraps :func:`behave` so that a test can hold the side-by-side requests open
(a judge that does not answer) and count how many arrived, then let later requests through.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path
from typing import Any

from tests.fake_pool import PADDING, judged_pool_lines, write_jsonl
from tests.fakes import Behavior, ok, stall

MODELS = ("m1", "m2", "m3", "m4")  # true quality 1..4
QUALITY = re.compile(r"质量等级(\d)")
RUBRIC = {
    "coverage": 9,
    "accuracy": 9,
    "safety": 9,
    "grounding": 9,
    "rationale": "好",
    "grounding_source": "guideline",
    "warnings_present": [],
}
FENCED = re.compile(r"<<<ANSWER ([AB])>>>\n(.*?)\n<<<END ANSWER \1>>>", re.S)


def answer_of(model: str, question: str) -> str:
    return f"针对“{question}”：建议规范诊治（质量等级{MODELS.index(model) + 1}）。" + PADDING


def first_position_today(messages: list[dict[str, str]]) -> bool:
    """The biased judge's coin: half of its requests, fixed by the request's text."""
    return hashlib.sha256(json.dumps(messages, ensure_ascii=False).encode()).digest()[0] % 2 == 0


def side_by_side(payload: dict[str, Any]) -> dict[str, str]:
    """The fenced answers of a side-by-side request, by side; empty for any other request."""
    messages = payload.get("messages") or []
    return dict(FENCED.findall(messages[-1]["content"] if messages else ""))


def behave(index: int, payload: dict[str, Any]) -> Behavior:
    model, messages = payload.get("model"), payload.get("messages") or []
    text = messages[-1]["content"] if messages else ""
    if model in MODELS:
        question = re.search(r"第\d+题[^\n]*", text).group(0)
        return ok(answer_of(model, question))
    shown = side_by_side(payload)
    if not shown:  # the rubric verdict: the same for every answer
        return ok(json.dumps(RUBRIC, ensure_ascii=False))
    quality = {side: int(QUALITY.search(answer).group(1)) for side, answer in shown.items()}
    truth = "A" if quality["A"] > quality["B"] else "B" if quality["B"] > quality["A"] else "tie"
    if model == "biased" and first_position_today(messages):
        return ok(json.dumps({"winner": "A", "rationale": "第一个更好"}, ensure_ascii=False))
    return ok(json.dumps({"winner": truth, "rationale": "更准确"}, ensure_ascii=False))


class HeldPairwise:
    """:func:`behave`, except that while :attr:`holding`, side-by-side requests after the first
    ``answer_first`` stall (held open until the fake stops); :attr:`held` counts the held ones."""

    def __init__(self, answer_first: int = 0) -> None:
        self.answer_first = answer_first
        self.holding = True
        self.answered = 0
        self.held = 0
        self._lock = threading.Lock()

    def __call__(self, index: int, payload: dict[str, Any]) -> Behavior:
        if not side_by_side(payload):
            return behave(index, payload)
        with self._lock:
            if self.holding and self.answered >= self.answer_first:
                self.held += 1
                return stall(3600)
            self.answered += 1
        return behave(index, payload)


def tied_night_files(
    folder: Path, url: str, judges: tuple[str, ...] = ("oracle", "biased"), extra: str = "", items: int = 12
) -> tuple[Path, Path]:
    """(pool file, suite) of a night of the four candidates on ``items`` reference questions, judged by
    ``judges`` (disabled pool models on the fake at ``url``); ``extra``: more top-level pool-file lines."""
    lines = judged_pool_lines(url, MODELS, judges)
    lines += (
        ["judges:", *(f"  - model: {j}" for j in judges)] if len(judges) > 1 else [f"judge: {{model: {judges[0]}}}"]
    )
    pool = folder / "pool.yaml"
    pool.write_text("\n".join(lines) + "\n" + extra, encoding="utf-8")
    records = [
        {"id": f"q{i:02d}", "task": "qa", "track": "capability", "gold_type": "reference"}
        | {"question": f"第{i}题：高血压患者头痛怎么办？", "gold": "测量血压，及时就医。"}
        for i in range(items)
    ]
    return pool, write_jsonl(folder / "suite" / "items.jsonl", records)
