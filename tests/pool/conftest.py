"""Fixtures the pool tests share: a FAKE server whose judge passes every answer until a test turns it
strict (tests/pool/anchor_fixtures.py)."""

from __future__ import annotations

import pytest

from tests.fake_pool import FakeOpenAIStarter
from tests.pool.anchor_fixtures import Judge, behave


@pytest.fixture
def drift_judge_url(fake_openai: FakeOpenAIStarter) -> str:
    """The base URL of a FAKE pool server whose judge is lenient (``Judge.strict`` reset)."""
    Judge.strict = False
    return fake_openai(behave)
