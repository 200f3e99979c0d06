"""A report page in a real headless browser (Debian ``chromium``), for the tests that check what a
reader's browser makes of report.html. Without chromium such a test skips locally and fails when
CI=true. Install: ``apt-get update && apt-get install -y chromium`` (as root)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_or_skip() -> str:
    """The chromium executable; a skip where there is none (a failure under ``CI=true``)."""
    if CHROMIUM:
        return CHROMIUM
    if os.environ.get("CI") == "true":
        pytest.fail("chromium is required in CI: apt-get update && apt-get install -y chromium")
    pytest.skip("chromium not installed (apt-get install -y chromium); the test is required when CI=true")


def dump_dom(browser: str, page: Path, profile: Path) -> str:
    """The DOM of ``page`` after the browser loaded it (scripts, had any run, included)."""
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--dump-dom",
        page.resolve().as_uri(),
    ]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=90, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout
