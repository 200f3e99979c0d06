"""Agreement read a slice of units at a time gives the numbers of reading the whole matrix at once, bit for
bit: α (interval, nominal) and κ on random matrices with missing ratings, several rater counts, many
distinct values, lone ratings and the degenerate cases; a ``units`` mask equals the sub-matrix; and
the judge panel block of a varied judged night is the same dict whatever the slice sizes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from routing.judges import agreement, panel_agreement
from routing.judges.agreement import fleiss_kappa, krippendorff_alpha_interval, krippendorff_alpha_nominal
from routing.judges.panel_agreement import build_panel_agreement
from routing.load.runs import load_runs
from tests.routing.judged_night_fixtures import MODELS, fixture_runs

HUGE = 1 << 40
STATS = (krippendorff_alpha_interval, krippendorff_alpha_nominal, fleiss_kappa)


def _matrices() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    out = [np.empty((0, 3)), np.array([[1.0, 2.0, 2.0]]), np.full((9, 3), 2.0), np.full((5, 4), np.nan)]
    out.append(np.array([[1.0, np.nan], [np.nan, 2.0], [3.0, np.nan]]))  # no unit with 2 ratings
    for raters in (1, 2, 3, 5, 9):
        for units in (2, 7, 8, 50, 301):
            continuous = rng.normal(20.0, 6.0, (units, raters))  # every value distinct
            categories = rng.integers(0, 4, (units, raters)).astype(float)
            binary = (rng.random((units, raters)) < 0.7).astype(float)
            for r in (continuous, categories, binary, np.round(continuous)):
                holes = r.copy()
                holes[rng.random(r.shape) < 0.25] = np.nan
                out += [r, holes]
    return out


def _all(r: np.ndarray, units: np.ndarray | None = None) -> list[float | None]:
    return [stat(r, units) for stat in STATS]


def test_every_slice_size_gives_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    matrices = _matrices()
    monkeypatch.setattr(agreement, "SLICE_UNITS", HUGE)
    whole = [_all(r) for r in matrices]
    assert any(v is None for w in whole for v in w) and sum(v is not None for w in whole for v in w) > 300
    for size in (1, 2, 7, 64):
        monkeypatch.setattr(agreement, "SLICE_UNITS", size)
        for r, expected in zip(matrices, whole, strict=True):
            assert _all(r) == expected, (size, r.shape)


def test_a_units_mask_equals_the_sub_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    monkeypatch.setattr(agreement, "SLICE_UNITS", 7)
    for r in _matrices():
        mask = rng.random(len(r)) < 0.6
        assert _all(r, mask) == _all(r[mask])
        assert _all(r, np.ones(len(r), dtype=bool)) == _all(r)


def test_the_panel_block_is_the_same_whatever_the_slice_sizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = fixture_runs(tmp_path)
    loaded = load_runs(runs)

    def block(units: int, rows: int) -> dict[str, Any]:
        monkeypatch.setattr(agreement, "SLICE_UNITS", units)
        monkeypatch.setattr(panel_agreement, "SLICE_ROWS", rows)
        return build_panel_agreement(loaded.table, loaded.judged, [str(r) for r in runs], set(MODELS))

    whole = block(HUGE, HUGE)
    (panel,) = whole["panels"].values()
    assert panel["overall"]["n"] > 30 and panel["overall"]["krippendorff_alpha_total"] is not None
    assert panel["overall"]["fleiss_kappa_pass"] is not None and panel["buckets"]
    for units, rows in ((7, 7), (1, 3), (5, 1), (HUGE, 2)):
        assert block(units, rows) == whole, (units, rows)
