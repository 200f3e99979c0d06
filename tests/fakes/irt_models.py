"""FAKE models of known ability on a suite of items of known difficulty: a ``behave`` for a FakeOpenAIServer.

Item ``j`` has discrimination ``a_j`` and difficulty ``b_j`` (hashes of its question); a model of
ability θ answers it right when a hash of (model, question), uniform on [0, 1), is below the 2PL
probability ``σ(a_j (θ − b_j))`` — fixed per model and item, so every run sees the same answers and
a model's full-suite score is known without asking it. Nothing here is a model; answers are looked up.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from bench.harness.specialists import LETTERS, unit
from tests.fakes import Behavior, ok
from tests.fakes.specialists import question_of


def item_curve(question: str) -> tuple[float, float]:
    """(a, b) of a question: log a uniform on [−0.3, 0.7], b uniform on [−2.5, 2.5]."""
    return math.exp(-0.3 + unit(question + "/a")), -2.5 + 5.0 * unit(question + "/b")


def answers_right(model_theta: float, model: str, question: str) -> bool:
    a, b = item_curve(question)
    return unit(f"{model}/{question}") < 1.0 / (1.0 + math.exp(-a * (model_theta - b)))


def irt_behaviour(key: Mapping[str, str], ability: Mapping[str, float]) -> Any:
    """``behave``: ``key`` maps each question to its gold letter; ``ability`` each model name to θ."""

    def behave(index: int, payload: dict[str, Any]) -> Behavior | None:
        model, question = str(payload.get("model")), question_of(payload)
        gold = key.get(question)
        if gold is None or model not in ability:
            return ok("答案：A")
        wrong = LETTERS[(LETTERS.index(gold) + 1) % 4]
        return ok(f"答案：{gold if answers_right(ability[model], model, question) else wrong}")

    return behave
