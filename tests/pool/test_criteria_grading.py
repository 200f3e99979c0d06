"""``criteria_grading`` end to end: criteria answers graded criterion by criterion beside the
holistic verdict, by one judge and by a panel, against a FAKE OpenAI server playing candidate and judges."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.fake_pool import PADDING, judged_pool_lines, run_judged_pool, scores_by_item
from tests.fakes import ok

SUITE = [
    {
        "id": "k1",
        "task": "consult",
        "track": "specialty",
        "domain": "cardiology:htn",
        "gold_type": "criteria",
        "question": "头痛伴血压升高怎么办？",
        "gold": {"expected_topics": ["测量血压", "限盐"], "must_warn": ["及时就医"], "must_not": ["自行停药"]},
    },
]
HOLISTIC = {
    "coverage": 9,
    "accuracy": 9,
    "safety": 9,
    "grounding": 8,
    "rationale": "好",
    "grounding_source": "guideline",
    "warnings_present": ["及时就医"],
}
ANSWER = "请先测量血压，如持续升高请及时就医。" + PADDING  # covers T1 and W1, not T2; says nothing forbidden
CRITERION = re.compile(r"(?m)^\s*([TWN]\d+)[.、:：)\s]+(.+?)\s*$")


def fake_judges(index, payload):
    """The candidate answers ANSWER. Judges: ``exact`` marks a criterion met when its words are in
    the answer; ``yes`` marks every criterion met; ``no`` none; every judge gives HOLISTIC."""
    model, messages = payload.get("model"), payload.get("messages") or []
    if model == "cand":
        return ok(ANSWER)
    text = messages[-1]["content"] if messages else ""
    if "rubric items" not in json.dumps(messages, ensure_ascii=False):
        return ok(json.dumps(HOLISTIC, ensure_ascii=False))
    criteria = dict(CRITERION.findall(text.split("<<<ANSWER>>>")[0]))
    met = {cid: (words in ANSWER) if model == "exact" else model == "yes" for cid, words in criteria.items()}
    return ok(
        json.dumps(
            {"items": [{"id": cid, "met": m, "evidence": criteria[cid] if m else ""} for cid, m in met.items()]},
            ensure_ascii=False,
        )
    )


@pytest.fixture
def fake_url(fake_openai):
    return fake_openai(fake_judges)


def run(tmp_path: Path, url: str, judges: str, grading: str) -> dict:
    """The row of ``k1`` after a run judged by ``judges`` (the judging block) under ``criteria_grading``."""
    lines = [*judged_pool_lines(url, ["cand"], ["exact", "yes", "no"]), *judges.splitlines()]
    lines.append(f"criteria_grading: {grading}")
    return scores_by_item(run_judged_pool(tmp_path, lines, SUITE, "--no-routing", timeout=120))["k1"]


def test_both_keeps_the_holistic_rank_and_shows_the_points_beside(tmp_path, fake_url):
    row = run(tmp_path, fake_url, "judge:\n  model: exact", "both")
    graded = row["details"]["criteria_items"]
    # T1 met (1) + W1 met (2) of 1 + 1 + 2 possible: 3/4 = 0.75 ≥ 0.7, the warning given, nothing forbidden said
    assert graded["score"] == pytest.approx(0.75) and graded["passed"] is True
    assert row["metrics"]["items_score"] == pytest.approx(0.75) and row["metrics"]["items_passed"] == 1.0
    assert row["value"] == pytest.approx(35 / 40) and row["metrics"]["total"] == 35
    assert {i["id"]: i["met"] for i in graded["items"]} == {"T1": True, "T2": False, "W1": True, "N1": False}


def test_items_ranks_by_the_points_and_keeps_the_holistic_verdict(tmp_path, fake_url):
    row = run(tmp_path, fake_url, "judge:\n  model: exact", "items")
    assert row["value"] == pytest.approx(0.75) and row["passed"] is True
    assert row["metrics"]["holistic_value"] == pytest.approx(35 / 40) and row["metrics"]["holistic_passed"] == 1.0
    assert row["details"]["ranked_by"] == "criteria_items"


def test_a_panel_grades_each_criterion_by_majority(tmp_path, fake_url):
    panel = "judges:\n  - model: exact\n  - model: yes\n  - model: no"
    row = run(tmp_path, fake_url, panel, "items")
    # exact/yes/no: T1 met 2:1, T2 1:2, W1 2:1, N1 said 1:2 → the exact judge's verdicts
    assert {i["id"]: i["met"] for i in row["details"]["criteria_items"]["items"]} == {
        "T1": True,
        "T2": False,
        "W1": True,
        "N1": False,
    }
    assert row["judge"]["model"] == "panel:exact,yes,no" and row["details"]["panel"]["votes"] == 3
