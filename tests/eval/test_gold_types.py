"""Gold type declarations (eval.gold_types): one declaration per type is the only per-type list —
families, judge contracts, rubric types, value metrics and scorers all follow from it."""

from __future__ import annotations

import dataclasses

import pytest

import judge
from eval import gold_checks
from eval.gold_types import (
    DECLARED,
    FAMILY_OF_GOLD_TYPE,
    GOLD_TYPE_SPECS,
    GOLD_TYPES,
    JUDGED_GOLD_TYPES,
    RUBRIC_GOLD_TYPES,
    GoldTypeSpec,
    _by_name,
    primary_metric_of,
    spec_of,
    value_metric_of,
)
from eval.items import Item, ItemError, Source
from eval.items.scores import family_of
from eval.loaders import load_demo_suite
from eval.scorers import SCORERS, NeedsJudge, register, score_answer
from judge.contracts.table import CONTRACT_SPECS
from pool.plan import JUDGED_GOLD_TYPES as PLAN_JUDGED

# What the per-type lists said before they were derived from the declarations.
FAMILIES_BEFORE = {
    "reference": "capability",
    "criteria": "specialty",
    "routing": "orchestration",
    "tool_decision": "orchestration",
    "probe": "robustness",
    "single_choice": "exam",
    "multi_choice": "exam",
    "cloze": "exam",
    "open_label": "tcm",
    "extraction": "tcm",
    "quantitative": "tcm",
    "classification": "tcm",
    "tcm_case": "tcm",
}


def test_the_derived_lists_say_what_the_hand_kept_ones_said():
    assert {k: v for k, v in FAMILY_OF_GOLD_TYPE.items() if k in FAMILIES_BEFORE} == FAMILIES_BEFORE
    assert set(FAMILIES_BEFORE) <= set(GOLD_TYPES)
    assert JUDGED_GOLD_TYPES == PLAN_JUDGED == ("reference", "criteria", "probe")
    assert RUBRIC_GOLD_TYPES == ("reference", "criteria")
    assert value_metric_of("open_label") == "dtr_f1" and value_metric_of("classification") == "accuracy"
    assert [s.name for s in DECLARED if s.primary_metric != "score"] == ["classification"]
    assert primary_metric_of("classification") == "macro_f1"
    assert value_metric_of("written_by_another_version") == primary_metric_of("written_by_another_version") == "score"


def test_every_declared_type_is_scored_and_every_judge_contract_is_implemented():
    assert set(SCORERS) == set(GOLD_TYPES)
    for spec in DECLARED:
        assert family_of(spec.name) == spec.family
        if spec.judge_contract is not None:
            assert spec.judge_contract in CONTRACT_SPECS, spec.name


@pytest.mark.parametrize("gold_type", JUDGED_GOLD_TYPES)
def test_judged_types_ask_for_their_declared_contract(gold_type):
    item = next(i for i in load_demo_suite().items if i.gold_type == gold_type)
    assert score_answer(item, "一些回答", "ok") == NeedsJudge(spec_of(gold_type).judge_contract)
    assert judge.needs_judge(item) and judge.contract_for(item) == spec_of(gold_type).judge_contract


def test_judge_free_types_have_no_contract():
    item = next(i for i in load_demo_suite().items if i.gold_type == "cloze")
    assert not judge.needs_judge(item)
    with pytest.raises(ValueError, match="scored without the judge"):
        judge.contract_for(item)


def test_a_scorer_for_an_undeclared_type_is_refused():
    before = dict(SCORERS)
    with pytest.raises(ValueError, match=r"'essay' is not declared.*eval/gold_types.py"):
        register("essay")(lambda item, answer: None)
    assert SCORERS == before


def test_declarations_are_checked():
    spec = GOLD_TYPE_SPECS["cloze"]
    with pytest.raises(ValueError, match="declared twice"):
        _by_name((spec, spec))
    with pytest.raises(ValueError, match="family must be one of"):
        dataclasses.replace(spec, family="maths")
    with pytest.raises(ValueError, match="judge_contract must be one of"):
        dataclasses.replace(spec, judge_contract="essay")
    with pytest.raises(ValueError, match="primary_metric must be one of"):
        dataclasses.replace(spec, primary_metric="bleu")
    with pytest.raises(ValueError, match="unknown gold type 'essay'; declared: reference, criteria"):
        spec_of("essay")
    assert isinstance(spec, GoldTypeSpec) and not spec.judged and not spec.rubric


def test_items_are_checked_by_the_declared_check():
    def make(gold_type, gold, **fields):
        return Item(
            id=f"t/x/{gold_type}",
            suite="t",
            track="exam",
            task="x",
            gold_type=gold_type,
            gold=gold,
            source=Source("t.jsonl", 3),
            question="问",
            **fields,
        )

    with pytest.raises(ItemError, match=r"gold_type: must be one of \['reference', 'criteria'"):
        make("essay", "x")
    with pytest.raises(ItemError, match=r"gold: probe gold must be one of \['abstain', 'refute'\]"):
        make("probe", "maybe")
    with pytest.raises(ItemError, match=r"gold: classification gold '痰湿证' is not in meta.labels"):
        make("classification", "痰湿证", meta={"labels": ["气虚证"]})
    with pytest.raises(ItemError, match="gold: single_choice gold a choice item needs options"):
        make("single_choice", "A")
    assert make("classification", "气虚证", meta={"labels": ["气虚证"]}).gold == "气虚证"
    assert gold_checks.one_of(("x", "y"))("x", gold_checks.GoldContext()) is None
