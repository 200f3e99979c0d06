"""Ollama's native protocol: ``/api/chat`` for chat, ``/api/generate`` with ``raw`` for completion.

``base_url`` is the server root (``http://127.0.0.1:11434``, no ``/v1``). The native API (rather
than Ollama's OpenAI shim) is used because it takes ``think`` and returns the thinking trace in its
own field (``message.thinking``), its token counts, and its own generation time
(``eval_duration``, nanoseconds). The trace goes to ``reasoning`` and never into ``text``, so a
scorer sees only the answer.

``think`` is sent only when set (True/False, or a level such as "high" for models that take one).
Completion mode sends ``raw: true`` (the prompt is used verbatim, no chat template), and so never
sends ``think``: switching thinking is the template's job, which raw mode skips.
"""

from __future__ import annotations

from typing import Any, Literal

from runners.base import GenerationParams, GenerationRequest, GenerationResponse
from runners.protocol import JsonProtocolRunner, int_or_none, sampling_fields
from runners.registry import backend
from runners.retry import BadResponse
from runners.settings import RemoteSettings

NS_PER_S = 1_000_000_000


def options(params: GenerationParams) -> dict[str, Any]:
    """Ollama ``options``: the common sampling fields, ``num_predict`` being its name for max_tokens."""
    return sampling_fields(params, max_tokens_key="num_predict")


def build_payload(request: GenerationRequest) -> tuple[str, dict[str, Any]]:
    """(path, JSON body) for one request."""
    payload: dict[str, Any] = {"model": request.model, "stream": False,
                               "options": options(request.params)}
    if request.mode == "chat":
        payload["messages"] = [dict(m) for m in request.messages]
        if request.params.think is not None:
            payload["think"] = request.params.think
        return "/api/chat", payload
    payload["prompt"] = request.prompt
    payload["raw"] = True
    return "/api/generate", payload


def parse_body(obj: Any) -> GenerationResponse:
    """An /api/chat or /api/generate body → response; raises BadResponse when there is no answer field."""
    if not isinstance(obj, dict):
        raise BadResponse(f"body is a JSON {type(obj).__name__}, expected an object")
    message = obj.get("message")
    if isinstance(message, dict):  # /api/chat
        content, thinking = message.get("content"), message.get("thinking")
    elif "response" in obj:  # /api/generate
        content, thinking = obj.get("response"), obj.get("thinking")
    else:
        keys = ", ".join(sorted(obj)[:8])
        raise BadResponse(f"neither message nor response in the body (keys: {keys})")
    if content is not None and not isinstance(content, str):
        raise BadResponse(f"answer is {type(content).__name__}, expected a string")
    eval_ns = obj.get("eval_duration")
    return GenerationResponse(
        text=content or "",
        finish_reason=obj.get("done_reason"),
        prompt_tokens=int_or_none(obj.get("prompt_eval_count")),
        completion_tokens=int_or_none(obj.get("eval_count")),
        latency_s=0.0,
        server_timing_s=eval_ns / NS_PER_S if isinstance(eval_ns, (int, float)) else None,
        reasoning=thinking if isinstance(thinking, str) and thinking else None,
    )


class OllamaSettings(RemoteSettings):
    """An Ollama server, through its native API (``think`` reaches reasoning models only here)."""

    summary = "Ollama's native API"
    type: Literal["ollama"]


@backend("ollama", settings=OllamaSettings)
class OllamaRunner(JsonProtocolRunner):
    """A :class:`runners.base.Runner` for one Ollama server (native API). Its default timeout is
    longer: Ollama loads a model's weights on the first request for it; and one request at a time,
    as a default Ollama server answers (more would only queue there and time out)."""

    default_timeout_s = 300.0
    default_max_concurrency = 1
    build_payload = staticmethod(build_payload)
    parse_body = staticmethod(parse_body)
