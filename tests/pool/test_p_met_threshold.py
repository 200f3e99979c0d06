"""A weighing judge's P(met) threshold: chosen by the criteria calibration, stored under the judge's
identity, and used by a run of that judge. Against a FAKE "hedging" judge (an OpenAI-compatible fake
returning token logprobs) whose written verdicts say nothing — every criterion "not met", every
coverage 9 — while its probabilities know the truth: P(met) = 0.4 for a criterion whose words are in the
answer, 0.1 otherwise; its coverage distribution leans toward the true coverage. So the plain verdicts
have recall 0 and an undefined ρ, and the weighted ones are perfect once cut at the Youden threshold,
which lies halfway between 0.1 and 0.4: 0.25."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from judge.calibration.store import calibrations
from judge.contracts.criteria_items import CRITERIA_ITEMS_SYSTEM, KINDS
from pool.calibrate.cli import main
from tests.fake_pool import FakeOpenAIStarter, pool_run_cli, scores_by_item, write_jsonl
from tests.fakes import ok, raw_json
from tests.judge.calibration_fixtures import criteria_of, fenced_answer, rubric, topics_of, write_suite

P_SAID, P_UNSAID = 0.4, 0.1
CANDIDATE_ANSWER = "高血压饮食要限盐每日少于5克，并且不可自行停药。" + "其余按医嘱。" * 30
RUN_SUITE = [
    {
        "id": "k1",
        "task": "consult",
        "track": "specialty",
        "domain": "cardiology:htn",
        "gold_type": "criteria",
        "question": "高血压患者饮食要注意什么？",
        "gold": {
            "expected_topics": ["限盐每日少于5克", "增加膳食钾摄入"],
            "must_warn": ["不可自行停药"],
            "must_not": ["推荐具体降压药剂量"],
        },
    }
]


def _tokens(text: str, alternatives: dict[int, list[tuple[str, float]]]) -> list[dict[str, Any]]:
    """The reply as chat logprobs: numbers, true/false and claim labels as tokens of their own, the rest as text
    tokens; the token starting at character ``c`` gets ``alternatives[c]`` (its own text is certain otherwise)."""
    out, at = [], 0
    for piece in re.split(r"(true|false|unsupported|supported|\d+)", text):
        if piece:
            top = alternatives.get(at, [(piece, 0.0)])
            own = next((lp for t, lp in top if t == piece), 0.0)
            out.append({"token": piece, "logprob": own, "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top]})
            at += len(piece)
    return out


def _answer(text: str, alternatives: dict[int, list[tuple[str, float]]]) -> Any:
    message = {"role": "assistant", "content": text}
    choice = {
        "index": 0,
        "message": message,
        "finish_reason": "stop",
        "logprobs": {"content": _tokens(text, alternatives)},
    }
    return raw_json({"id": "f", "object": "chat.completion", "model": "hedger", "choices": [choice], "usage": {}})


def hedger(index: int, payload: dict[str, Any]) -> Any:
    """The candidate answers CANDIDATE_ANSWER; the judge hedges (module doc)."""
    if payload["model"] == "cand":
        return ok(CANDIDATE_ANSWER)
    assert payload.get("logprobs") is True and payload.get("top_logprobs"), "a weighing judge asks for logprobs"
    system, user = payload["messages"][0]["content"], payload["messages"][1]["content"]
    answer = fenced_answer(user)
    if system == CRITERIA_ITEMS_SYSTEM:
        criteria = criteria_of(user)
        text = json.dumps(
            {"items": [{"id": i, "met": False, "evidence": ""} for i in criteria], "flags": []}, ensure_ascii=False
        )
        alternatives, at = {}, 0
        for words in criteria.values():
            at = text.index("false", at)
            p = P_SAID if words in answer else P_UNSAID
            alternatives[at] = [("false", math.log(1 - p)), ("true", math.log(p))]
            at += 1
        return _answer(text, alternatives)
    topics = topics_of(user)
    lean = 2 + round(8 * sum(t in answer for t in topics) / len(topics))  # 2…10: never "1", which may be "10"
    text = rubric(9)
    at = text.index('"coverage": ') + len('"coverage": ')
    return _answer(text, {at: [("9", math.log(0.5)), (str(lean), math.log(0.5))] if lean != 9 else [("9", 0.0)]})


def write_pool(tmp_path: Path, url: str) -> Path:
    pool = tmp_path / "pool.yaml"
    pool.write_text(
        f"backends:\n  fake: {{type: openai, base_url: '{url}', max_retries: 0}}\n"
        "models:\n  - {name: cand, backend: fake}\n"
        "judge:\n  backend: fake\n  name: hedger\n  model: hedger\n"
        "criteria_grading: both\n",
        encoding="utf-8",
    )
    return pool


@pytest.fixture
def pool(tmp_path: Path, fake_openai: FakeOpenAIStarter) -> Path:
    return write_pool(tmp_path, fake_openai(hedger))


def calibrate(tmp_path: Path, pool: Path) -> dict[str, Any]:
    suite = str(write_suite(tmp_path))
    store, cache = str(tmp_path / "store"), str(tmp_path / "cache")
    assert (
        main(["--pool", str(pool), "--set", "criteria", "--suite", suite, "--store", store, "--cache-dir", cache]) == 0
    )
    [record] = calibrations(tmp_path / "store")
    return record


def test_the_calibration_recovers_the_threshold_and_reports_both_variants(
    tmp_path: Path, pool: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = calibrate(tmp_path, pool)
    entry = record["history"][0]
    overall = entry["metrics"]["overall"]
    assert record["identity"]["top_logprobs"] >= 2  # a weighing judge is another judge
    for kind in KINDS:
        assert overall[kind]["recall"] in (0.0, None), kind  # the written verdicts never say "met"
    assert overall["holistic"]["spearman"] is None  # coverage 9 for every answer
    weighted = overall["weighted"]
    assert weighted["auc"]["all"] == 1.0
    assert weighted["threshold"]["value"] == pytest.approx((P_SAID + P_UNSAID) / 2)
    assert weighted["threshold"]["youden_j"] == 1.0 and entry["p_met_threshold"] == weighted["threshold"]
    assert all(weighted["at_threshold"][k]["f1"] in (1.0, None) for k in KINDS)
    assert weighted["at_threshold"]["topic"]["f1"] == 1.0 and weighted["at_default"]["topic"]["recall"] == 0.0
    assert weighted["holistic"]["spearman"] > 0.9 and weighted["holistic"]["scored"] == overall["answers"]
    assert {c["p_met"] for c in entry["criteria"]} == {P_SAID, P_UNSAID}
    out = capsys.readouterr().out
    assert "probability-weighted" in out and "threshold 0.250 (J 1.000)" in out


def test_a_run_of_the_calibrated_judge_cuts_its_p_met_at_the_stored_threshold(tmp_path: Path, pool: Path) -> None:
    record = calibrate(tmp_path, pool)
    data = write_jsonl(tmp_path / "suite" / "items.jsonl", RUN_SUITE)

    def graded(store: Path) -> dict[str, Any]:
        out_dir = tmp_path / f"run-{store.name}"
        out = pool_run_cli(
            "--pool",
            str(pool),
            "--data",
            str(data),
            "--out",
            str(out_dir),
            "--no-routing",
            cache=tmp_path / "cache",
            env={"MEDPOOL_CALIBRATION_DIR": str(store)},
        )
        assert out.returncode == 0, out.stderr
        return scores_by_item(out_dir)["k1"]["details"]["criteria_items"]

    calibrated = graded(tmp_path / "store")
    assert calibrated["p_met_cut"] == {"hedger": {"value": 0.25, "calibration": record["judge_key"]}}
    met = {row["id"]: row["met"] for row in calibrated["items"]}
    assert met == {"T1": True, "T2": False, "W1": True, "N1": False}  # the answer's words, found by P(met) ≥ 0.25
    assert all(row["met_written"] is False for row in calibrated["items"])
    assert calibrated["score"] == 0.75 and calibrated["passed"] is True  # (1 + 2) / (1 + 1 + 2)
    assert calibrated["written"] == {"score": 0.0, "passed": False}
    uncalibrated = graded(tmp_path / "empty-store")
    assert uncalibrated["p_met_cut"] == {"hedger": {"value": 0.5, "calibration": None}}
    assert uncalibrated["score"] == 0.0 and not any(row["met"] for row in uncalibrated["items"])


# --- the claim set: the same weighted side for P(unsupported) ---------------------------------------

CLAIMS = [
    (f"C{i:02d}", f"声明{i}{'（无据）' if i % 2 else '（有据）'}", "unsupported" if i % 2 else "supported")
    for i in range(24)
]


def claim_hedger(index: int, payload: dict[str, Any]) -> Any:
    """Labels every claim "supported", but gives "unsupported" 0.35 on the unsupported ones, 0.05 else."""
    answer = fenced_answer(payload["messages"][1]["content"])
    text = json.dumps({"claims": [{"claim": answer, "label": "supported"}]}, ensure_ascii=False)
    p = 0.35 if "无据" in answer else 0.05
    at = text.index('"label": "') + len('"label": "')
    return _answer(text, {at: [("supported", math.log(1 - p)), ("unsupported", math.log(p))]})


def test_the_claim_calibration_reports_p_unsupported_beside_the_plain_labels(
    tmp_path: Path, fake_openai: FakeOpenAIStarter, capsys: pytest.CaptureFixture[str]
) -> None:
    claims = tmp_path / "claims.yaml"
    claims.write_text(
        "items:\n" + "".join(f"  - {{id: {i}, claim: '{c}', gold: {g}, context: 问}}\n" for i, c, g in CLAIMS),
        encoding="utf-8",
    )
    pool = write_pool(tmp_path, fake_openai(claim_hedger))
    store = tmp_path / "store"
    assert (
        main(["--pool", str(pool), "--set", str(claims), "--store", str(store), "--cache-dir", str(tmp_path / "c")])
        == 0
    )
    [record] = calibrations(store)
    metrics = record["history"][0]["metrics"]
    assert metrics["overall"]["unsupported"]["recall"] == 0.0  # the written labels miss every one
    weighted = metrics["weighted"]
    assert weighted["claims_with_p"] == 24 and weighted["auc"] == 1.0
    assert weighted["threshold"]["value"] == pytest.approx(0.2) and weighted["at_threshold"]["f1"] == 1.0
    assert weighted["at_default"]["f1"] == 0.0
    assert "AUC of P(unsupported) 1.000" in capsys.readouterr().out
