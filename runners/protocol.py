"""What the JSON-over-HTTP protocols share: a runner is an endpoint plus two pure functions.

A protocol module subclasses :class:`JsonProtocolRunner` and supplies only what differs between
protocols: the pool ``type`` names it serves (``@backend`` in ``runners.registry``), its default
timeout, ``build_payload(request) -> (path, JSON body)`` and ``parse_body(json) -> response``. The
session, the key read at call time, the size caps, the error classes and the retry loop belong to
the endpoint (``runners.retry.JsonEndpoint``) and are written once for every protocol.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any, ClassVar

from runners.base import (
    DEFAULT_MAX_ANSWER_CHARS,
    DEFAULT_MAX_RESPONSE_BYTES,
    GenerationParams,
    GenerationRequest,
    GenerationResponse,
    TokenLogprob,
)
from runners.refusable import OptionalField
from runners.retry import JsonEndpoint, RetryPolicy, Sleep

# A weighing judge's token logprobs as an optional request field (runners.refusable): a hosted API that
# refuses them, naming them or not, is asked without them for the rest of the run.
LOGPROBS = OptionalField(
    "logprobs",
    re.compile(r"logprob", re.IGNORECASE),
    "judge verdicts from this endpoint are asked without token logprobs and scored argmax for the rest of "
    "the run (set judge_scores: argmax in the pool file to skip the first try)",
    unnamed_refusal=True,
)


def int_or_none(value: Any) -> int | None:
    """A token count as the server gave it, when it is an integer (``True`` is not a count)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def sampling_fields(params: GenerationParams, max_tokens_key: str = "max_tokens") -> dict[str, Any]:
    """The sampling settings every protocol sends, optional ones only when set; protocols differ in
    the name of the length limit (OpenAI ``max_tokens``, Ollama ``num_predict``)."""
    fields: dict[str, Any] = {"temperature": params.temperature, max_tokens_key: params.max_tokens}
    if params.stop:
        fields["stop"] = list(params.stop)
    if params.top_p is not None:
        fields["top_p"] = params.top_p
    if params.seed is not None:
        fields["seed"] = params.seed
    return fields


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def parse_logprobs(logprobs: Any) -> tuple[TokenLogprob, ...] | None:
    """``choices[0].logprobs`` in either OpenAI shape (``runners.protocols.openai_compat``) → one entry
    per generated token; None when absent or not in either shape."""
    if not isinstance(logprobs, dict):
        return None
    content = logprobs.get("content")
    if isinstance(content, list):  # chat
        out = []
        for entry in content:
            if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
                return None
            logprob = _number(entry.get("logprob"))
            if logprob is None:
                return None
            top = [
                (alt["token"], lp)
                for alt in entry.get("top_logprobs") or ()
                if isinstance(alt, dict)
                and isinstance(alt.get("token"), str)
                and (lp := _number(alt.get("logprob"))) is not None
            ]
            out.append(TokenLogprob(entry["token"], logprob, tuple(top)))
        return tuple(out)
    tokens, values, tops = logprobs.get("tokens"), logprobs.get("token_logprobs"), logprobs.get("top_logprobs")
    if not isinstance(tokens, list) or not isinstance(values, list) or len(tokens) != len(values):
        return None
    tops = tops if isinstance(tops, list) and len(tops) == len(tokens) else [None] * len(tokens)
    out = []
    for token, value, top in zip(tokens, values, tops, strict=True):
        logprob = _number(value)
        if not isinstance(token, str) or logprob is None:
            return None
        pairs = [(t, lp) for t, v in (top if isinstance(top, dict) else {}).items() if (lp := _number(v)) is not None]
        out.append(TokenLogprob(token, logprob, tuple(sorted(pairs, key=lambda p: -p[1]))))
    return tuple(out)


class JsonProtocolRunner:
    """A :class:`runners.base.Runner` for one endpoint of a JSON protocol (see the module doc).

    Subclasses set ``build_payload`` and ``parse_body`` (static: they see only the request or the
    decoded body) and may change the defaults below, which a pool file's backend entry inherits
    for any key it leaves out (``timeout_s``, ``max_concurrency``): each default lives here, beside
    the protocol it suits, and nowhere else.
    """

    default_timeout_s: ClassVar[float] = 120.0  # seconds one attempt may take
    default_max_concurrency: ClassVar[int] = 8  # requests in flight; hosted APIs serve many at once

    def __init__(
        self,
        base_url: str,
        *,
        api_key_env: str | None = None,
        timeout_s: float | None = None,
        policy: RetryPolicy | None = None,
        sleep: Sleep = asyncio.sleep,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
    ) -> None:
        self._endpoint = JsonEndpoint(
            base_url,
            api_key_env=api_key_env,
            timeout_s=self.default_timeout_s if timeout_s is None else timeout_s,
            policy=policy or RetryPolicy(),
            sleep=sleep,
            max_response_bytes=max_response_bytes,
            max_answer_chars=max_answer_chars,
        )

    @staticmethod
    def build_payload(request: GenerationRequest) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError

    @staticmethod
    def parse_body(obj: Any) -> GenerationResponse:
        raise NotImplementedError

    def __repr__(self) -> str:
        e = self._endpoint
        return f"{type(self).__name__}(base_url={e.base_url!r}, api_key_env={e.api_key_env!r})"

    async def generate(self, request: GenerationRequest) -> GenerationResponse:
        path, payload = self.build_payload(request)
        return await self._endpoint.post(path, payload, self.parse_body)

    async def aclose(self) -> None:
        await self._endpoint.aclose()
