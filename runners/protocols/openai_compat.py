"""The OpenAI-compatible protocol: vLLM, llama.cpp server, LiteLLM, DeepSeek, SiliconFlow, ...

``base_url`` includes the API prefix (``http://host:8000/v1``); chat mode posts
``{base_url}/chat/completions`` with ``messages``, completion mode posts ``{base_url}/completions``
with ``prompt``. A 2xx with empty content is an answer (``text=""``): whether it is a bad one is
the scorer's call, not the transport's.

``think`` has no field in the OpenAI API, so each server takes it in its own: the backend's
``think_param`` setting says which, and a model's ``think`` is sent there, in chat mode only (a
completion request has no chat template to switch):

- ``chat_template_kwargs``: ``"chat_template_kwargs": {"enable_thinking": true|false}``, the
  variable Qwen3's chat template reads, passed to it by vLLM (and SGLang);
- ``enable_thinking``: a top-level ``"enable_thinking": true|false`` (SiliconFlow's API);
- ``none`` (the default): the backend takes no ``think``, and the pool file refuses one.

A request with an ``output_schema`` (a judge's verdict) is constrained as the backend's
``structured_output`` says (:mod:`runners.structured`): ``json_schema`` (the default) sends
``response_format``, and a server that refuses it gets that request again without it, once per
runner: the refusal is remembered, and until the first constrained request has an answer the others
wait for it, so a refusing server sees exactly one refused request (:mod:`runners.refusable`). ``grammar`` sends a GBNF
``grammar`` (llama.cpp's servers; the default of the managed ``llamacpp`` type); ``none`` sends no
schema.

A request whose params set ``top_logprobs`` (a judge weighing its scores, ``judge.weighting``) sends
``logprobs: true, top_logprobs: k`` in chat mode and ``logprobs: k`` in completion mode; both answer
shapes are read back (chat: ``choices[0].logprobs.content[]`` of ``{token, logprob, top_logprobs:
[{token, logprob}]}``; completion: ``choices[0].logprobs`` with ``tokens``, ``token_logprobs`` and
``top_logprobs`` as one ``{token: logprob}`` map per token). A body without them gives
``token_logprobs = None``: never invented.
A server that refuses them (a 4xx naming ``logprobs``, or any client 4xx that the same request
without them does not get) is handled like a refused ``response_format``: one refused request, one
warning, and the rest of the run's requests to that endpoint are sent without them, so their
answers have ``token_logprobs = None`` and are scored argmax.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from runners.base import GenerationRequest, GenerationResponse
from runners.llamacpp.settings import LlamaCppSettings
from runners.protocol import LOGPROBS, JsonProtocolRunner, int_or_none, parse_logprobs, sampling_fields
from runners.refusable import FieldProbe, OptionalField
from runners.registry import backend
from runners.retry import BadResponse
from runners.settings import RemoteSettings
from runners.structured import RESPONSE_FORMAT, STRUCTURED_OUTPUTS, StructuredOutput, grammar, response_format

# Where a backend takes ``think`` (see the module doc); "none": it takes none.
ThinkParam = Literal["none", "chat_template_kwargs", "enable_thinking"]
THINK_PARAMS: tuple[str, ...] = ThinkParam.__args__  # type: ignore[attr-defined]


def _content_text(content: Any) -> str:
    """``message.content`` as text: a string, null, or a list of typed parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    raise BadResponse(f"message.content is {type(content).__name__}, expected a string")


def build_payload(
    request: GenerationRequest,
    think_param: ThinkParam = "none",
    structured: StructuredOutput = "none",
    logprobs: bool = True,
) -> tuple[str, dict[str, Any]]:
    """(path, JSON body) for one request; ``think`` goes where ``think_param`` says (chat mode only), the
    request's ``output_schema`` as ``structured`` says (``runners.structured``), its ``top_logprobs``
    unless ``logprobs`` is False (a server that refused them)."""
    payload: dict[str, Any] = {"model": request.model, "stream": False, **sampling_fields(request.params)}
    if request.output_schema is not None and structured == "json_schema":
        payload["response_format"] = response_format(request.output_schema)
    elif request.output_schema is not None and structured == "grammar":
        payload["grammar"] = grammar(request.output_schema)
    k = request.params.top_logprobs if logprobs else None
    if request.mode == "chat":
        payload["messages"] = [dict(m) for m in request.messages]
        if k is not None:
            payload.update(logprobs=True, top_logprobs=k)
        think = request.params.think
        if think is not None and think_param != "none":
            if not isinstance(think, bool):  # the pool file refuses levels here; a caller may not
                raise ValueError(f"think {think!r}: {think_param} takes true or false, not a level")
            if think_param == "chat_template_kwargs":
                payload["chat_template_kwargs"] = {"enable_thinking": think}
            else:
                payload["enable_thinking"] = think
        return "/chat/completions", payload
    payload["prompt"] = request.prompt
    if k is not None:
        payload["logprobs"] = k
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
        token_logprobs=parse_logprobs(choice.get("logprobs")),
    )


class OpenAICompatSettings(RemoteSettings):
    """What every OpenAI-compatible server type shares: where it takes ``think`` (``think_param``) and
    how a judge's verdict schema is sent (``structured_output``, default ``json_schema``).

    ``think_param: none`` and ``structured_output: json_schema`` are left out of the pool fingerprint,
    so runs planned before the settings existed resume unchanged (a constrained judge is told apart by
    its verdicts' identity, ``pool.score.identity``).
    """

    think_param: ThinkParam = Field(default="none", exclude_if=lambda value: value == "none")
    structured_output: StructuredOutput = Field(default="json_schema", exclude_if=lambda v: v == "json_schema")

    def generation_keys(self) -> frozenset[str]:
        return frozenset() if self.think_param == "none" else frozenset({"think"})

    def runner_options(self) -> dict[str, Any]:
        return {"think_param": self.think_param, "structured_output": self.structured_output}

    def token_logprobs(self) -> bool:
        return True


class OpenAISettings(OpenAICompatSettings):
    """Any OpenAI-compatible server or API (DeepSeek, vLLM, llama.cpp you run yourself...)."""

    summary = "any OpenAI-compatible server or API"
    type: Literal["openai"]


@backend("llamacpp", settings=LlamaCppSettings)
@backend("openai", settings=OpenAISettings)
class OpenAICompatRunner(JsonProtocolRunner):
    """A :class:`runners.base.Runner` for one OpenAI-compatible endpoint. ``llamacpp`` is served
    too: the managed llama.cpp server speaks this protocol (starting it is not the runner's job).
    ``think_param`` and ``structured_output`` are the backend's settings (see the module doc)."""

    build_payload = staticmethod(build_payload)
    parse_body = staticmethod(parse_body)

    def __init__(
        self,
        base_url: str,
        *,
        think_param: ThinkParam = "none",
        structured_output: StructuredOutput = "none",
        **kwargs: Any,
    ) -> None:
        if think_param not in THINK_PARAMS:
            raise ValueError(f"think_param {think_param!r}: expected one of {', '.join(THINK_PARAMS)}")
        if structured_output not in STRUCTURED_OUTPUTS:
            raise ValueError(
                f"structured_output {structured_output!r}: expected one of {', '.join(STRUCTURED_OUTPUTS)}"
            )
        super().__init__(base_url, **kwargs)
        self.think_param = think_param
        self.structured_output: StructuredOutput = structured_output
        self.refusals = FieldProbe(self)  # optional fields this endpoint took or refused (runners.refusable)

    @property
    def schema_accepted(self) -> bool | None:
        """json_schema only: None until the server has answered a constrained request (took it, or refused it)."""
        return self.refusals.state.get(RESPONSE_FORMAT.name)

    @property
    def logprobs_accepted(self) -> bool | None:
        """None until the server has answered a request asking for token logprobs (took them, or refused them)."""
        return self.refusals.state.get(LOGPROBS.name)

    def _optional_fields(self, request: GenerationRequest) -> list[OptionalField]:
        """The refusable fields ``request`` would carry."""
        fields = []
        if request.output_schema is not None and self.structured_output == "json_schema":
            fields.append(RESPONSE_FORMAT)
        if request.params.top_logprobs is not None:
            fields.append(LOGPROBS)
        return fields

    async def _send(self, request: GenerationRequest, fields: frozenset[str]) -> GenerationResponse:
        structured = self.structured_output
        if structured == "json_schema" and RESPONSE_FORMAT.name not in fields:
            structured = "none"
        path, payload = build_payload(request, self.think_param, structured, LOGPROBS.name in fields)
        return await self._endpoint.post(path, payload, self.parse_body)

    async def generate(self, request: GenerationRequest) -> GenerationResponse:
        return await self.refusals.send(self._optional_fields(request), lambda fields: self._send(request, fields))
