"""Run the FAKE specialists (``tests.fakes.specialists``) as their own process, for a benchmark's first run.

Usage: python -m tests.fakes.serve_specialists PORT_FILE SUITE [--latency S]
SUITE is a suite ``bench.harness.specialists.write_suite`` wrote; each FAKE model plays its quality on
it. Writes the bound port to PORT_FILE once listening; runs until terminated.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from bench.harness.specialists import read_suite_key
from tests.fakes.openai_fake import FakeOpenAIServer
from tests.fakes.serve_openai import serve_until_stopped
from tests.fakes.specialists import specialist_behaviour


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("port_file", type=Path)
    parser.add_argument("suite", type=Path, help="the specialists' suite (JSONL) whose questions they answer")
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()
    fake = FakeOpenAIServer(behave=specialist_behaviour(read_suite_key(args.suite)), latency_s=args.latency)
    asyncio.run(serve_until_stopped(fake, args.port_file))


if __name__ == "__main__":
    main()
