"""Words a reader understands: the run summary names truncated answers (not "error"), and the
report's header names the interval rules its cells really use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pool.api import RunResult
from pool.run import _print_summary
from routing.report.page import interval_methods_text


def test_the_run_summary_says_truncated_not_error(capsys) -> None:
    summary: dict[str, Any] = {
        "models": {
            "gemma3-270m": {
                "status": {"ok": 16, "error": 56, "infra_error": 0},
                "cache_hits": 0,
                "answer_flaws": {"truncated": 55, "empty": 1, "oversize": 0},
            }
        }
    }
    _print_summary(RunResult(Path("runs/x"), "x", 0, summary))
    line = next(line for line in capsys.readouterr().out.splitlines() if "gemma3-270m" in line)
    assert "ok 16, truncated 55 (cut at the token budget, max_tokens), empty 1, infra_error 0" in line
    assert "error 56" not in line


def test_the_report_header_names_the_interval_rules_in_use() -> None:
    leaderboard = {
        "families": {
            "exam": [{"cells": [{"ci_method": "wilson"}, {"ci_method": "wilson"}]}],
            "capability": [{"cells": [{"ci_method": "t"}]}],
        }
    }
    text = interval_methods_text(leaderboard)
    assert text == (
        "intervals by Wilson score with continuity correction (pass rates): 2 values; "
        "Student t (means of continuous scores): 1 value"
    )
    assert "bootstrap" not in text
    assert interval_methods_text({"families": {}}) == "no interval was computed"
