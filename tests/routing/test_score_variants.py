"""Which variant a judged number is — probability-weighted or argmax (``details.score_variant``) — per
judge in ``judge_reliability``, the report and ``leaderboard.md``, with a warning for a judge whose
values stand on both footings; the same counts from ``scores.jsonl``, the columnar copy and two runs
merged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from routing.build import build
from routing.judges.reliability import build_reliability, mixes_variants
from routing.load.columns import write_columns
from routing.load.runs import load_runs
from routing.load.verdicts import SCORE_VARIANTS
from tests.routing.run_fixtures import JUDGE, OTHER_JUDGE, row, write_run

QWEN, DEEPSEEK = "judge-qwen@llamacpp", "judge-deepseek@openai"


def judged_run(folder: Path, variants: dict[str, list[str | None]], run_id: str = "run-1", when: str = "") -> Path:
    """Two models' criteria answers; the judges' rows carry the given ``score_variant`` per item (None: absent)."""
    rows: list[dict[str, Any]] = []
    for judge, key in ((JUDGE, "qwen"), (OTHER_JUDGE, "deepseek")):
        for model in ("qwen-7b", "smol-1b"):
            for i, variant in enumerate(variants[key]):
                details: dict[str, Any] = {"parse_stage": "strict"}
                if variant is not None:
                    details["score_variant"] = variant
                rows.append(
                    row(
                        model,
                        f"{key}-q{i}",
                        "internists",
                        "criteria",
                        0.5 + 0.01 * i,
                        passed=i % 2 == 0,
                        judge=judge,
                        domain="cardiology:cad",
                        metrics={"total": 20 + i},
                        details=details,
                    )
                )
    return write_run(folder, rows, run_id=run_id, created_at=when or "2026-11-29T10:00:00Z")


# qwen's backend stopped returning logprobs after 8 items; deepseek's never did; "ex" items say nothing
MIXED = {"qwen": ["weighted"] * 8 + ["argmax"] * 2 + [None], "deepseek": ["weighted"] * 6}


def test_counts_text_and_the_warning_in_every_output(tmp_path: Path) -> None:
    build([judged_run(tmp_path / "run", MIXED)], tmp_path / "out", calibration_dir=tmp_path / "no-store")
    block = json.loads((tmp_path / "out" / "leaderboard.json").read_text())["judge_reliability"]
    assert block["judges"][QWEN]["score_variants"] == {"weighted": 16, "argmax": 4, "mixed": 0}
    assert block["judges"][DEEPSEEK]["score_variants"] == {"weighted": 12, "argmax": 0, "mixed": 0}
    warned = [w for w in block["warnings"] if w["kind"] == "score_variant"]
    assert [w["subject"] for w in warned] == [QWEN]
    assert "16 weighted, 4 argmax" in warned[0]["message"] and "not all on one footing" in warned[0]["message"]
    html = (tmp_path / "out" / "report.html").read_text()
    assert "scores (weighted / argmax)" in html and "weighted 16 · argmax 4" in html and "weighted 12<" in html
    assert "not all on one footing" in html
    md = (tmp_path / "out" / "leaderboard.md").read_text()
    assert f"- {QWEN}: scores: weighted 16 · argmax 4" in md and f"- {DEEPSEEK}: scores: weighted 12" in md
    assert "- warning: " + warned[0]["message"] in md


def test_no_variant_no_field_no_column(tmp_path: Path) -> None:
    """Rows that do not say (a judge that did not ask for logprobs, older runs) change nothing."""
    build([judged_run(tmp_path / "run", {"qwen": [None] * 4, "deepseek": [None] * 3})], tmp_path / "out")
    block = json.loads((tmp_path / "out" / "leaderboard.json").read_text())["judge_reliability"]
    assert all("score_variants" not in j for j in block["judges"].values())
    assert not any(w["kind"] == "score_variant" for w in block["warnings"])
    assert "scores (weighted / argmax)" not in (tmp_path / "out" / "report.html").read_text()
    assert "weighted or argmax" not in (tmp_path / "out" / "leaderboard.md").read_text()


def test_a_panel_mixing_its_members_is_warned() -> None:
    assert mixes_variants({"weighted": 0, "argmax": 0, "mixed": 1})
    assert mixes_variants({"weighted": 3, "argmax": 1, "mixed": 0})
    assert not mixes_variants({"weighted": 3, "argmax": 0, "mixed": 0})
    assert not mixes_variants({"weighted": 0, "argmax": 5, "mixed": 0}) and not mixes_variants(None)


def test_columns_copy_and_merge_keep_the_variant(tmp_path: Path) -> None:
    first = judged_run(tmp_path / "n1", MIXED, "run-1", "2026-11-28T02:00:00Z")
    second = judged_run(
        tmp_path / "n2", {"qwen": ["argmax", "mixed"], "deepseek": [None, "weighted"]}, "run-2", "2026-11-29T02:00:00Z"
    )
    from_jsonl = load_runs([first, second])
    for run in (first, second):
        write_columns(run)
    from_copy = load_runs([first, second])
    assert from_copy.judged == from_jsonl.judged
    codes = set(from_copy.judged.variant.tolist())
    assert codes == {-1, *range(len(SCORE_VARIANTS))}
    block = build_reliability(from_copy, calibration_dir=None)
    # the newer night replaces q0 and q1 of both models: qwen 8 weighted → 6, +2 argmax, +2 mixed
    assert block["judges"][QWEN]["score_variants"] == {"weighted": 12, "argmax": 6, "mixed": 2}
    assert block["judges"][DEEPSEEK]["score_variants"] == {"weighted": 10, "argmax": 0, "mixed": 0}
    assert json.dumps(block, default=str) == json.dumps(
        build_reliability(from_jsonl, calibration_dir=None), default=str
    )
    assert np.array_equal(from_copy.judged.variant, from_jsonl.judged.variant)
