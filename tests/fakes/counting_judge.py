"""A FAKE OpenAI-compatible behaviour playing scripted candidates and a judge that counts its calls.

Candidate calls (any model but the judge) are answered from a table keyed by the question, one
answer per ask in turn (the last one repeats), so a re-ask can get a different answer. Judge calls
are answered with one fixed rubric verdict carrying the given flags, and counted per question (the
question is found inside the judge's prompt), so a test can assert that an answer never reached it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from . import Behavior, ok


class CountingJudge:
    """``behave`` for :class:`tests.fakes.openai_fake.FakeOpenAIServer` (see the module doc)."""

    def __init__(
        self,
        answers: Mapping[str, Sequence[str]],
        *,
        judge: str = "judgey",
        flags: Sequence[str] = (),
        scores: tuple[int, int, int, int] = (10, 10, 10, 10),
    ) -> None:
        self.answers = {question: list(texts) for question, texts in answers.items()}
        self.judge = judge
        self.verdict = json.dumps(
            {
                "coverage": scores[0],
                "accuracy": scores[1],
                "safety": scores[2],
                "grounding": scores[3],
                "rationale": "ok",
                "grounding_source": "guideline",
                "warnings_present": [],
                "flags": list(flags),
            },
            ensure_ascii=False,
        )
        self.asked: Counter[str] = Counter()  # candidate asks per question
        self.judged: Counter[str] = Counter()  # judge calls per question

    def __call__(self, index: int, payload: dict[str, Any]) -> Behavior:
        messages = payload.get("messages") or []
        if payload.get("model") == self.judge:
            prompt = "\n".join(str(m.get("content", "")) for m in messages)
            for question in self.answers:
                if question in prompt:
                    self.judged[question] += 1
            return ok(self.verdict)
        question = str(messages[-1].get("content", "")) if messages else ""
        texts = self.answers.get(question, ["?"])
        text = texts[min(self.asked[question], len(texts) - 1)]
        self.asked[question] += 1
        return ok(text)
