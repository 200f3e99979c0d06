"""The per-request ``criteria_items`` schema: exactly the item's criterion ids, once each, so a constrained
judge cannot write an empty or partial verdict. Checked three ways: the schema itself (jsonschema), a
criteria calibration against a FAKE judge that writes the smallest verdict its request's schema allows
(``{"items": []}`` when it may), and one real SmolLM2 call through the grammar the managed llama.cpp
engine decodes with."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from eval.items import Item, Source
from judge.calibration.store import calibrations
from judge.contracts.criteria_items import (
    CRITERIA_ITEMS_SYSTEM,
    KINDS,
    VERDICT_SCHEMA,
    criteria_items_messages,
    criteria_items_schema,
    parse_item_criteria,
)
from judge.contracts.table import output_schema, request_schema
from judge.verdicts import CriteriaItemsVerdict
from pool.calibrate.cli import main
from runners.base import GenerationParams, GenerationRequest
from runners.structured import grammar_schema
from tests.fake_pool import FakeOpenAIStarter
from tests.fakes import ok
from tests.judge.calibration_fixtures import rubric, write_suite
from tests.local_models import requires_llama

GOLD = {"expected_topics": ["多饮水", "注意休息"], "must_warn": ["高热不退及时就医"], "must_not": ["自行服用抗生素"]}
IDS = ["T1", "T2", "W1", "N1"]


def _item() -> Item:
    return Item(
        id="t/criteria/fever",
        suite="t",
        track="capability",
        task="criteria",
        gold_type="criteria",
        gold=GOLD,
        source=Source("t", 1),
        question="感冒发烧在家怎么处理？",
    )  # type: ignore[arg-type]


def _verdict(ids: list[str]) -> dict[str, Any]:
    return {"items": [{"id": i, "met": True, "evidence": ""} for i in ids], "flags": []}


def _valid(value: Any, schema: dict[str, Any]) -> bool:
    try:
        jsonschema.Draft202012Validator(schema).validate(value)
    except jsonschema.ValidationError:
        return False
    return True


@pytest.mark.parametrize("ordered", [False, True])
def test_the_request_schema_takes_every_id_once_and_nothing_less(ordered: bool) -> None:
    schema = criteria_items_schema(IDS, ordered)
    assert _valid(_verdict(IDS), schema)
    assert not _valid(_verdict([]), schema)  # what SmolLM2 wrote under the generic schema
    assert not _valid(_verdict(IDS[:3]), schema)
    assert not _valid(_verdict([*IDS, "T3"]), schema) and not _valid(_verdict(["T1", "T2", "W1", "T9"]), schema)
    assert _valid(_verdict([]), VERDICT_SCHEMA)  # the contract's verdict shape stays generic
    long = _verdict(IDS)
    long["items"][0]["evidence"] = "字" * 61
    assert not _valid(long, schema)


def test_the_ordered_form_fixes_each_place_and_the_portable_form_only_the_set() -> None:
    swapped = _verdict(["T2", "T1", "W1", "N1"])
    assert _valid(swapped, criteria_items_schema(IDS)) and not _valid(swapped, criteria_items_schema(IDS, True))
    with pytest.raises(ValueError):
        criteria_items_schema([])
    with pytest.raises(ValueError):
        criteria_items_schema(["T1", "X2"])


def test_the_table_narrows_only_with_an_item() -> None:
    assert request_schema("criteria_items", None) == output_schema("criteria_items")
    assert request_schema("criteria_items", _item(), ordered=True) == criteria_items_schema(IDS, True)
    assert request_schema("reference", _item()) == output_schema("reference")  # a contract that does not narrow


# --- a FAKE judge that writes the least its request allows -------------------------------------------


def lazy(index: int, payload: dict[str, Any]) -> Any:
    """The smallest verdict the request's schema allows: no judgement at all when the schema lets it,
    else every id the schema names, each "not met" (a holistic request gets a fixed rubric verdict)."""
    messages = payload["messages"]
    if messages[0]["content"] != CRITERIA_ITEMS_SYSTEM:
        return ok(rubric(5))
    items = payload["response_format"]["json_schema"]["schema"]["properties"]["items"]
    ids = items["items"]["properties"]["id"].get("enum", []) if items.get("minItems") else []
    return ok(json.dumps({"items": [{"id": i, "met": False, "evidence": ""} for i in ids], "flags": []}))


def test_a_lazy_constrained_judge_judges_every_criterion(tmp_path: Path, fake_openai: FakeOpenAIStarter) -> None:
    pool = tmp_path / "pool.yaml"
    pool.write_text(
        f"backends:\n  fake: {{type: openai, base_url: '{fake_openai(lazy)}', max_retries: 0}}\n"
        "models:\n  - {name: alpha, backend: fake}\n"
        "judge:\n  backend: fake\n  name: lazy\n  model: lazy\n",
        encoding="utf-8",
    )
    store = tmp_path / "store"
    args = ["--pool", str(pool), "--set", "criteria", "--suite", str(write_suite(tmp_path)), "--per-item", "2"]
    assert main([*args, "--store", str(store), "--cache-dir", str(tmp_path / "cache")]) == 0
    [record] = calibrations(store)
    overall = record["history"][0]["metrics"]["overall"]
    assert record["identity"]["structured_output"] == "json_schema"
    assert overall["answers_judged"] == overall["answers"] == 8
    for kind in KINDS:
        assert overall[kind]["no_verdict"] == 0 and overall[kind]["coverage"] == 1.0, kind


# --- one real grammar call ---------------------------------------------------------------------------


@requires_llama
def test_smollm2_under_the_items_grammar_judges_every_criterion_of_the_item() -> None:
    from runners.llamacpp.server import ManagedLlamaServer, ServedModel
    from runners.llamacpp.settings import LlamaCppSettings
    from runners.protocols.openai_compat import OpenAICompatRunner

    item = _item()
    schema = grammar_schema(request_schema("criteria_items", item, ordered=True))
    request = GenerationRequest(
        model="smol",
        messages=criteria_items_messages(item, "多喝水，好好休息。"),
        params=GenerationParams(temperature=0.0, max_tokens=512),
        output_schema=schema,
    )

    async def ask() -> str:
        settings = LlamaCppSettings.of(n_threads=1, n_ctx=4096, structured_output="grammar")
        async with ManagedLlamaServer([ServedModel("smol", "smollm2-135m-instruct")], settings) as server:
            runner = OpenAICompatRunner(server.base_url, structured_output="grammar", timeout_s=900)
            try:
                response = await runner.generate(request)
            finally:
                await runner.aclose()
        assert response.ok, response.error_detail
        return response.text

    reply = asyncio.run(ask())
    assert _valid(json.loads(reply), criteria_items_schema(IDS, True)), reply
    verdict = parse_item_criteria(item, reply)
    assert isinstance(verdict, CriteriaItemsVerdict) and not verdict.missing
    assert [i.id for i in verdict.items] == IDS
