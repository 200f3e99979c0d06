"""A FAKE Ollama server speaking the native ``/api/chat`` and ``/api/generate`` (non-streaming).

It mimics a thinking model: when the request's ``think`` is truthy (True or a level such as
"high"), the trace comes back separately (``message.thinking`` on chat, ``thinking`` on generate)
and never inside the answer; with ``think`` false or absent there is no trace. Timing fields are
nanoseconds, as Ollama reports them (``eval_duration`` = 10 ms per fake token).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from . import Behavior, FakeServer, clip_words, echo_text

NS_PER_FAKE_TOKEN = 10_000_000


class FakeOllamaServer(FakeServer):
    """Speaks enough of Ollama's native API to exercise a client, including its faults."""

    @property
    def base_url(self) -> str:
        return self.root_url

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/api/chat", self.handle), web.post("/api/generate", self.handle)]

    def error_body(self, code: int, message: str) -> dict[str, Any]:
        return {"error": message}  # Ollama's errors are a bare string

    def answer(self, path: str, payload: dict[str, Any], behavior: Behavior) -> dict[str, Any]:
        options = payload.get("options") or {}
        text = behavior.text if behavior.text is not None else echo_text(payload)
        text, done_reason = clip_words(text, options.get("num_predict"))
        thinking = None
        if payload.get("think"):
            thinking = behavior.thinking or f"Let me think about {echo_text(payload)[6:]!r}."
        prompt_words = len(str(payload.get("messages") or payload.get("prompt", "")).split())
        eval_count = len(text.split())
        common = {
            "model": payload.get("model"),
            "created_at": "2025-01-01T00:00:00Z",
            "done": True,
            "done_reason": done_reason,
            "total_duration": (prompt_words + eval_count) * NS_PER_FAKE_TOKEN,
            "load_duration": 0,
            "prompt_eval_count": prompt_words,
            "prompt_eval_duration": prompt_words * NS_PER_FAKE_TOKEN,
            "eval_count": eval_count,
            "eval_duration": eval_count * NS_PER_FAKE_TOKEN,
        }
        if path == "/api/chat":
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if thinking is not None:
                message["thinking"] = thinking
            return {**common, "message": message}
        body: dict[str, Any] = {**common, "response": text}
        if thinking is not None:
            body["thinking"] = thinking
        return body
