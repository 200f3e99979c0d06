"""Run the FAKE OpenAI-compatible server as its own process (for CLI tests that kill the client).

Usage: python -m tests.fakes.serve_openai PORT_FILE [--latency S] [--hold-after N]
Writes the bound port to PORT_FILE once listening; runs until terminated.

``--hold-after N`` holds a run in a known state: the first N requests are answered, every later
one waits until the fake gets SIGUSR1. A test that signals the run after N results therefore never
races the run to its end, however fast the machine is.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from pathlib import Path

from aiohttp import web

from tests.fakes.openai_fake import FakeOpenAIServer


class HeldFakeOpenAIServer(FakeOpenAIServer):
    """The fake, answering ``hold_after`` requests and holding the rest until :meth:`release`."""

    def __init__(self, hold_after: int, **fields: object) -> None:
        super().__init__(**fields)  # type: ignore[arg-type]
        self.hold_after = hold_after
        self.released = asyncio.Event()

    def release(self) -> None:
        self.released.set()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if self.request_count >= self.hold_after and not self.released.is_set():
            waiting, stopping = (
                asyncio.ensure_future(self.released.wait()),
                asyncio.ensure_future(self._stopping.wait()),
            )
            await asyncio.wait((waiting, stopping), return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            stopping.cancel()
        return await super().handle(request)


async def serve_until_stopped(fake: FakeOpenAIServer, port_file: Path) -> None:
    """Start ``fake``, publish its port atomically in ``port_file``, run until SIGTERM/SIGINT."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with fake:
        tmp = port_file.with_suffix(".tmp")
        tmp.write_text(str(fake.port))
        tmp.replace(port_file)
        await stop.wait()


async def serve(port_file: Path, latency_s: float, hold_after: int | None = None) -> None:
    if hold_after is None:
        await serve_until_stopped(FakeOpenAIServer(latency_s=latency_s), port_file)
        return
    fake = HeldFakeOpenAIServer(hold_after, latency_s=latency_s)
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, fake.release)
    await serve_until_stopped(fake, port_file)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("port_file", type=Path)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument(
        "--hold-after", type=int, default=None, help="answer this many requests, hold the rest until SIGUSR1"
    )
    args = parser.parse_args()
    asyncio.run(serve(args.port_file, args.latency, args.hold_after))


if __name__ == "__main__":
    main()
