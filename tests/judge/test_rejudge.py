"""``pool.run --rejudge-sample N`` end to end with a FAKE OpenAI server as candidate and judge: N
rubric verdicts are judged again on the prompt with its dimensions reversed, under ``judge:`` stages,
and the report's judge reliability turns the pairs into Cohen's κ and Spearman's ρ."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge.contracts.reference import reference_judge_prompt
from judge.perturb import reversed_dimensions
from tests.fake_pool import (
    PADDING,
    FakeOpenAIStarter,
    pool_run_cli,
    reference_items,
    score_rows,
    write_fake_pool,
    write_jsonl,
)
from tests.fakes import ok

REPO = Path(__file__).resolve().parents[2]
ITEMS = reference_items(6)


def verdict(total_high: bool) -> str:
    scores = (9, 9, 9, 8) if total_high else (5, 5, 5, 5)
    return json.dumps(
        dict(zip(("coverage", "accuracy", "safety", "grounding"), scores, strict=True))
        | {"rationale": "r", "grounding_source": "book"}
    )


def behave(index: int, payload: dict[str, Any]) -> Any:
    """Candidates echo; the judge passes q1–q3 and fails q4–q6, whatever the order of the rubric."""
    messages = payload.get("messages") or []
    if payload.get("model") != "judgey":
        return ok("回答。" + PADDING)
    user = messages[1]["content"]
    return ok(verdict(any(f"问题{i}" in user for i in (1, 2, 3))))


def test_perturbation_only_reorders_the_rubric() -> None:
    original = reference_judge_prompt("问？", "参考。", "答。")
    perturbed = reversed_dimensions(original)
    assert perturbed[1] == original[1] and perturbed[0]["content"] != original[0]["content"]
    system = perturbed[0]["content"]
    assert system.index("1. grounding") < system.index("4. coverage")
    assert system.index('"grounding": <') < system.index('"coverage": <')
    assert len(system) == len(original[0]["content"])  # nothing added or lost, only moved and renumbered


def test_rejudge_sample_records_second_verdicts_and_agreement(tmp_path: Path, fake_openai: FakeOpenAIStarter) -> None:
    data = write_jsonl(tmp_path / "items.jsonl", ITEMS)
    pool = write_fake_pool(tmp_path / "pool.yaml", fake_openai(behave), (("alpha", None),), max_retries=0)
    out = pool_run_cli(
        "--pool",
        str(pool),
        "--data",
        str(data),
        "--out",
        str(tmp_path / "run"),
        "--rejudge-sample",
        "6",
        cache=tmp_path / "cache",
        env={"MEDPOOL_CALIBRATION_DIR": str(tmp_path / "calibrations")},
    )
    assert out.returncode == 0, out.stderr
    rows = score_rows(tmp_path / "run")
    assert all(r["details"]["rejudge"]["perturbation"] == "dimensions_reversed" for r in rows) and len(rows) == 6
    assert all(r["details"]["rejudge"]["total"] == r["metrics"]["total"] for r in rows)
    stages = [json.loads(line)["stage"] for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sum(s.startswith("judge:") and s.endswith(":rejudge") for s in stages) == 6
    block = json.loads((tmp_path / "run" / "leaderboard.json").read_text())["judge_reliability"]
    [judge] = block["judges"].values()
    assert judge["agreement"]["n"] == 6 and judge["agreement"]["kappa_pass"] == pytest.approx(1.0)
    assert judge["agreement"]["spearman_total"]["rho"] == pytest.approx(1.0)
    assert judge["parse_ladder"]["counts"]["strict"] == 6
    assert "Agreement on re-judging" in (tmp_path / "run" / "report.html").read_text()
