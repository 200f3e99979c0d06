"""The one marker for tests that need the real llama.cpp engine (the ``[local]`` extra).

Skipped where llama-cpp-python is not installed, so a quick checkout can run the rest; under
``CI=true`` the skip is off, so CI fails rather than passing with the real-model tests unrun.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None

requires_llama = pytest.mark.skipif(
    not HAVE_LLAMA and os.environ.get("CI") != "true",
    reason="llama_cpp not importable: scripts/install.sh local (these tests are required when CI=true)",
)
