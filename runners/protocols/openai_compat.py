"""The OpenAI-compatible protocol: vLLM, llama.cpp server, LiteLLM, DeepSeek, SiliconFlow, ...

``base_url`` includes the API prefix (``http://host:8000/v1``); chat mode posts
``{base_url}/chat/completions`` with ``messages``, completion mode posts ``{base_url}/completions``
with ``prompt``. A 2xx with empty content is an answer (``text=""``): whether it is a bad one is
the scorer's call, not the transport's.
"""

from __future__ import annotations

from typing import Any, Literal

from runners.base import GenerationRequest, GenerationResponse
from runners.llamacpp_settings import LlamaCppSettings
from runners.protocol import JsonProtocolRunner, int_or_none, sampling_fields
from runners.registry import backend
from runners.retry import BadResponse
from runners.settings import RemoteSettings


def _content_text(content: Any) -> str:
    """``message.content`` as text: a string, null, or a list of typed parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    raise BadResponse(f"message.content is {type(content).__name__}, expected a string")


def build_payload(request: GenerationRequest) -> tuple[str, dict[str, Any]]:
    """(path, JSON body) for one request."""
    payload: dict[str, Any] = {"model": request.model, "stream": False, **sampling_fields(request.params)}
    if request.mode == "chat":
        payload["messages"] = [dict(m) for m in request.messages]
        return "/chat/completions", payload
    payload["prompt"] = request.prompt
    return "/completions", payload


def parse_body(obj: Any) -> GenerationResponse:
    """A chat or completion body → response; raises BadResponse when there is no choice to read."""
    if not isinstance(obj, dict):
        raise BadResponse(f"body is a JSON {type(obj).__name__}, expected an object")
    choices = obj.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        keys = ", ".join(sorted(obj)[:8])
        raise BadResponse(f"no choices[0] in the body (keys: {keys})")
    choice = choices[0]
    message = choice.get("message")
    reasoning = None
    if isinstance(message, dict):
        text = _content_text(message.get("content"))
        # DeepSeek and vLLM reasoning parsers put the thinking trace beside the answer.
        reasoning = message.get("reasoning_content") or message.get("reasoning") or None
    elif "text" in choice:
        text = _content_text(choice.get("text"))
    else:
        raise BadResponse("choices[0] has neither message nor text")
    usage = obj.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    timings = obj.get("timings")
    timings = timings if isinstance(timings, dict) else {}
    predicted_ms = timings.get("predicted_ms")  # llama.cpp server's own generation time
    return GenerationResponse(
        text=text,
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=int_or_none(usage.get("prompt_tokens")),
        completion_tokens=int_or_none(usage.get("completion_tokens")),
        latency_s=0.0,
        server_timing_s=predicted_ms / 1000 if isinstance(predicted_ms, (int, float)) else None,
        reasoning=reasoning if isinstance(reasoning, str) else None,
    )


class OpenAISettings(RemoteSettings):
    """Any OpenAI-compatible server or API (DeepSeek, vLLM, llama.cpp you run yourself...)."""

    summary = "any OpenAI-compatible server or API"
    type: Literal["openai"]


@backend("llamacpp", settings=LlamaCppSettings)
@backend("openai", settings=OpenAISettings)
class OpenAICompatRunner(JsonProtocolRunner):
    """A :class:`runners.base.Runner` for one OpenAI-compatible endpoint. ``llamacpp`` is served
    too: the managed llama.cpp server speaks this protocol (starting it is not the runner's job)."""

    build_payload = staticmethod(build_payload)
    parse_body = staticmethod(parse_body)
