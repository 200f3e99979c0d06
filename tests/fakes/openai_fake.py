"""A FAKE OpenAI-compatible server (``/v1/chat/completions``, ``/v1/completions``) for tests.

Usage::

    async with FakeOpenAIServer(script=[rate_limited("2"), ok()]) as fake:
        runner = OpenAICompatRunner(fake.base_url)
        ...
        assert fake.request_count == 2
"""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from . import Behavior, FakeServer, clip_words, echo_text


class FakeOpenAIServer(FakeServer):
    """Speaks enough of the OpenAI chat/completions API to exercise a client, including its faults."""

    @property
    def base_url(self) -> str:
        return self.root_url + "/v1"

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/v1/chat/completions", self.handle), web.post("/v1/completions", self.handle)]

    def answer(self, path: str, payload: dict[str, Any], behavior: Behavior) -> dict[str, Any]:
        text = behavior.text if behavior.text is not None else echo_text(payload)
        text, finish = clip_words(text, payload.get("max_tokens"))
        prompt_words = len(str(payload.get("messages") or payload.get("prompt", "")).split())
        usage = {
            "prompt_tokens": prompt_words,
            "completion_tokens": len(text.split()),
            "total_tokens": prompt_words + len(text.split()),
        }
        common = {"id": "fake-1", "created": int(time.time()), "model": payload.get("model"), "usage": usage}
        if path.endswith("/chat/completions"):
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
            return {**common, "object": "chat.completion", "choices": [choice]}
        choice = {"index": 0, "text": text, "finish_reason": finish}
        return {**common, "object": "text_completion", "choices": [choice]}
