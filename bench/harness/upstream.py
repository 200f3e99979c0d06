"""The upstreams a benchmark sends requests to: a FAKE server of the tests as its own process, or a small
counting upstream in this process.

The FAKE servers live with the tests (``tests/fakes/``); a benchmark starts one by its command line
(``python -m tests.fakes.serve_openai PORT_FILE …``), never by importing it, so ``bench`` stands
alone and the fake gets a core of its own. Where a benchmark must read the server's side of a
limit (how many requests were really open at once), :class:`CountingUpstream` answers in-process.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aiohttp import web

REPO = Path(__file__).resolve().parents[2]


class FakeServerProcess:
    """``python -m MODULE PORT_FILE [ARGS…] --latency S``: a FAKE server on its own core, stopped by pid.

    ``module`` is one of the fakes' serving entry points: ``tests.fakes.serve_openai`` (an echo) or
    ``tests.fakes.serve_specialists`` (``args``: the suite the specialists answer)."""

    def __init__(
        self,
        workdir: Path,
        latency_s: float = 0.0,
        *,
        module: str = "tests.fakes.serve_openai",
        args: Sequence[str] = (),
    ) -> None:
        self.port_file = workdir / f"fake-{time.monotonic_ns()}.port"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, str(self.port_file), *args, "--latency", str(latency_s)],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while not self.port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{module} did not write its port file within 20 s")
            time.sleep(0.05)
        self.base_url = f"http://127.0.0.1:{self.port_file.read_text().strip()}/v1"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def echo_answer(path: str, payload: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI-style answer echoing the last message, cut to ``max_tokens`` words (a word stands for a token)."""
    messages = payload.get("messages") or []
    words = f"echo: {messages[-1].get('content', '') if messages else payload.get('prompt', '')}".split(" ")
    limit = payload.get("max_tokens")
    finish = "length" if limit is not None and len(words) > limit else "stop"
    text = " ".join(words[:limit] if finish == "length" else words)
    usage = {"prompt_tokens": 0, "completion_tokens": len(text.split()), "total_tokens": len(text.split())}
    common = {"id": "bench-1", "model": payload.get("model"), "usage": usage}
    if path.endswith("/chat/completions"):
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
        return {**common, "object": "chat.completion", "choices": [choice]}
    choice = {"index": 0, "text": text, "finish_reason": finish}
    return {**common, "object": "text_completion", "choices": [choice]}


class CountingUpstream:
    """An OpenAI-compatible upstream in this process: answers every request after ``latency_s`` with an echo and
    counts the requests open at once (``max_in_flight``), the server's side of a lane limit.

        async with CountingUpstream(latency_s=0.5) as upstream:
            ...  # send to upstream.base_url
            print(upstream.max_in_flight)
    """

    def __init__(self, latency_s: float = 0.0) -> None:
        self.latency_s = latency_s
        self.request_count = self.in_flight = self.max_in_flight = 0
        self.port: int | None = None
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        assert self.port is not None, "upstream not started"
        return f"http://127.0.0.1:{self.port}/v1"

    async def __aenter__(self) -> CountingUpstream:
        app = web.Application()
        app.add_routes([web.post("/v1/chat/completions", self._handle), web.post("/v1/completions", self._handle)])
        # handler_cancellation: a request the client gave up on stops counting as open.
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _handle(self, request: web.Request) -> web.Response:
        self.request_count += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            try:
                payload = await request.json()
            except ValueError:
                payload = {}
            if self.latency_s:
                await asyncio.sleep(self.latency_s)
            return web.json_response(echo_answer(request.path, payload))
        finally:
            self.in_flight -= 1
