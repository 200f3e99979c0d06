"""A FAKE OpenAI-compatible behaviour playing a candidate and the judge ``judgey`` of a fake pool, the
judge's replies chosen by a mode: good verdicts (GOOD: 35/40, a pass; a claim list to a fact check),
garbage until re-asked, never a verdict, or a candidate whose answer is too long to judge."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.fake_pool import JUDGE, PADDING

from . import Behavior, ok

GOOD = (
    '{"coverage": 9, "accuracy": 9, "safety": 9, "grounding": 8, "rationale": "好", '
    '"grounding_source": "guideline", "warnings_present": []}'
)


def judge_behaviour(mode: str) -> Callable[[int, dict[str, Any]], Behavior]:
    """Candidate calls get an echo; judge calls (fenced prompts) get replies chosen by ``mode``
    (``good``, ``reask``, ``huge``; anything else: never a verdict)."""

    def behave(index: int, payload: dict[str, Any]) -> Behavior:
        messages = payload.get("messages") or []
        text = json.dumps(messages, ensure_ascii=False)
        if payload.get("model") != JUDGE:
            return ok("长" * 30_000 if mode == "huge" else "答案：B。" + PADDING)
        if mode == "huge":
            return ok(GOOD if len(text) < 30_000 else "prompt too long")
        if mode == "good":
            if "fact checker" in text:
                return ok(
                    '{"claims": [{"claim": "a", "label": "supported"}, {"claim": "b", "label": "unsupported"},'
                    ' {"claim": "c", "label": "supported"}, {"claim": "d", "label": "not_sure"}]}'
                )
            return ok(GOOD)
        if mode == "reask":  # garbage first, valid JSON once re-asked
            return ok(GOOD) if len(messages) > 2 else ok("我觉得还行，大概八分吧")
        return ok("无法评分")

    return behave
