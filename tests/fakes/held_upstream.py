"""A FAKE upstream that holds every chat request, as its own process: a hung server, or one to kill mid-request.

Usage: python -m tests.fakes.held_upstream PORT_FILE
Every ``POST /v1/chat/completions`` waits until the process gets SIGUSR1 (then it is answered with
the fake's echo); ``GET /held`` says how many requests are waiting, so a test knows its requests
have arrived before it kills or releases the fake — it never races them.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from pathlib import Path

from aiohttp import web

from tests.fakes.serve_openai import HeldFakeOpenAIServer, serve_until_stopped


class CountingHeldFake(HeldFakeOpenAIServer):
    waiting = 0

    def routes(self) -> list[web.RouteDef]:
        return [*super().routes(), web.get("/held", self.held)]

    async def held(self, request: web.Request) -> web.Response:
        return web.json_response({"held": self.waiting})

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.waiting += 1
        try:
            return await super().handle(request)
        finally:
            self.waiting -= 1


async def serve(port_file: Path) -> None:
    fake = CountingHeldFake(0)
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, fake.release)
    await serve_until_stopped(fake, port_file)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("port_file", type=Path)
    asyncio.run(serve(parser.parse_args().port_file))


if __name__ == "__main__":
    main()
