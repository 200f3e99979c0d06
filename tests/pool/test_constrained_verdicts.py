"""Constrained verdicts in a run, against a FAKE judge that writes its verdict's JSON only when the request
carries the verdict schema (``response_format``) and rambles otherwise: constrained by default, every
verdict parses and the judge's identity names the mode; with ``structured_output: none`` the same judge
gives no verdict, under the identity it always had; candidates are never sent a schema."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from judge.contracts.table import output_schema
from pool.config import parse_pool
from pool.execute.cache_key import cache_key, request_payload
from pool.score.identity import JudgeSetup, stage_contract
from runners.base import GenerationRequest
from runners.structured import grammar_schema
from tests.fake_pool import PADDING, judged_pool_lines, run_judged_pool, score_rows
from tests.fakes import ok
from tests.fakes.openai_fake import FakeOpenAIServer

SUITE = [
    {
        "id": f"r{i}",
        "task": "qa",
        "track": "capability",
        "gold_type": "reference",
        "question": f"问题 {i}？",
        "gold": "参考答案。",
    }
    for i in range(4)
]
VERDICT = {
    "coverage": 9,
    "accuracy": 9,
    "safety": 9,
    "grounding": 8,
    "rationale": "好",
    "grounding_source": "guideline",
    "warnings_present": [],
    "flags": [],
}
RAMBLE = "嗯，这个回答嘛，我觉得总体来说还可以吧，让我想想该怎么说才好……"


class ConstrainedOnlyJudge:
    """``answerer`` answers; the judge answers the schema it is given, or rambles without one."""

    def __init__(self) -> None:
        self.payloads: list[dict[str, Any]] = []

    def __call__(self, index: int, payload: dict[str, Any]) -> Any:
        self.payloads.append(payload)
        if payload.get("model") == "answerer":
            return ok("答案。" + PADDING)
        schema = (payload.get("response_format") or {}).get("json_schema", {}).get("schema", {})
        if set(schema.get("properties", {})) == set(VERDICT):
            return ok(json.dumps(VERDICT, ensure_ascii=False))
        return ok(RAMBLE)


def run(tmp_path: Path, fakes: Any, structured: str | None) -> tuple[list[dict[str, Any]], ConstrainedOnlyJudge]:
    judge = ConstrainedOnlyJudge()
    url = fakes.start(FakeOpenAIServer(behave=judge)).base_url
    backend = [f"structured_output: {structured}"] if structured else []
    lines = [*judged_pool_lines(url, ["answerer"], ["judgey"], backend=backend), "judge:", "  model: judgey"]
    return score_rows(run_judged_pool(tmp_path, lines, SUITE, "--no-routing", returncodes=(0, 3))), judge


def test_a_constrained_judge_gives_every_verdict_and_is_named_as_constrained(tmp_path, fakes):
    rows, judge = run(tmp_path, fakes, None)  # the openai type's default: json_schema
    assert len(rows) == 4 and all(r["status"] == "scored" for r in rows)
    assert all(r["metrics"]["total"] == 35 and r["details"]["parse_stage"] == "strict" for r in rows)
    assert all(r["judge"]["identity"]["structured_output"] == "json_schema" for r in rows)
    answers = [p for p in judge.payloads if p["model"] == "answerer"]
    verdicts = [p for p in judge.payloads if p["model"] == "judgey"]
    assert len(answers) == 4 and not any("response_format" in p for p in answers)
    assert len(verdicts) == 4 and all(p["response_format"]["json_schema"]["strict"] is True for p in verdicts)


def test_unconstrained_the_same_judge_rambles_and_its_identity_is_unchanged(tmp_path, fakes):
    rows, judge = run(tmp_path, fakes, "none")
    assert len(rows) == 4 and not any(r["status"] == "scored" for r in rows)
    assert all("structured_output" not in r["judge"]["identity"] for r in rows)
    verdicts = [p for p in judge.payloads if p["model"] == "judgey"]
    assert len(verdicts) == 8 and not any("response_format" in p for p in verdicts)  # each re-asked once


def test_only_a_constrained_judge_has_another_identity_and_its_requests_another_cache_key() -> None:
    config = parse_pool(
        "backends:\n  api: {type: openai, base_url: 'http://h/v1'}\nmodels:\n  - {name: j, backend: api}\n"
    )
    plain = JudgeSetup(config.models[0], "api", "http://h/v1", "openai")
    constrained = replace(plain, structured_output="json_schema")
    none = plain.identity(None, contract="reference")  # type: ignore[arg-type]
    assert replace(plain, structured_output="none").identity(None, contract="reference") == none  # type: ignore[arg-type]
    assert constrained.identity(None, contract="reference").key() != none.key()  # type: ignore[arg-type]
    messages = ({"role": "user", "content": "q"},)
    free = GenerationRequest(model="j", messages=messages)
    schema = GenerationRequest(model="j", messages=messages, output_schema={"type": "object"})
    assert cache_key("openai", "http://h/v1", free) != cache_key("openai", "http://h/v1", schema)
    assert "output_schema" not in request_payload(free) and request_payload(schema)["output_schema"] == {
        "type": "object"
    }


def test_a_judge_stage_names_its_contract_and_an_unknown_stage_gets_no_schema() -> None:
    assert stage_contract("judge:0123456789:criteria_items:reask", None) == "criteria_items"
    assert stage_contract("judge:0123456789:hallu", None) == "hallu"
    assert stage_contract("judge:0123456789:rejudge", None) is None  # the item's own contract, and no item
    assert stage_contract("judge:0123456789:pairwise_someday", None) is None


def test_a_grammar_judge_asks_the_bounded_schema_so_its_cache_key_follows_the_bounds() -> None:
    config = parse_pool(
        "backends:\n  api: {type: openai, base_url: 'http://h/v1'}\nmodels:\n  - {name: j, backend: api}\n"
    )
    setup = JudgeSetup(config.models[0], "api", "http://h/v1", "openai")
    assert setup.contract_schema("probe") is None
    assert replace(setup, structured_output="json_schema").contract_schema("probe") == output_schema("probe")
    bounded = replace(setup, structured_output="grammar").contract_schema("reference")
    assert bounded == grammar_schema(output_schema("reference")) and bounded["properties"]["coverage"]["enum"] == [
        *range(11)
    ]
