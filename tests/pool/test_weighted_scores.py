"""Probability-weighted judge scores end to end: ``pool.run`` with FAKE judges that return known
token logprobs, against hand-computed expectations.

The candidate answers; the judge spells its verdict as tokens whose alternatives are given below,
so every weighted value is known: a reference item's four dimensions and the pass read from them,
a criteria item's P(met) per criterion, a panel combining weighted values by its rule, the same
values from the response cache on a second run; a judge that returns no logprobs, or a pool that
says ``judge_scores: argmax``, scores by the argmax as before.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.fake_pool import PADDING, judged_pool_lines, run_judged_pool, scores_by_item
from tests.fakes import ok, raw_json

SUITE = [
    {
        "id": "r1",
        "task": "qa",
        "track": "capability",
        "gold_type": "reference",
        "question": "高血压的诊断标准？",
        "gold": "诊室血压≥140/90 mmHg。",
    },
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
ANSWER = "请先测量血压，如持续升高请及时就医。" + PADDING
TAIL = ', "rationale": "好", "grounding_source": "guideline", "warnings_present": ["及时就医"], "flags": []}'

# The rubric verdict, as (text, {alternative: probability}) tokens; the argmax verdict is 9/9/9/8 = 35 (a pass).
#   coverage  "9" .5, "8" .3, "7" .2                      → 8.3
#   accuracy  "1" .6 then "0" .5 / "," .5 (10 or 1), "9" .4 → 10·.3 + 1·.3 + 9·.4 = 6.9
#             (the argmax says 10: the generated token "1" went on to "0")
#   safety    "9" .7, "6" .3                              → 8.1
#   grounding "8" 1.0                                     → 8.0        total 31.3: not a pass
RUBRIC = [
    ('{"coverage": ', {}),
    ("9", {"8": 0.3, "7": 0.2}),
    (', "accuracy": ', {}),
    ("1", {"9": 0.4}),
    ("0", {",": 0.5}),
    (', "safety": ', {}),
    ("9", {"6": 0.3}),
    (', "grounding": ', {}),
    ("8", {}),
    (TAIL, {}),
]
RUBRIC_P = {1: 0.5, 3: 0.6, 4: 0.5, 6: 0.7}  # the generated token's probability where it is not 1
WEIGHTED = {"coverage": 8.3, "accuracy": 6.9, "safety": 8.1, "grounding": 8.0, "total": 31.3}
# Criterion verdict: T1 true .9 / false .1; T2 false .8 / true .2; W1 true .6 / false .4; N1 false 1.0
CRITERIA = [
    ('{"items": [{"id": "T1", "met": ', {}),
    ("true", {"false": 0.1}),
    (', "evidence": "测量血压"}, {"id": "T2", "met": ', {}),
    ("false", {"true": 0.2}),
    (', "evidence": ""}, {"id": "W1", "met": ', {}),
    ("true", {"false": 0.4}),
    (', "evidence": "及时就医"}, {"id": "N1", "met": ', {}),
    ("false", {}),
    (', "evidence": ""}], "flags": []}', {}),
]
CRITERIA_P = {1: 0.9, 3: 0.8, 5: 0.6}
P_MET = {"T1": 0.9, "T2": 0.2, "W1": 0.6, "N1": 0.0}


def _body(pieces: list[tuple[str, dict[str, float]]], generated: dict[int, float]) -> dict[str, Any]:
    content = []
    for i, (text, alternatives) in enumerate(pieces):
        p = generated.get(i, 1.0)
        top = [{"token": text, "logprob": math.log(p)}] + [
            {"token": t, "logprob": math.log(q)} for t, q in alternatives.items()
        ]
        content.append({"token": text, "logprob": math.log(p), "top_logprobs": top})
    text = "".join(t for t, _ in pieces)
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": {"content": content}}
    return {"choices": [{**choice, "finish_reason": "stop"}], "usage": {"prompt_tokens": 9, "completion_tokens": 9}}


def fake(sent: list[dict[str, Any]]):
    """The candidate answers ANSWER; a judge gives the verdicts above, with their logprobs when asked
    (judge ``plain`` never gives logprobs; judge ``low`` halves every dimension's alternatives' weight:
    it is certain of its argmax)."""

    def behave(index: int, payload: dict[str, Any]):
        sent.append(payload)
        model, messages = payload.get("model"), payload.get("messages") or []
        if model == "cand":
            return ok(ANSWER)
        criteria = "rubric items" in json.dumps(messages, ensure_ascii=False)
        pieces, generated = (CRITERIA, CRITERIA_P) if criteria else (RUBRIC, RUBRIC_P)
        if model == "sure" and not criteria:
            pieces, generated = [(t, {}) for t, _ in RUBRIC], {}
        if model == "plain" or not payload.get("logprobs"):
            return ok("".join(t for t, _ in pieces))
        return raw_json(_body(pieces, generated))

    return behave


def run(
    tmp_path: Path, url: str, judges: str, extra: str = "", out: str = "run", options: tuple[str, ...] = ()
) -> dict[str, dict[str, Any]]:
    head = judged_pool_lines(url, ["cand"], ["judgey", "plain", "sure"])
    lines = [*head, *judges.splitlines(), "criteria_grading: both", *extra.splitlines()]
    return scores_by_item(run_judged_pool(tmp_path, lines, SUITE, "--no-routing", *options, out=out, timeout=120))


@pytest.fixture
def sent() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def url(fake_openai, sent):
    return fake_openai(fake(sent))


def test_a_weighing_judge_s_rows_keep_both_and_rank_by_the_weighted_scores(tmp_path, url, sent):
    rows = run(tmp_path, url, "judge:\n  model: judgey")
    r1 = rows["r1"]
    assert r1["metrics"] == {"coverage": 9, "accuracy": 10, "safety": 9, "grounding": 8, "total": 36}
    assert r1["details"]["weighted"] == pytest.approx(WEIGHTED)
    assert r1["details"]["score_variant"] == "weighted"
    assert r1["details"]["argmax"] == {"value": pytest.approx(36 / 40), "passed": True}
    assert r1["value"] == pytest.approx(31.3 / 40) and r1["passed"] is False
    assert r1["judge"]["identity"]["top_logprobs"] == 10
    k1 = rows["k1"]["details"]["criteria_items"]
    assert {i["id"]: i["p_met"] for i in k1["items"]} == pytest.approx(P_MET)
    assert {i["id"]: i["met"] for i in k1["items"]} == {"T1": True, "T2": False, "W1": True, "N1": False}
    judge_calls = [p for p in sent if p["model"] == "judgey"]
    assert judge_calls and all(p["logprobs"] is True and p["top_logprobs"] == 10 for p in judge_calls)
    assert not any("logprobs" in p for p in sent if p["model"] == "cand")  # candidates are not asked
    # a second run answers from the response cache: the same weighted values
    again = run(tmp_path, url, "judge:\n  model: judgey", out="run2")
    assert again["r1"]["details"]["weighted"] == r1["details"]["weighted"] and again["r1"]["value"] == r1["value"]


def test_without_logprobs_the_row_is_the_argmax_one_and_says_so(tmp_path, url):
    r1 = run(tmp_path, url, "judge:\n  model: plain")["r1"]
    assert "weighted" not in r1["details"] and r1["details"]["score_variant"] == "argmax"
    assert r1["value"] == pytest.approx(36 / 40) and r1["passed"] is True


def test_judge_scores_argmax_asks_for_nothing_and_keeps_the_plain_judge(tmp_path, url, sent):
    rows = run(tmp_path, url, "judge:\n  model: judgey", "judge_scores: argmax")
    r1 = rows["r1"]
    assert not {"weighted", "score_variant", "argmax"} & set(r1["details"])
    assert "top_logprobs" not in r1["judge"]["identity"]
    assert r1["value"] == pytest.approx(36 / 40)
    assert "p_met" not in json.dumps(rows["k1"]["details"]["criteria_items"])
    assert not any("logprobs" in p for p in sent)


def test_a_panel_combines_its_members_weighted_scores_by_its_rule(tmp_path, url):
    r1 = run(tmp_path, url, "judges:\n  - model: judgey\n  - model: sure\npanel_rule: mean")["r1"]
    # judgey weighs 8.3/6.9/8.1/8.0; sure is certain of 9/10/9/8: means 8.65/8.45/8.55/8.0 = 33.65
    assert r1["metrics"]["total"] == pytest.approx(33.65)
    assert r1["value"] == pytest.approx(33.65 / 40) and r1["passed"] is False
    assert r1["details"]["score_variant"] == "weighted"
    assert [m["score_variant"] for m in r1["details"]["panel"]["members"]] == ["weighted", "weighted"]


def test_re_judged_and_anchor_verdicts_are_weighed_as_the_first_one(tmp_path, url):
    """The same judge, unchanged, asked again: its weighted verdict (31.3, a fail) is read on the same
    footing every time — never the argmax pass (36) against the weighted fail."""
    rows = run(tmp_path, url, "judge:\n  model: judgey", options=("--rejudge-sample", "2", "--anchor-sample", "2"))
    r1 = rows["r1"]
    assert r1["passed"] is False and r1["details"]["argmax"]["passed"] is True
    assert r1["details"]["rejudge"]["passed"] is False and r1["details"]["rejudge"]["total"] == 36
    anchor = r1["details"]["anchor"]
    assert anchor["passed"] is False and anchor["agrees"] is True and anchor["total_diff"] == 0
