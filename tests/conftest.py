"""Fixtures every test folder uses: fake servers that stop with the test, and pool files in its ``tmp_path``.

- ``fakes``: a :class:`tests.fakes.ThreadedFakes` whose fakes all stop when the test ends. A fake served
  from a background thread's loop is reachable from this process, from the event loop that ``run_pool``
  starts and from a subprocess (``python -m pool.run``); a test that stays inside one ``asyncio.run``
  can use ``async with FakeOpenAIServer() as fake`` instead. Start any fake on it —
  ``fakes.start(FakeEmbeddingsServer(...))`` — and keep the server when the test counts its requests.
- ``fake_openai``: ``fake_openai(behave, **fields)`` starts a :class:`tests.fakes.openai_fake.FakeOpenAIServer`
  on ``fakes`` and returns its base URL (``http://127.0.0.1:PORT/v1``), the one thing a pool file needs;
  ``fields`` are the fake's other settings (``script``, ``default``, ``latency_s``). Call it once per
  server. A file whose fake keeps state between nights (a judge that turns strict) resets that state in
  its own small fixture built on this one.
- ``write_pool``: ``write_pool(text, name="model_pool.yaml")`` writes the dedented YAML ``text`` as a
  UTF-8 file in the test's ``tmp_path`` and returns its path; the same name again replaces the file.
  Pools built from parameters (``tests.fake_pool.write_fake_pool``) keep their builders.

A test annotates the two functions as ``tests.fake_pool.FakeOpenAIStarter`` and ``tests.fake_pool.PoolWriter``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_pool import FakeOpenAIStarter, PoolWriter
from tests.fakes import Behavior, ThreadedFakes
from tests.fakes.openai_fake import FakeOpenAIServer


@pytest.fixture
def fakes() -> Iterator[ThreadedFakes]:
    """Fakes in background threads' loops, all stopped after the test."""
    threaded = ThreadedFakes()
    yield threaded
    threaded.stop_all()


@pytest.fixture
def fake_openai(fakes: ThreadedFakes) -> FakeOpenAIStarter:
    """``(behave, **fields) -> base URL`` of a started FAKE OpenAI-compatible server."""

    def start(behave: Callable[[int, dict[str, Any]], Behavior | None] | None = None, **fields: Any) -> str:
        return fakes.start(FakeOpenAIServer(behave=behave, **fields)).base_url

    return start


@pytest.fixture
def write_pool(tmp_path: Path) -> PoolWriter:
    """``(text, name="model_pool.yaml") -> path`` of the dedented pool file written in ``tmp_path``."""

    def write(text: str, name: str = "model_pool.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write
