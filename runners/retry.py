"""Calling a JSON endpoint reliably: one classified attempt, and a bounded retry loop around it.

What is retried, and why:

- connection errors (refused, reset, server disconnected, body cut short) and timeouts: the
  request may well succeed on a fresh connection;
- HTTP 429 and 5xx: the server says "not now", not "never";
- a 2xx whose body is not valid JSON, or is valid JSON of the wrong shape (no ``choices``, an
  empty list, a choice with neither message nor text, wrong types): behind a 2xx such a body is
  almost always transient, a connection dropped mid-body, or a flaky proxy or overloaded server
  answering with its own page or error object, so it is retried like a 5xx; the retries are
  bounded and cheap, and a server that really answers this way fails after ``max_retries``.

What is not retried: any other 4xx (our request is wrong; 401/403 become ``"auth"``), and a body
over the runner's caps (``"oversize"``: more than ``max_response_bytes`` after decompression, or
an answer text longer than ``max_answer_chars``): the same request would get the same answer.
The body is read in chunks from aiohttp's decompressing stream and dropped as soon as it passes
the cap, so a small gzip body that inflates to gigabytes costs at most the cap in memory.

Wait before retry n (full jitter, which spreads a herd of clients that failed together)::

    wait_n = max(uniform(0, min(backoff_max_s, backoff_base_s * 2**(n-1))),
                 min(Retry-After, retry_after_cap_s))

so a server's ``Retry-After`` (seconds or an HTTP-date) is a floor, never ignored and never
trusted beyond the cap. At most ``max_retries`` retries, i.e. ``max_retries + 1`` attempts.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import aiohttp
from tenacity import AsyncRetrying, RetryCallState, retry_if_result, stop_after_attempt
from tenacity.wait import wait_random_exponential

from runners.base import (
    DEFAULT_MAX_ANSWER_CHARS,
    DEFAULT_MAX_RESPONSE_BYTES,
    Attempt,
    ErrorClass,
    GenerationResponse,
)

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]
# Turns a 2xx JSON body into a response (latency and attempts are filled in later); raises
# BadResponse when the JSON has the wrong shape.
ParseFn = Callable[[Any], GenerationResponse]

MAX_DETAIL_CHARS = 200
BODY_CHUNK_BYTES = 64 * 1024
ERROR_BODY_BYTES = 64 * 1024  # a non-2xx body is read only for its error message


class BadResponse(Exception):
    """A 2xx body that is valid JSON but not the shape the protocol promises."""


class Oversize(Exception):
    """A body over the runner's byte cap; the connection is closed without reading the rest."""


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try one request; tests shrink the waits (e.g. base 0.01 s)."""

    max_retries: int = 3
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    retry_after_cap_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.backoff_base_s < 0 or self.backoff_max_s < 0 or self.retry_after_cap_s < 0:
            raise ValueError("backoff_base_s, backoff_max_s and retry_after_cap_s must be >= 0")


@dataclass(frozen=True)
class Outcome:
    """What one attempt produced: a parsed response, or a classified failure."""

    response: GenerationResponse | None
    status: int | None
    error_class: ErrorClass | None
    detail: str = ""
    retryable: bool = False
    retry_after_s: float | None = None


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait per a ``Retry-After`` header (delta-seconds or HTTP-date); None if unreadable."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    now = now or datetime.now(UTC)
    return max(0.0, (when - now).total_seconds())


def classify_status(status: int) -> tuple[ErrorClass, bool]:
    """(error_class, retryable) for a non-2xx HTTP status."""
    if status == 429:
        return "rate_limited", True
    if status >= 500:
        return "server_error", True
    if status == 408:  # the server gave up waiting for us: a timeout, worth another try
        return "timeout", True
    if status in (401, 403):
        return "auth", False
    return "client_error", False


def classify_exception(exc: BaseException, timeout_s: float) -> tuple[ErrorClass, bool, str]:
    """(error_class, retryable, detail) for an exception raised while calling or reading."""
    name = type(exc).__name__
    # asyncio.TimeoutError is TimeoutError, and aiohttp's timeouts subclass it: check it first,
    # since aiohttp's ServerTimeoutError is also a ClientConnectionError.
    if isinstance(exc, TimeoutError):
        return "timeout", True, f"no complete answer within {timeout_s:g} s ({name})"
    if isinstance(exc, (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)):
        return "connection", True, f"{name}: {exc}"
    return "client_error", False, f"{name}: {exc}"


def redact(text: str, secret: str | None) -> str:
    """Remove the secret (if any) and shorten, so a detail is safe to store and log."""
    if secret:
        text = text.replace(secret, "***")
    text = " ".join(text.split())
    if len(text) > MAX_DETAIL_CHARS:
        text = text[: MAX_DETAIL_CHARS - 3] + "..."
    return text


def _error_message(body: bytes) -> str:
    """The server's own error message when the body is JSON with one, else the raw start of it."""
    try:
        obj = json.loads(body)
    except ValueError:
        return body[:MAX_DETAIL_CHARS].decode("utf-8", "replace")
    if isinstance(obj, dict):
        err = obj.get("error", obj.get("detail", obj.get("message")))
        if isinstance(err, dict):
            err = err.get("message", err)
        if err is not None:
            return str(err)
    return body[:MAX_DETAIL_CHARS].decode("utf-8", "replace")


async def read_bounded(resp: aiohttp.ClientResponse, max_bytes: int) -> bytes:
    """The whole (decompressed) body, or Oversize as soon as it passes ``max_bytes``.

    A ``Content-Length`` over the cap is refused before reading anything. Otherwise chunks come
    from aiohttp's decompressing stream, so memory stays below ``max_bytes + BODY_CHUNK_BYTES``
    however far the body would inflate; on Oversize the connection is closed, never drained.
    That bound needs aiohttp >= 3.13.3, which inflates in bounded steps (CVE-2025-69223): older
    versions inflate each network read whole before this loop sees a byte.
    """
    declared = resp.content_length
    if declared is not None and declared > max_bytes:
        resp.close()
        raise Oversize(f"Content-Length {declared} exceeds max_response_bytes={max_bytes}")
    body = bytearray()
    async for chunk in resp.content.iter_chunked(BODY_CHUNK_BYTES):
        body += chunk
        if len(body) > max_bytes:
            resp.close()
            raise Oversize(f"response body exceeded max_response_bytes={max_bytes} (after decompression)")
    return bytes(body)


async def _read_error_body(resp: aiohttp.ClientResponse) -> bytes:
    """Enough of a non-2xx body for its message: the status already classifies the failure."""
    try:
        return await read_bounded(resp, ERROR_BODY_BYTES)
    except Oversize:
        return f"(error body over {ERROR_BODY_BYTES} bytes, not read)".encode()


async def post_json(
    session: aiohttp.ClientSession,
    url: str,
    payload: Mapping[str, Any],
    headers: Mapping[str, str],
    timeout_s: float,
    parse: ParseFn,
    *,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
) -> Outcome:
    """One POST, classified; never raises (except cancellation, which must propagate)."""
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    try:
        async with session.post(url, json=payload, headers=dict(headers), timeout=timeout) as resp:
            status = resp.status
            retry_after = parse_retry_after(resp.headers.get("Retry-After"))
            if not 200 <= status < 300:
                body = await _read_error_body(resp)
            else:
                try:
                    body = await read_bounded(resp, max_response_bytes)
                except Oversize as exc:
                    return Outcome(None, status, "oversize", f"HTTP {status} {exc}", retryable=False)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a recorded outcome
        error_class, retryable, detail = classify_exception(exc, timeout_s)
        return Outcome(None, None, error_class, detail, retryable)

    if not 200 <= status < 300:
        error_class, retryable = classify_status(status)
        detail = f"HTTP {status}: {_error_message(body)}"
        if retry_after is not None:
            detail = f"HTTP {status} (Retry-After {retry_after:g} s): {_error_message(body)}"
        return Outcome(None, status, error_class, detail, retryable, retry_after)

    try:
        obj = json.loads(body)
    except ValueError as exc:  # also UnicodeDecodeError
        detail = f"HTTP {status} body is not valid JSON ({len(body)} bytes): {exc}"
        return Outcome(None, status, "bad_response", detail, retryable=True)
    try:
        response = parse(obj)
    except (BadResponse, KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        detail = f"HTTP {status} JSON has an unexpected shape: {exc}"
        return Outcome(None, status, "bad_response", detail, retryable=True)
    if len(response.text) > max_answer_chars:
        detail = f"HTTP {status} answer text is {len(response.text)} chars, over max_answer_chars={max_answer_chars}"
        return Outcome(None, status, "oversize", detail, retryable=False)
    return Outcome(response, status, None)


def _wait_strategy(policy: RetryPolicy) -> Callable[[RetryCallState], float]:
    backoff = wait_random_exponential(multiplier=policy.backoff_base_s, max=policy.backoff_max_s)

    def wait(state: RetryCallState) -> float:
        seconds = backoff(state)
        outcome = state.outcome.result() if state.outcome and not state.outcome.failed else None
        if outcome is not None and outcome.retry_after_s is not None:
            seconds = max(seconds, min(outcome.retry_after_s, policy.retry_after_cap_s))
        return seconds

    return wait


def _last_outcome(state: RetryCallState) -> Outcome:
    """When retries run out, hand back the last outcome instead of raising RetryError."""
    assert state.outcome is not None
    outcome: Outcome = state.outcome.result()
    return outcome


def failed_response(
    error_class: ErrorClass, detail: str, latency_s: float = 0.0, attempts: tuple[Attempt, ...] = ()
) -> GenerationResponse:
    """A response that records a failure: empty text, never an error string in place of an answer."""
    return GenerationResponse(
        text="",
        finish_reason=None,
        prompt_tokens=None,
        completion_tokens=None,
        latency_s=latency_s,
        attempts=attempts,
        error_class=error_class,
        error_detail=detail,
    )


async def call_with_retries(
    attempt: Callable[[], Awaitable[Outcome]],
    policy: RetryPolicy,
    sleep: Sleep = asyncio.sleep,
    secret: str | None = None,
) -> GenerationResponse:
    """Run ``attempt`` until it succeeds, fails for good, or ``max_retries`` retries are spent."""
    attempts: list[Attempt] = []
    started = time.perf_counter()

    async def recorded() -> Outcome:
        t0 = time.perf_counter()
        outcome = await attempt()
        if outcome.detail:
            outcome = replace(outcome, detail=redact(outcome.detail, secret))
        attempts.append(
            Attempt(
                number=len(attempts) + 1,
                status=outcome.status,
                error_class=outcome.error_class,
                latency_s=time.perf_counter() - t0,
                detail=outcome.detail,
            )
        )
        if outcome.error_class is not None:
            log.debug(
                "attempt %d failed (%s, retryable=%s): %s",
                len(attempts),
                outcome.error_class,
                outcome.retryable,
                outcome.detail,
            )
        return outcome

    # Fast path: most calls succeed at once, and building a tenacity loop costs ~90 µs per call.
    # A retryable first outcome is replayed as tenacity's attempt 1, so waits and counts are unchanged.
    final: Outcome = await recorded()
    if final.retryable and policy.max_retries > 0:
        replay = [final]

        async def replay_then_attempt() -> Outcome:
            return replay.pop() if replay else await recorded()

        retrying = AsyncRetrying(
            stop=stop_after_attempt(policy.max_retries + 1),
            wait=_wait_strategy(policy),
            retry=retry_if_result(lambda o: o.retryable),
            sleep=sleep,
            retry_error_callback=_last_outcome,
        )
        final = await retrying(replay_then_attempt)
    latency = time.perf_counter() - started
    if final.response is not None:
        return replace(final.response, latency_s=latency, attempts=tuple(attempts))
    assert final.error_class is not None
    plural = "s" if len(attempts) != 1 else ""
    return failed_response(
        final.error_class, f"{final.detail} (after {len(attempts)} attempt{plural})", latency, tuple(attempts)
    )


class JsonEndpoint:
    """One base URL: a lazily created aiohttp session, the API key read from the environment per call.

    The key is never stored on the object: reading it at call time lets a rotated key take effect
    without rebuilding runners, and keeps it out of every repr.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key_env: str | None,
        timeout_s: float,
        policy: RetryPolicy,
        sleep: Sleep = asyncio.sleep,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if max_response_bytes <= 0 or max_answer_chars <= 0:
            raise ValueError(
                f"max_response_bytes and max_answer_chars must be > 0, got {max_response_bytes} and {max_answer_chars}"
            )
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.max_response_bytes = max_response_bytes
        self.max_answer_chars = max_answer_chars
        self.policy = policy
        self._sleep = sleep
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return f"JsonEndpoint(base_url={self.base_url!r}, api_key_env={self.api_key_env!r})"

    async def post(self, path: str, payload: Mapping[str, Any], parse: ParseFn) -> GenerationResponse:
        """POST ``payload`` to ``base_url + path`` with retries; never raises for a failed call."""
        headers = {"Content-Type": "application/json"}
        key: str | None = None
        if self.api_key_env:
            key = os.environ.get(self.api_key_env) or None
            if key is None:
                return failed_response(
                    # The variable's name is not written: the detail is stored with the result, and a
                    # "name" can be a pasted token.
                    "auth",
                    f"the API key variable that api_key_env names is not set (or empty); "
                    f"export it with the API key for {self.base_url}",
                )
            headers["Authorization"] = f"Bearer {key}"
        if self._session is None or self._session.closed:
            # limit=0: the lane's max_concurrency is the limit; aiohttp's default pool (100) would cap it
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        session, url = self._session, self.base_url + path

        async def attempt() -> Outcome:
            return await post_json(
                session,
                url,
                payload,
                headers,
                self.timeout_s,
                parse,
                max_response_bytes=self.max_response_bytes,
                max_answer_chars=self.max_answer_chars,
            )

        return await call_with_retries(attempt, self.policy, self._sleep, secret=key)

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None
