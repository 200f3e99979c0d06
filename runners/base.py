"""The one small interface every backend protocol implements.

A runner turns a :class:`GenerationRequest` into a :class:`GenerationResponse`. It knows nothing of
items, runs, stores or judging: the pool scheduler owns those. Runners never raise for a failed
call; they return a response whose ``error_class`` says what went wrong, so that a failure is a
recorded fact rather than a lost exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Mode = Literal["chat", "completion"]

# A hostile or broken server must not cost unbounded memory: the body is read in chunks after
# decompression and dropped as soon as it passes the byte cap (a 306 KB gzip body can inflate to
# 314 MB), and an answer longer than the character cap is refused. A real answer of 512 tokens is
# a few KB; 8 MiB and 200,000 characters leave two orders of magnitude of room.
DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_ANSWER_CHARS = 200_000

# Why a call produced no usable answer. ``None`` means the server answered.
ErrorClass = Literal[
    "connection",  # refused, reset, DNS: we never got an HTTP answer
    "timeout",  # no complete answer within the backend's timeout
    "rate_limited",  # 429 after all retries
    "server_error",  # 5xx after all retries
    "client_error",  # other 4xx: our request is wrong; never retried
    "bad_response",  # 2xx with a body we cannot parse (not JSON, or JSON of the wrong shape)
    "oversize",  # body or answer text over the runner's caps; never retried (same request, same answer)
    "auth",  # the api_key_env variable is unset or the server said 401/403
    "model_failed",  # set by the pool scheduler, never by a runner: the model was given up on
]


@dataclass(frozen=True)
class GenerationParams:
    """Everything besides the input that shapes an answer (and so belongs in the cache key)."""

    temperature: float = 0.0
    max_tokens: int = 512
    stop: tuple[str, ...] = ()
    top_p: float | None = None
    seed: int | None = None
    # Reasoning models: True/False, or a level ("low"/"medium"/"high") for Ollama models that take one;
    # None means the field is not sent and the model's default applies. Ollama takes it natively, an
    # OpenAI-compatible backend in the field its ``think_param`` setting names.
    think: bool | str | None = None
    # Ollama only: the context window (``options.num_ctx``) the server loads the model with; None
    # sends nothing and the server's default applies (Ollama cuts a longer prompt silently).
    num_ctx: int | None = None
    # How many alternatives (with their log-probabilities) to return for each generated token; None
    # asks for none, and sends nothing (a judge asks, to weigh its scores: ``judge.weighting``).
    top_logprobs: int | None = None


@dataclass(frozen=True)
class GenerationRequest:
    """One call: OpenAI-style chat ``messages`` or a raw ``prompt`` for base models."""

    model: str
    mode: Mode = "chat"
    messages: tuple[dict[str, str], ...] = ()
    prompt: str | None = None
    params: GenerationParams = field(default_factory=GenerationParams)
    # The JSON Schema the answer must match (a judge's verdict), a plain dict; None for free text. The
    # backend's ``structured_output`` setting says how the server is told (runners.structured).
    output_schema: Mapping[str, Any] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        if self.mode == "chat" and not self.messages:
            raise ValueError("chat request needs at least one message")
        if self.mode == "completion" and self.prompt is None:
            raise ValueError("completion request needs a prompt")


@dataclass(frozen=True)
class Attempt:
    """One HTTP attempt, kept so retries are visible in results and summaries."""

    number: int
    status: int | None  # HTTP status, None when no answer arrived
    error_class: ErrorClass | None
    latency_s: float
    detail: str = ""  # short, key-free description (never the request headers)


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token: its text, its log-probability, and the most likely tokens at its position
    (``top``: (text, log-probability) pairs, most likely first; the generated token may be among them)."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()

    def to_json(self) -> list[Any]:
        """``[token, logprob, [[alt, logprob], ...]]``: how a run store and the response cache keep it."""
        return [self.token, self.logprob, [[t, lp] for t, lp in self.top]]

    @classmethod
    def from_json(cls, value: Any) -> TokenLogprob:
        token, logprob, top = value
        return cls(str(token), float(logprob), tuple((str(t), float(lp)) for t, lp in top))


def logprobs_to_json(tokens: tuple[TokenLogprob, ...] | None) -> list[Any] | None:
    """A response's token logprobs as plain JSON (None stays None)."""
    return None if tokens is None else [t.to_json() for t in tokens]


def logprobs_from_json(value: Any) -> tuple[TokenLogprob, ...] | None:
    """The inverse of :func:`logprobs_to_json`; None for anything that is not such a list."""
    if not isinstance(value, list):
        return None
    try:
        return tuple(TokenLogprob.from_json(v) for v in value)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class GenerationResponse:
    text: str
    finish_reason: str | None  # "stop", "length", ... as the server said
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float  # wall time over all attempts
    attempts: tuple[Attempt, ...] = ()
    error_class: ErrorClass | None = None
    error_detail: str = ""
    server_timing_s: float | None = None  # the server's own generation time, when it reports one
    reasoning: str | None = None  # separate thinking trace (Ollama message.thinking); never in text
    # Per generated token, when the request asked for ``top_logprobs`` and the server gave them; else None.
    token_logprobs: tuple[TokenLogprob, ...] | None = None

    @property
    def ok(self) -> bool:
        return self.error_class is None


class Runner(Protocol):
    """A backend protocol bound to one endpoint; one aiohttp session per runner."""

    async def generate(self, request: GenerationRequest) -> GenerationResponse: ...

    async def aclose(self) -> None: ...
