"""Forwarding one chat request to one upstream, and telling a dead upstream from an answer.

An upstream is *dead for this request* — the router tries the next model of the route's chain —
when it refuses or drops the connection, times out (the pool file's ``timeout_s`` for that
backend), answers 429 or 5xx, or its key variable is unset. Any other answer, 4xx included, is the
answer: a 2xx body is passed through unchanged; a 4xx goes back as an OpenAI-style error with the
upstream's status (its own ``error`` object when it sent one). A stream is passed through chunk by
chunk once the upstream has answered 200; if it breaks or outgrows the size cap after that, the
client gets an SSE ``error`` event and the end of the stream (nothing can be retried once sent).

The key is read from the environment variable the pool names, at call time, and only ever put in
the upstream request's ``Authorization`` header: never in a response, a log line or a metric.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from pool.serve.state import Upstream

HOP_HEADER = "x-medpool-router-hop"  # set on every forwarded request; a request carrying it is a routing loop
DEAD_COOLDOWN_S = 10.0  # an upstream that refused or timed out is tried after the live ones for this long
STREAM_CHUNK = 64 * 1024


class Dead(Exception):
    """This upstream could not answer this request; ``status`` is what the client gets if every model is dead."""

    def __init__(self, reason: str, status: int, message: str, error: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.reason, self.status, self.message, self.error = reason, status, message, error


def openai_error(
    status: int,
    message: str,
    kind: str = "upstream_error",
    param: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> web.Response:
    """An OpenAI-style error body with ``status``."""
    body = {"error": {"message": message, "type": kind, "param": param, "code": status}}
    return web.json_response(body, status=status, headers=headers)


def _upstream_error(raw: bytes) -> Mapping[str, Any] | None:
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else None


@dataclass
class Forwarder:
    """The router's one HTTP client session, and which upstreams recently refused or hung."""

    session: aiohttp.ClientSession
    dead_until: dict[str, float]
    turns: dict[str, int] = field(default_factory=dict)  # per model: requests sent, to take its replicas in turn

    @classmethod
    def open(cls) -> Forwarder:
        connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
        return cls(aiohttp.ClientSession(connector=connector, auto_decompress=True), {})

    def url_of(self, upstream: Upstream) -> str:
        """The URL for this request: the upstream's, or its next replica's (a managed backend with several)."""
        if not upstream.replica_urls:
            return upstream.url
        turn = self.turns.get(upstream.model, 0)
        self.turns[upstream.model] = turn + 1
        return upstream.replica_urls[turn % len(upstream.replica_urls)]

    async def close(self) -> None:
        await self.session.close()

    def order(self, chain: tuple[str, ...], upstreams: Mapping[str, Upstream]) -> list[Upstream]:
        """The chain's servable upstreams, live ones first (each group in chain order)."""
        now = time.monotonic()
        usable = [upstreams[m] for m in chain if m in upstreams]
        return [u for u in usable if self.dead_until.get(u.model, 0) <= now] + [
            u for u in usable if self.dead_until.get(u.model, 0) > now
        ]

    def _headers(self, upstream: Upstream) -> dict[str, str]:
        headers = {"Content-Type": "application/json", HOP_HEADER: "1"}
        if upstream.api_key_env:
            key = os.environ.get(upstream.api_key_env)
            if not key:
                raise Dead(
                    "no_key",
                    500,
                    f"model {upstream.model!r}: the router's environment has no {upstream.api_key_env} "
                    "(the key variable its pool backend names); set it and restart the router",
                )
            headers["Authorization"] = f"Bearer {key}"
        return headers

    async def forward(
        self, request: web.Request, upstream: Upstream, payload: Mapping[str, Any], route_header: str, stream: bool
    ) -> tuple[web.StreamResponse, float]:
        """(the response sent or to send, seconds spent waiting on the upstream); raises :class:`Dead`."""
        headers = self._headers(upstream)
        timeout = aiohttp.ClientTimeout(
            total=None if stream else upstream.timeout_s, sock_connect=upstream.timeout_s, sock_read=upstream.timeout_s
        )
        started = time.perf_counter()
        try:
            response = await self.session.post(
                self.url_of(upstream), json=payload, headers=headers, timeout=timeout, allow_redirects=False
            )
        except TimeoutError:
            self.dead_until[upstream.model] = time.monotonic() + DEAD_COOLDOWN_S
            raise Dead(
                "timeout", 504, f"model {upstream.model!r} did not answer within {upstream.timeout_s:g} s"
            ) from None
        except aiohttp.ClientError as exc:
            self.dead_until[upstream.model] = time.monotonic() + DEAD_COOLDOWN_S
            raise Dead("connection", 502, f"model {upstream.model!r} is unreachable ({type(exc).__name__})") from None
        try:
            if response.status == 429 or response.status >= 500 or 300 <= response.status < 400:
                raw = await self._read(response, upstream, started)
                raise Dead(
                    f"http_{response.status}",
                    response.status,
                    f"model {upstream.model!r} answered HTTP {response.status}",
                    _upstream_error(raw),
                )
            if stream and response.status == 200:
                return await self._stream(request, response, upstream, route_header), time.perf_counter() - started
            raw = await self._read(response, upstream, started)
            waited = time.perf_counter() - started
            if response.status >= 400:
                error = _upstream_error(raw) or {
                    "message": f"model {upstream.model!r} answered HTTP {response.status}",
                    "type": "upstream_error",
                    "param": None,
                    "code": response.status,
                }
                return web.json_response(
                    {"error": error}, status=response.status, headers={"x-medpool-route": route_header}
                ), waited
            return web.Response(
                status=response.status,
                body=raw,
                content_type="application/json",
                headers={"x-medpool-route": route_header},
            ), waited
        finally:
            response.release()

    async def _read(self, response: aiohttp.ClientResponse, upstream: Upstream, started: float) -> bytes:
        """The whole body, at most ``max_response_bytes`` (more is a dead upstream: a runaway or hostile server)."""
        chunks, size = [], 0
        try:
            async for chunk in response.content.iter_chunked(STREAM_CHUNK):
                size += len(chunk)
                if size > upstream.max_response_bytes:
                    raise Dead(
                        "oversize", 502, f"model {upstream.model!r} sent more than {upstream.max_response_bytes} bytes"
                    )
                chunks.append(chunk)
        except TimeoutError:
            self.dead_until[upstream.model] = time.monotonic() + DEAD_COOLDOWN_S
            raise Dead(
                "timeout", 504, f"model {upstream.model!r} did not finish its answer within {upstream.timeout_s:g} s"
            ) from None
        except aiohttp.ClientError as exc:
            raise Dead(
                "connection", 502, f"model {upstream.model!r} broke off its answer ({type(exc).__name__})"
            ) from None
        return b"".join(chunks)

    async def _stream(
        self, request: web.Request, response: aiohttp.ClientResponse, upstream: Upstream, route_header: str
    ) -> web.StreamResponse:
        out = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": response.headers.get("Content-Type", "text/event-stream"),
                "Cache-Control": "no-cache",
                "x-medpool-route": route_header,
            },
        )
        await out.prepare(request)
        size = 0
        try:
            async for chunk in response.content.iter_any():
                size += len(chunk)
                if size > upstream.max_response_bytes:
                    raise ValueError(f"the stream outgrew {upstream.max_response_bytes} bytes")
                await out.write(chunk)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            reason = str(exc) if isinstance(exc, ValueError) else type(exc).__name__
            event = {
                "error": {
                    "message": f"model {upstream.model!r}: the stream broke off ({reason})",
                    "type": "upstream_error",
                    "param": None,
                    "code": 502,
                }
            }
            await out.write(f"data: {json.dumps(event)}\n\n".encode())
        await out.write_eof()
        return out
