"""Fixtures the eval tests share: the TCM-SD sample in ``../shared/data``, or a skip (a failure under
``CI=true``), read by the decision-recognition tests at explicit bands and at the defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shared_data import SHARED_DATA, need_shared

TCM_SD_SAMPLE = SHARED_DATA / "tcm-sd" / "TCM-SD_data_sample.json"


@pytest.fixture(scope="module")
def tcm_sd_sample() -> Path:
    """The TCM-SD sample's path; skips where ``../shared/data`` is absent, fails there under ``CI=true``."""
    need_shared(TCM_SD_SAMPLE)
    return TCM_SD_SAMPLE
