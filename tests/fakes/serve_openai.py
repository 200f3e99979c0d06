"""Run the FAKE OpenAI-compatible server as its own process (for CLI tests that kill the client).

Usage: python -m tests.fakes.serve_openai PORT_FILE [--latency S]
Writes the bound port to PORT_FILE once listening; runs until terminated.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from pathlib import Path

from tests.fakes.openai_fake import FakeOpenAIServer


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


async def serve(port_file: Path, latency_s: float) -> None:
    await serve_until_stopped(FakeOpenAIServer(latency_s=latency_s), port_file)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("port_file", type=Path)
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()
    asyncio.run(serve(args.port_file, args.latency))


if __name__ == "__main__":
    main()
