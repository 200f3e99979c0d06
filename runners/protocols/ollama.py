"""Ollama's native protocol: ``/api/chat`` for chat, ``/api/generate`` with ``raw`` for completion.

``base_url`` is the server root (``http://127.0.0.1:11434``, no ``/v1``). The native API (rather
than Ollama's OpenAI shim) is used because it takes ``think`` and returns the thinking trace in its
own field (``message.thinking``), its token counts, and its own generation time
(``eval_duration``, nanoseconds). The trace goes to ``reasoning`` and never into ``text``, so a
scorer sees only the answer.

``think`` is sent only when set (True/False, or a level such as "high" for models that take one).
Completion mode sends ``raw: true`` (the prompt is used verbatim, no chat template), and so never
sends ``think``: switching thinking is the template's job, which raw mode skips.

``num_ctx`` (the model's pool-file setting) goes in ``options``: it is the context window Ollama loads
the model with. Ollama cuts a prompt that does not fit without an error, so a request whose prompt
may not fit is warned about, once per model: its length is estimated at one token per character
(Chinese text takes at most about that with the tokenizers of the models served; other text
takes fewer, so the estimate errs towards warning), plus a few tokens of chat template per message,
plus ``max_tokens``, against ``num_ctx`` or, unset, Ollama's default of 4096 tokens (its
context-length documentation: 4k below 24 GiB of VRAM, more on larger GPUs, and whatever
``OLLAMA_CONTEXT_LENGTH`` says when the server sets it).

A request with an ``output_schema`` (a judge's verdict) sends it as ``format`` (Ollama's structured
outputs) unless the backend sets ``structured_output: none`` (:mod:`runners.structured`).

A request whose params set ``top_logprobs`` sends ``logprobs: true, top_logprobs: k`` (Ollama's API
takes them since 0.12.11 on both endpoints) and reads the body's top-level ``logprobs`` list of
``{token, logprob, top_logprobs: [{token, logprob}]}``; an older server ignores the fields and the
response has ``token_logprobs = None``.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import Field

from runners.base import GenerationParams, GenerationRequest, GenerationResponse
from runners.protocol import JsonProtocolRunner, int_or_none, parse_logprobs, sampling_fields
from runners.registry import backend
from runners.retry import BadResponse
from runners.settings import RemoteSettings
from runners.structured import StructuredOutput

log = logging.getLogger(__name__)

NS_PER_S = 1_000_000_000
DEFAULT_NUM_CTX = 4096  # Ollama's context when a request sends no num_ctx (below 24 GiB of VRAM)
TOKENS_PER_CHAR = 1  # the prompt-length bound: one token per character (see the module doc)
TEMPLATE_TOKENS_PER_MESSAGE = 8  # role markers and separators a chat template adds to each message


def options(params: GenerationParams) -> dict[str, Any]:
    """Ollama ``options``: the common sampling fields, ``num_predict`` being its name for max_tokens,
    and ``num_ctx`` when the model sets it."""
    fields = sampling_fields(params, max_tokens_key="num_predict")
    if params.num_ctx is not None:
        fields["num_ctx"] = params.num_ctx
    return fields


def estimated_tokens(request: GenerationRequest) -> int:
    """An upper estimate of the request's prompt plus answer in tokens (see the module doc)."""
    if request.mode == "chat":
        chars = sum(len(str(m.get("content", ""))) for m in request.messages)
        overhead = TEMPLATE_TOKENS_PER_MESSAGE * (len(request.messages) + 1)  # + the answer's opening
    else:
        chars, overhead = len(request.prompt or ""), 0
    return chars * TOKENS_PER_CHAR + overhead + request.params.max_tokens


def context_warning(request: GenerationRequest) -> str | None:
    """Why the request may not fit the model's context on Ollama, or None when it fits."""
    needed = estimated_tokens(request)
    window = request.params.num_ctx or DEFAULT_NUM_CTX
    if needed <= window:
        return None
    limit = (
        f"its num_ctx {window}"
        if request.params.num_ctx is not None
        else f"Ollama's default context ({DEFAULT_NUM_CTX} tokens unless the server sets another)"
    )
    return (
        f"Ollama model {request.model!r}: a request needs up to ~{needed} tokens (prompt counted at one token per "
        f"character, plus max_tokens {request.params.max_tokens}), more than {limit}; Ollama cuts such a prompt "
        f"silently. Set num_ctx: {_round_up(needed)} (or more) on the model in the pool file. Warned once per model"
    )


def _round_up(tokens: int) -> int:
    """The next multiple of 1024 at or above ``tokens``: a tidy num_ctx to suggest."""
    return -(-tokens // 1024) * 1024


def build_payload(request: GenerationRequest, structured: StructuredOutput = "none") -> tuple[str, dict[str, Any]]:
    """(path, JSON body) for one request; its ``output_schema`` as ``format`` when ``structured`` says so."""
    payload: dict[str, Any] = {"model": request.model, "stream": False, "options": options(request.params)}
    if request.output_schema is not None and structured == "json_schema":
        payload["format"] = dict(request.output_schema)
    if request.params.top_logprobs is not None:
        payload.update(logprobs=True, top_logprobs=request.params.top_logprobs)
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
        token_logprobs=parse_logprobs({"content": obj["logprobs"]}) if isinstance(obj.get("logprobs"), list) else None,
    )


class OllamaSettings(RemoteSettings):
    """An Ollama server, through its native API: its models may set ``think`` and ``num_ctx``."""

    summary = "Ollama's native API"
    type: Literal["ollama"]
    # A judge's verdict schema goes as ``format``; left out of dumps at its default (the pool fingerprint)
    structured_output: Literal["json_schema", "none"] = Field(
        default="json_schema", exclude_if=lambda v: v == "json_schema"
    )

    def generation_keys(self) -> frozenset[str]:
        return frozenset({"think", "num_ctx"})

    def runner_options(self) -> dict[str, Any]:
        return {"structured_output": self.structured_output}

    def token_logprobs(self) -> bool:
        return True


@backend("ollama", settings=OllamaSettings)
class OllamaRunner(JsonProtocolRunner):
    """A :class:`runners.base.Runner` for one Ollama server (native API). Its default timeout is
    longer: Ollama loads a model's weights on the first request for it; and one request at a time,
    as a default Ollama server answers (more would only queue there and time out)."""

    default_timeout_s = 300.0
    default_max_concurrency = 1
    build_payload = staticmethod(build_payload)
    parse_body = staticmethod(parse_body)

    def __init__(self, base_url: str, *, structured_output: StructuredOutput = "none", **kwargs: Any) -> None:
        if structured_output == "grammar":
            raise ValueError("structured_output 'grammar': Ollama takes a JSON schema (json_schema) or none")
        super().__init__(base_url, **kwargs)
        self.structured_output: StructuredOutput = structured_output
        self._context_warned: set[str] = set()  # models already warned about (once each, not per request)

    async def generate(self, request: GenerationRequest) -> GenerationResponse:
        if request.model not in self._context_warned:
            warning = context_warning(request)
            if warning is not None:
                self._context_warned.add(request.model)
                log.warning("%s", warning)
        path, payload = build_payload(request, self.structured_output)
        return await self._endpoint.post(path, payload, self.parse_body)
