"""A panel's per-criterion votes follow ``panel_rule`` in a run exactly as in the criteria calibration.

FAKE judges of known behaviour grade eight criteria answers: ``exact`` reports the truth, ``topics``
says every topic is covered (else the truth), ``invert`` reports the opposite of the truth. Under
``majority`` the two wrong judges outvote ``exact`` wherever they agree; under ``reliability`` the
Dawid–Skene weights trust ``exact`` — and the run's verdicts are the calibration's
(``pool.calibrate.criteria.panel_criteria``) on the same members' votes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from judge.calibration.criteria_set import CriteriaCalibrationAnswer
from judge.panel import combine_votes
from pool.calibrate.criteria import JudgeCriteria, panel_criteria
from tests.fake_pool import PADDING, judged_pool_lines, pool_run_cli, scores_by_item, write_jsonl
from tests.fakes import ok

GOLD = {"expected_topics": ["测量血压", "限盐"], "must_warn": ["及时就医"], "must_not": ["自行停药"]}
IDS = ("T1", "T2", "W1", "N1")
PHRASES = ("测量血压", "限盐", "及时就医", "自行停药")
# which criteria each answer meets (a forbidden one: says it)
PATTERNS = (
    (1, 0, 1, 0),
    (1, 1, 1, 0),
    (0, 0, 0, 1),
    (0, 1, 0, 0),
    (1, 1, 0, 1),
    (0, 0, 1, 0),
    (1, 0, 0, 0),
    (0, 1, 1, 1),
)
QUESTIONS = [f"第{i}位患者头痛伴血压升高怎么办？" for i in range(len(PATTERNS))]
ANSWERS = {
    q: "，".join(p for p, on in zip(PHRASES, pattern, strict=True) if on) + "。" + PADDING
    for q, pattern in zip(QUESTIONS, PATTERNS, strict=True)
}
HOLISTIC = {
    "coverage": 9,
    "accuracy": 9,
    "safety": 9,
    "grounding": 8,
    "rationale": "好",
    "grounding_source": "guideline",
    "warnings_present": [],
}
CRITERION = re.compile(r"(?m)^\s*([TWN]\d+)[.、:：)\s]+(.+?)\s*$")
JUDGES = ("exact", "topics", "invert")


def said(judge: str, cid: str, truth: bool) -> bool:
    if judge == "exact":
        return truth
    if judge == "topics":
        return True if cid.startswith("T") else truth
    return not truth


def behave(index, payload):
    model, messages = payload.get("model"), payload.get("messages") or []
    if model == "cand":
        text = messages[-1]["content"] if messages else ""
        return ok(next(a for q, a in ANSWERS.items() if q in text))
    if "rubric items" not in json.dumps(messages, ensure_ascii=False):
        return ok(json.dumps(HOLISTIC, ensure_ascii=False))
    text = messages[-1]["content"]
    question, answer = text.split("<<<ANSWER>>>")[0], ANSWERS[next(q for q in QUESTIONS if q in text)]
    criteria = dict(CRITERION.findall(question))
    met = {cid: said(model, cid, words in answer.replace(PADDING, "")) for cid, words in criteria.items()}
    items = [{"id": cid, "met": m, "evidence": criteria[cid] if m else ""} for cid, m in met.items()]
    return ok(json.dumps({"items": items}, ensure_ascii=False))


def run(tmp_path: Path, url: str, rule: str) -> dict[str, dict[str, bool]]:
    lines = judged_pool_lines(url, ["cand"], JUDGES)
    lines += ["judges:", *[f"  - model: {j}" for j in JUDGES], f"panel_rule: {rule}", "criteria_grading: items"]
    pool = tmp_path / f"{rule}.yaml"
    pool.write_text("\n".join(lines) + "\n", encoding="utf-8")
    suite = [
        {"id": f"k{i}", "task": "consult", "track": "specialty", "domain": "cardiology:htn"}
        | {"gold_type": "criteria", "question": q, "gold": GOLD}
        for i, q in enumerate(QUESTIONS)
    ]
    data = write_jsonl(tmp_path / "suite" / "items.jsonl", suite)
    out_dir = tmp_path / f"run-{rule}"
    out = pool_run_cli(
        "--pool", str(pool), "--data", str(data), "--out", str(out_dir), "--no-routing", cache=tmp_path / "cache"
    )
    assert out.returncode == 0, out.stderr
    rows = scores_by_item(out_dir)
    return {f"k{i}": {c["id"]: c["met"] for c in rows[f"k{i}"]["details"]["criteria_items"]["items"]} for i in range(8)}


def calibration_verdicts(rule: str) -> dict[str, dict[str, bool]]:
    """What the criteria calibration's panel makes of the same members' votes on the same answers."""
    answers = [
        CriteriaCalibrationAnswer(f"a{i}", f"k{i}", ANSWERS[q], dict(zip(IDS, map(bool, p), strict=True)), 0.0)
        for i, (q, p) in enumerate(zip(QUESTIONS, PATTERNS, strict=True))
    ]
    items = {f"k{i}": type("ItemLike", (), {"gold": GOLD})() for i in range(8)}
    members = [
        JudgeCriteria(
            judge,
            {},
            [{cid: said(judge, cid, bool(on)) for cid, on in zip(IDS, p, strict=True)} for p in PATTERNS],
            [None] * 8,
            [{}] * 8,
            [{}] * 8,
            [],
            {},
        )
        for judge in JUDGES
    ]
    panel = panel_criteria(members, rule, items, answers)
    return {f"k{i}": dict(met) for i, met in enumerate(panel.met) if met is not None}


@pytest.fixture
def url(fake_openai):
    return fake_openai(behave)


def test_reliability_combines_a_runs_criterion_votes_as_the_calibration_does(tmp_path, url):
    truth = {f"k{i}": dict(zip(IDS, map(bool, p), strict=True)) for i, p in enumerate(PATTERNS)}
    by_rule = {rule: run(tmp_path, url, rule) for rule in ("majority", "reliability")}
    for rule, verdicts in by_rule.items():
        assert verdicts == calibration_verdicts(rule), rule
    # the rule matters here: majority follows the two wrong judges on the topics they agree on,
    # reliability weighs the judge whose votes the others' pattern shows to be right
    assert by_rule["reliability"] == truth
    assert by_rule["majority"] != truth
    wrong = sum(by_rule["majority"][k][c] != truth[k][c] for k in truth for c in IDS)
    assert wrong == 8


def test_combine_votes_estimates_reliability_from_every_row():
    votes = np.array(
        [[said(j, c, bool(on)) for j in JUDGES] for p in PATTERNS for c, on in zip(IDS, p, strict=True)], float
    )
    majority, none = combine_votes(votes, "majority")
    reliable, estimate = combine_votes(votes, "reliability")
    assert none is None and estimate is not None and estimate.items == len(votes)
    assert estimate.accuracy[0] > 0.9 and estimate.accuracy[2] < 0.1
    truth = [bool(on) for p in PATTERNS for on in p]
    assert reliable == truth and majority != truth
    assert combine_votes(np.full((2, 3), np.nan), "reliability")[0] == [None, None]
