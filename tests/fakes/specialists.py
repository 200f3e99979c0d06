"""FAKE specialists of known quality: a ``behave`` for a FakeOpenAIServer that plays each model's accuracy.

The suite and the qualities are ``bench.harness.specialists`` (the router tests and the router
benchmark write the same data). A model with quality q on a task answers an item right when the
item's difficulty u (a hash of its question, uniform on [0, 1)) is below q. Nothing here is a model;
answers are looked up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.harness.specialists import LETTERS, QUALITY, unit
from tests.fakes import Behavior, ok, status


def question_of(payload: Mapping[str, Any]) -> str:
    """The question line of a chat request (the options follow it after a newline)."""
    messages = payload.get("messages") or [{}]
    return str(messages[-1].get("content", "")).split("\n", 1)[0]


def specialist_behaviour(
    key: Mapping[str, Mapping[str, Any]],
    quality: Mapping[str, Mapping[str, float]] = QUALITY,
    dead: frozenset[str] = frozenset(),
) -> Any:
    """``behave`` for a FakeOpenAIServer: each model in ``quality`` plays its accuracy on the suite ``key``;
    a model in ``dead`` answers 503 (an upstream that is down)."""

    def behave(index: int, payload: dict[str, Any]) -> Behavior | None:
        model = str(payload.get("model"))
        if model in dead:
            return status(503, message="fake specialist down")
        item = key.get(question_of(payload))
        if item is None or model not in quality:
            return ok("答案：A")
        right = unit(question_of(payload) + "/difficulty") < quality[model][item["task"]]
        wrong = LETTERS[(LETTERS.index(item["gold"]) + 1) % 4]
        return ok(f"答案：{item['gold'] if right else wrong}")

    return behave
