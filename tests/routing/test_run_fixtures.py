"""The synthetic run directories of ``tests.routing.run_fixtures`` keep the shape pool.run writes."""

from __future__ import annotations

import json
from pathlib import Path

from eval.items.scores import FAMILY_OF_GOLD_TYPE, Score
from tests.routing.run_fixtures import make_run, synthetic_rows


def test_rows_follow_the_score_contract() -> None:
    for r in synthetic_rows({"a": 0.5, "b": 0.9}, n_items=4):
        score = Score(
            status=r["status"], value=r["value"], passed=r["passed"], metrics=r["metrics"], details=r["details"]
        )
        assert {k: v for k, v in score.to_record().items() if k != "judge"} == {
            k: r[k] for k in ("status", "value", "passed", "metrics", "details")
        }
        assert r["family"] == FAMILY_OF_GOLD_TYPE[r["gold_type"]]
        assert r["model_identity"]["name"] == r["model"]


def test_write_run_writes_both_files(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", n_items=3)
    lines = (run / "scores.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3 * 3 * 9 and all(json.loads(line)["model"] for line in lines)
    assert json.loads((run / "summary.json").read_text())["run_id"] == "run-1"
