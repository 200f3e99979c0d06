"""Judge reliability diagnostics (routing.judges.reliability) on synthetic runs with known properties: a
judge biased to length gives |ρ| ≥ 0.5 and a warning, family conflicts are flagged, the parse
ladder is counted, re-judging gives Cohen's κ, and a calibration of the same judge is shown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judge.calibration.claim_set import calibration_metrics
from judge.calibration.store import record_calibration
from routing.build import build
from routing.judges.reliability import cohen_kappa, length_controlled, model_families, parse_stage_of, spearman
from tests.routing.run_fixtures import JUDGE, identity, row, write_run

STAGE = "judge:0123456789"


def test_cohen_kappa_and_spearman_by_hand() -> None:
    # p_o = 3/4; p_e = 0.5·0.25 + 0.5·0.75 = 0.5 → κ = 0.5
    assert cohen_kappa([True, True, False, False], [True, False, False, False]) == pytest.approx(0.5)
    assert cohen_kappa([True, False], [True, False]) == pytest.approx(1.0)
    assert cohen_kappa([True, True], [True, True]) is None  # both constant alike: κ undefined
    assert spearman([1, 2, 3, 4], [1, 2, 3, 4])["rho"] is None  # fewer than 5 pairs
    assert spearman([1, 2, 3, 4, 5], [2, 4, 6, 8, 10])["rho"] == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4, 5], [1, 1, 1, 1, 1])["rho"] is None


def test_length_controlled_removes_a_pure_length_preference() -> None:
    chars = [100, 200, 400, 800, 1600, 100, 200, 400, 800, 1600]
    values = [0.1 * np.log1p(c) for c in chars]  # the judge scores length, nothing else
    long_model = length_controlled(values + [0.1 * np.log1p(5000)] * 3, chars + [5000] * 3, ["a"] * 10 + ["long"] * 3)
    groups = long_model["groups"]
    assert long_model["slope"] == pytest.approx(0.1)
    assert groups["long"]["raw_mean"] > groups["a"]["raw_mean"]
    assert groups["long"]["controlled_mean"] == pytest.approx(groups["a"]["controlled_mean"])


def test_model_families_from_names() -> None:
    assert model_families(["Qwen/Qwen2.5-7B-Instruct"]) == {"qwen"}
    assert model_families(["qwen2.5-coder-0.5b", "deepseek-chat"]) == {"qwen", "deepseek"}
    assert model_families(["chatglm3-6b"]) == {"glm"} and model_families(["smollm2-135m"]) == {"smollm"}
    assert model_families(["gemma3-270m", None]) == {"gemma"} and model_families(["mystery-7b"]) == set()


def test_parse_stage_of_each_ladder_outcome() -> None:
    judged = {"judge": JUDGE, "status": "scored"}
    assert parse_stage_of({**judged, "details": {"parse_stage": "strict", "reasked": False}}) == "strict"
    assert parse_stage_of({**judged, "details": {"parse_stage": "patterns", "reasked": False}}) == "patterns"
    assert parse_stage_of({**judged, "details": {"parse_stage": "strict", "reasked": True}}) == "reasked"
    failed = {"judge": JUDGE, "status": "infra_error"}
    assert (
        parse_stage_of(
            {**failed, "details": {"error": "judge_no_verdict", "reason": "unparseable judge reply after one re-ask"}}
        )
        == "failed"
    )
    assert (
        parse_stage_of({**failed, "details": {"error": "judge_no_verdict", "reason": "judge call failed: timeout"}})
        == "call_failed"
    )
    assert parse_stage_of({"judge": None, "status": "scored", "details": {}}) is None


def biased_run(tmp_path: Path, *, rejudge_flips: int = 0) -> Path:
    """Two models, 20 criteria answers each; the judge's score rises with answer length."""
    rng = np.random.default_rng(7)
    rows, results = [], []
    for name, base in (("qwen-7b", 600), ("smol-1b", 150)):
        for i in range(20):
            chars = int(base * rng.uniform(0.3, 3.0))
            total = int(np.clip(round(8 + 7 * np.log(chars / 40)), 0, 40))
            stage = "strict" if i % 10 else "repaired"
            details: dict[str, Any] = {"parse_stage": stage, "reasked": i == 5}
            if i < 12:  # sampled for re-judging: same verdict, except the first ``rejudge_flips``
                flip = i < rejudge_flips
                details["rejudge"] = {
                    "perturbation": "dimensions_reversed",
                    "total": 40 - total if flip else total,
                    "passed": (total < 34) if flip else (total >= 34),
                    "value": total / 40,
                }
            rows.append(
                row(
                    name,
                    f"q{i}",
                    "internists",
                    "criteria",
                    total / 40,
                    passed=total >= 34,
                    judge=JUDGE,
                    domain="cardiology:cad",
                    metrics={"total": total},
                    details=details,
                )
            )
            results.append(
                {"model": name, "item_id": rows[-1]["item_id"], "stage": "answer", "status": "ok", "text": "字" * chars}
            )
            results.append(
                {
                    "model": name,
                    "item_id": rows[-1]["item_id"],
                    "stage": STAGE,
                    "status": "ok",
                    "text": "{}",
                    "answered_by": JUDGE["model"],
                }
            )
        rows.append(
            row(
                name,
                "bad",
                "internists",
                "criteria",
                None,
                status="infra_error",
                judge=JUDGE,
                domain="cardiology:cad",
                details={"error": "judge_no_verdict", "reason": "unparseable judge reply after one re-ask"},
            )
        )
        rows.append(
            row(name, "p1", "nonexistent", "probe", 1.0, passed=True, judge=JUDGE, details={"parse_stage": "strict"})
        )
    run = write_run(tmp_path / "run", rows)
    (run / "results.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in results), encoding="utf-8"
    )
    return run


def test_a_length_biased_judge_is_warned_and_controlled(tmp_path: Path) -> None:
    run = biased_run(tmp_path)
    build([run], tmp_path / "out", calibration_dir=tmp_path / "no-store")
    block = json.loads((tmp_path / "out" / "leaderboard.json").read_text())["judge_reliability"]
    judge = block["judges"]["judge-qwen@llamacpp"]
    assert judge["length"]["rho"] >= 0.5 and judge["length"]["n"] == 40
    qwen = block["models"]["qwen-7b"]["length"]["judge-qwen@llamacpp"]
    assert qwen["rho"] >= 0.5 and qwen["n"] == 20
    # the long-answering model's lead shrinks once length is controlled
    smol = block["models"]["smol-1b"]["length"]["judge-qwen@llamacpp"]
    assert qwen["raw_mean"] - smol["raw_mean"] > qwen["controlled_mean"] - smol["controlled_mean"]
    kinds = {(w["kind"], w["subject"]) for w in block["warnings"]}
    assert ("length_bias", "judge-qwen@llamacpp") in kinds and ("length_bias", "qwen-7b") in kinds
    assert ("family_conflict", "qwen-7b") in kinds and ("family_conflict", "smol-1b") not in kinds
    ladder = judge["parse_ladder"]["counts"]
    # per model: 20 rubric verdicts (2 repaired, 1 re-asked, 17 strict), 1 probe (strict), 1 without a verdict
    assert ladder == {"strict": 36, "repaired": 4, "patterns": 0, "reasked": 2, "failed": 2, "call_failed": 0}
    res = block["models"]["qwen-7b"]["contamination_resistant"]
    assert res == {"has": True, "n": 1, "scored": 21, "share": pytest.approx(1 / 21)}
    assert block["models"]["qwen-7b"]["ctx_appropriate"]["available"] is False
    assert judge["agreement"]["kappa_pass"] == pytest.approx(1.0) and judge["agreement"]["n"] == 24
    manifest_text = (tmp_path / "out" / "routing_manifest.yaml").read_text()
    assert "judge_reliability:" in manifest_text
    html = (tmp_path / "out" / "report.html").read_text()
    assert (
        'id="judge-reliability"' in html and "Judge reliability" in html and "its scores follow answer length" in html
    )
    assert "no calibration of this exact judge" in html


def test_disagreeing_rejudge_gives_low_kappa_and_a_warning(tmp_path: Path) -> None:
    build([biased_run(tmp_path, rejudge_flips=6)], tmp_path / "out", calibration_dir=tmp_path / "no-store")
    block = json.loads((tmp_path / "out" / "leaderboard.json").read_text())["judge_reliability"]
    agreement = block["judges"]["judge-qwen@llamacpp"]["agreement"]
    assert agreement["kappa_pass"] < 0.6 and agreement["spearman_total"]["rho"] < 1.0
    assert any(w["kind"] == "agreement" for w in block["warnings"])


def test_the_calibration_of_the_same_judge_is_shown_with_its_drift(tmp_path: Path) -> None:
    store = tmp_path / "store"
    identity_ = {"name": "judge-qwen", "backend": "llamacpp", "run_stages": {"criteria": STAGE}}
    gold = ["unsupported", "unsupported", "supported", "supported"]

    def entry(pred: list[str], when: str) -> dict[str, Any]:
        return {
            "calibrated_at": when,
            "set": {"path": "g.yaml", "sha256": "ab" * 32, "claims": 4},
            "metrics": {
                "overall": calibration_metrics(gold, pred),
                "tiers": {"hard": calibration_metrics(gold[:2], pred[:2])},
            },
            "claims": [{"id": str(i), "predicted": p} for i, p in enumerate(pred)],
        }

    record_calibration(
        store, identity_, entry(["unsupported", "unsupported", "supported", "supported"], "2026-01-01T00:00:00Z")
    )
    record_calibration(
        store, identity_, entry(["supported", "unsupported", "supported", "supported"], "2026-02-01T00:00:00Z")
    )
    record_calibration(
        store, {**identity_, "run_stages": {"criteria": "judge:another"}}, entry(gold, "2026-03-01T00:00:00Z")
    )
    build([biased_run(tmp_path)], tmp_path / "out", calibration_dir=store)
    block = json.loads((tmp_path / "out" / "leaderboard.json").read_text())["judge_reliability"]
    [shown] = block["judges"]["judge-qwen@llamacpp"]["calibration"]  # the other identity is not this run's judge
    assert shown["calibrations"] == 2 and shown["overall"]["f1"] == pytest.approx(2 / 3)
    assert shown["drift"]["flagged"] is True
    assert any(w["kind"] == "calibration_drift" for w in block["warnings"])
    html = (tmp_path / "out" / "report.html").read_text()
    assert "Calibration on labelled claims" in html and "DRIFT" in html


def test_runs_without_results_say_length_is_not_available(tmp_path: Path) -> None:
    run = biased_run(tmp_path)
    (run / "results.jsonl").unlink()
    build([run], tmp_path / "out", calibration_dir=tmp_path / "no-store")
    block = json.loads((tmp_path / "out" / "leaderboard.json").read_text())["judge_reliability"]
    assert block["judges"]["judge-qwen@llamacpp"]["length"]["rho"] is None
    assert any("answer lengths not available" in note for note in block["notes"])
    assert identity("x")["name"] == "x"
