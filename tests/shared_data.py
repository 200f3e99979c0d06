"""The reference suites beside the clone (``../shared/data``): a test that reads them skips with a
reason where they are absent (a user's clone) and fails under ``CI=true``, where they are required."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def need_shared(path: Path) -> None:
    """Skip (or, in CI, fail) when ``path`` under ``../shared/data`` is absent."""
    if not path.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{path} is missing: ../shared/data is required in CI")
        pytest.skip(f"{path} absent (../shared/data is not beside this clone)")
