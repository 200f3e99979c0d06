"""FAKE backends for tests: scriptable HTTP servers on 127.0.0.1 that inject faults on demand.

These are not models. Each fake answers deterministically (an echo of the input) unless its script
says to misbehave: a status with an optional ``Retry-After``, a stall past the client's timeout,
a dropped connection, a body cut short, truncated JSON, a garbage body, any raw JSON, a gzip
bomb (a small compressed body that inflates past any sane cap), or a giant answer text. The fake
counts requests and tracks how many are in flight at once (and the maximum), so a scheduler test
can check that a backend limit was respected.

Which behaviour a request gets: ``behave(index, payload)`` if given and it returns one, else the
next entry of ``script`` (consumed in order), else ``default``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import socket
import zlib
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from aiohttp import web

Kind = Literal["ok", "status", "stall", "drop", "cut_body", "truncated_json", "garbage", "json", "gzip"]


@dataclass(frozen=True)
class Behavior:
    """What the fake does with one request."""

    kind: Kind = "ok"
    status: int = 200
    retry_after: str | None = None  # sent verbatim as the Retry-After header
    text: str | None = None  # "ok": the answer (None = echo of the input)
    thinking: str | None = None  # "ok" (Ollama fake): the trace to return when think is on
    message: str = "fake error"  # "status": the error message in the body
    body: Any = None  # "json": sent as-is with status 200; "gzip": the compressed bytes
    seconds: float = 0.0  # "stall": how long before answering normally


def ok(text: str | None = None, thinking: str | None = None) -> Behavior:
    return Behavior("ok", text=text, thinking=thinking)


def status(code: int, retry_after: str | float | None = None, message: str = "fake error") -> Behavior:
    ra = None if retry_after is None else str(retry_after)
    return Behavior("status", status=code, retry_after=ra, message=message)


def rate_limited(retry_after: str | float | None = "1") -> Behavior:
    return status(429, retry_after, "rate limit exceeded (fake)")


def server_error(code: int = 500, retry_after: str | float | None = None) -> Behavior:
    return status(code, retry_after, "internal error (fake)")


def bad_request(code: int = 400, message: str = "invalid request (fake)") -> Behavior:
    return status(code, None, message)


def stall(seconds: float = 30.0) -> Behavior:
    return Behavior("stall", seconds=seconds)


def drop() -> Behavior:
    """Close the connection without sending any response."""
    return Behavior("drop")


def cut_body() -> Behavior:
    """Promise a full body (Content-Length) with status 200, send half, then close."""
    return Behavior("cut_body")


def truncated_json() -> Behavior:
    """A complete HTTP 200 whose JSON body stops halfway."""
    return Behavior("truncated_json")


def garbage() -> Behavior:
    """A complete HTTP 200 whose body is not JSON (a proxy's HTML page)."""
    return Behavior("garbage")


def raw_json(body: Any) -> Behavior:
    return Behavior("json", body=body)


# A chat answer in each protocol's shape, split where the answer text goes.
OPENAI_ANSWER_SHELL = (
    b'{"choices":[{"index":0,"message":{"role":"assistant","content":"',
    b'"},"finish_reason":"stop"}]}',
)
OLLAMA_ANSWER_SHELL = (b'{"message":{"role":"assistant","content":"', b'"},"done":true}')


@functools.lru_cache(maxsize=4)
def _gzip_filled(prefix: bytes, suffix: bytes, inflated_bytes: int) -> bytes:
    """gzip of prefix + "a" * n + suffix, compressed block by block (about 1 s per 300 MiB)."""
    block = b"a" * (1 << 20)
    gz = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [gz.compress(prefix)]
    left = inflated_bytes
    while left > 0:
        parts.append(gz.compress(block if left >= len(block) else block[:left]))
        left -= len(block)
    parts += [gz.compress(suffix), gz.flush()]
    return b"".join(parts)


def gzip_bomb(inflated_bytes: int = 300 * 1024 * 1024, shell: tuple[bytes, bytes] = OPENAI_ANSWER_SHELL) -> Behavior:
    """HTTP 200, ``Content-Encoding: gzip``: about 300 KB on the wire that inflates to a
    well-formed answer of ``inflated_bytes`` letters (the default, 300 MiB, is the incident's
    306 KB -> 314 MB). Only a cap on the decompressed size refuses it cheaply."""
    return Behavior("gzip", body=_gzip_filled(*shell, inflated_bytes))


def giant_answer(chars: int = 250_000) -> Behavior:
    """A well-formed answer whose text is ``chars`` letters long (one "word": max_tokens keeps it)."""
    return ok("A" * chars)


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    payload: dict[str, Any]
    authorization: str | None


def echo_text(payload: dict[str, Any]) -> str:
    """The fake's deterministic answer: the last message (or the prompt), echoed."""
    messages = payload.get("messages") or []
    last = messages[-1].get("content", "") if messages else payload.get("prompt", "")
    return f"echo: {last}"


def clip_words(text: str, limit: int | None) -> tuple[str, str]:
    """(text, finish reason): a fake 'token' is a whitespace-separated word."""
    words = text.split(" ")
    if limit is not None and len(words) > limit:
        return " ".join(words[:limit]), "length"
    return text, "stop"


@dataclass
class FakeServer:
    """Shared scaffolding; subclasses add routes and the protocol's answer and error shapes."""

    script: Iterable[Behavior] = ()
    default: Behavior = field(default_factory=ok)
    behave: Callable[[int, dict[str, Any]], Behavior | None] | None = None
    latency_s: float = 0.0

    def __post_init__(self) -> None:
        self.script = deque(self.script)
        self.requests: list[RecordedRequest] = []
        self.request_count = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.port: int | None = None
        self._runner: web.AppRunner | None = None
        self._stopping = asyncio.Event()

    # --- protocol hooks -------------------------------------------------------------------
    def routes(self) -> list[web.RouteDef]:
        raise NotImplementedError

    def answer(self, path: str, payload: dict[str, Any], behavior: Behavior) -> dict[str, Any]:
        raise NotImplementedError

    def error_body(self, code: int, message: str) -> dict[str, Any]:
        return {"error": {"message": message, "code": code}}

    # --- lifecycle ------------------------------------------------------------------------
    @property
    def root_url(self) -> str:
        assert self.port is not None, "fake server not started"
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        app = web.Application()
        app.add_routes(self.routes())
        # handler_cancellation: a request the client gave up on stops counting as in flight.
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # --- request handling -----------------------------------------------------------------
    def _choose(self, index: int, payload: dict[str, Any]) -> Behavior:
        if self.behave is not None:
            chosen = self.behave(index, payload)
            if chosen is not None:
                return chosen
        assert isinstance(self.script, deque)
        return self.script.popleft() if self.script else self.default

    async def _pause(self, seconds: float) -> None:
        """Sleep, but wake at once when the server stops, so teardown never waits on a stall."""
        try:
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
        except TimeoutError:
            pass

    async def handle(self, request: web.Request) -> web.StreamResponse:
        index = self.request_count
        self.request_count += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            try:
                payload = await request.json()
            except ValueError:
                payload = {}
            self.requests.append(RecordedRequest(request.path, payload, request.headers.get("Authorization")))
            behavior = self._choose(index, payload)
            if self.latency_s:
                await self._pause(self.latency_s)
            return await self._act(request, payload, behavior)
        finally:
            self.in_flight -= 1

    async def _act(self, request: web.Request, payload: dict[str, Any], behavior: Behavior) -> web.StreamResponse:
        kind = behavior.kind
        if kind == "stall":
            await self._pause(behavior.seconds)
            kind = "ok"
        if kind == "ok":
            return web.json_response(self.answer(request.path, payload, behavior))
        if kind == "status":
            headers = {"Retry-After": behavior.retry_after} if behavior.retry_after else None
            return web.json_response(
                self.error_body(behavior.status, behavior.message), status=behavior.status, headers=headers
            )
        if kind == "json":
            return web.json_response(behavior.body)
        if kind == "gzip":
            return web.Response(
                body=behavior.body, content_type="application/json", headers={"Content-Encoding": "gzip"}
            )
        full = json.dumps(self.answer(request.path, payload, behavior)).encode()
        if kind == "truncated_json":
            return web.Response(body=full[: len(full) // 2], content_type="application/json")
        if kind == "garbage":
            return web.Response(text="<html><body>502 Bad Gateway</body></html>", content_type="text/html")
        assert request.transport is not None
        if kind == "cut_body":
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            resp.content_length = len(full)
            await resp.prepare(request)
            await resp.write(full[: len(full) // 2])
        request.transport.close()  # "drop" (and the end of "cut_body"): no more bytes
        raise asyncio.CancelledError  # nothing more can be sent on a closed connection


AnyFake = TypeVar("AnyFake", bound=FakeServer)


class ThreadedFakes:
    """Fakes served from background threads' event loops, so a subprocess (``python -m pool.run``)
    can reach them while the test goes on; :meth:`stop_all` ends every loop started."""

    def __init__(self) -> None:
        self._loops: list[Any] = []

    def start(self, fake: AnyFake) -> AnyFake:
        import threading

        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            loop.run_until_complete(fake.start())
            self._loops.append(loop)
            ready.set()
            loop.run_forever()

        threading.Thread(target=serve, daemon=True).start()
        if not ready.wait(10):
            raise RuntimeError("fake server did not start")
        return fake

    def stop_all(self) -> None:
        for loop in self._loops:
            loop.call_soon_threadsafe(loop.stop)
