"""The capability leaderboard's gap to the reference answers (the med-agent-verifier README's gap-to-95)."""

from routing.report.markdown import reference_gap_section


def _cell(model: str, value: float, lo: float, hi: float, check: bool = False) -> dict:
    stat = {"value": value, "ci": [lo, hi]}
    return {
        "model": model,
        "n": 30,
        "primary": {"value": 1.0, "ci": [0.9, 1.0]} if check else stat,
        "metrics": {"judge_score": stat} if check else {},
    }


def test_the_gap_is_one_minus_the_judged_score_with_its_interval_flipped() -> None:
    bucket = {"name": "MedShield", "kind": "task", "cells": [_cell("m1", 0.8, 0.7, 0.9)]}
    lines = reference_gap_section([bucket])
    row = next(line for line in lines if line.startswith("| MedShield"))
    assert "| 0.200 [0.100, 0.300] |" in row
    assert row.endswith("| 76.0 |")  # 95 × 0.8


def test_a_checked_task_reads_the_judges_view_and_nothing_is_shown_without_scores() -> None:
    checked = {
        "name": "MedDBOps",
        "kind": "task",
        "check": {"kind": "sql"},
        "cells": [_cell("m1", 0.5, 0.4, 0.6, check=True)],
    }
    row = next(line for line in reference_gap_section([checked]) if line.startswith("| MedDBOps"))
    assert "| 0.500 [0.400, 0.600] |" in row
    empty = {"name": "MedCOT", "kind": "task", "cells": [{"model": "m", "n": 0, "primary": None, "metrics": {}}]}
    assert reference_gap_section([empty]) == []
