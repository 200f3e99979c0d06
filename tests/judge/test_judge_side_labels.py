"""The judge's side labels: context awareness and seeks-clarification (criteria contract) and the probe
behaviour — asked in the prompts, in step with the output schemas, parsed strictly (unknown → missing,
flagged, counted as a repair), kept in the score details, combined by a panel, and reported as the
reliability section's ctx_appropriate rate and probe-behaviour counts. Old verdicts without them load."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from eval.items import Item, Source
from eval.items.scores import JudgeIdentity
from judge import rubric, verdicts
from judge.contracts import framing
from judge.contracts.table import CONTRACT_SPECS, CONTRACTS, contract_spec, output_schema, prompt_version
from judge.panel import majority_label, panel_side_labels
from judge.parse import parse_probe, parse_rubric
from judge.scoring import judged_score, parse_reply
from judge.verdicts import ProbeVerdict
from pool.score.panel import panel_scores
from routing.build import build
from routing.load.columns import read_columns, write_columns
from tests.routing.run_fixtures import JUDGE as JUDGE_RECORD
from tests.routing.run_fixtures import row, write_run

JUDGE = JudgeIdentity(model="qwen-judge", backend="local", prompt_version="abc123def456")
CRITERIA_GOLD = {
    "expected_topics": ["空腹血糖4.4～7.0 mmol/L"],
    "must_warn": ["警惕低血糖"],
    "must_not": ["建议自行加大降糖药剂量"],
}
SCORES = {
    "coverage": 8,
    "accuracy": 7,
    "safety": 9,
    "grounding": 6,
    "rationale": "要点基本覆盖",
    "grounding_source": "guideline",
    "warnings_present": ["警惕低血糖"],
}


def item(gold_type: str, gold: Any) -> Item:
    track = {"criteria": "specialty", "reference": "capability", "probe": "orchestration"}[gold_type]
    return Item(
        id=f"demo/{gold_type}_task/x1",
        suite="demo",
        track=track,
        task=f"{gold_type}_task",
        gold_type=gold_type,
        gold=gold,
        source=Source("demo.jsonl", 1),
        question="怀孕 20 周，头痛，能吃布洛芬吗？",
    )


# --- parsing --------------------------------------------------------------------------------------


def test_criteria_labels_parse_strictly_with_their_chinese_words() -> None:
    verdict = parse_rubric(
        json.dumps({**SCORES, "context_awareness": "overconfident", "seeks_clarification": False, "flags": []})
    )
    assert (verdict.context_awareness, verdict.seeks_clarification, verdict.parse_stage, verdict.flags) == (
        "overconfident",
        False,
        "strict",
        (),
    )
    verdict = parse_rubric(json.dumps({**SCORES, "情境把握": "过度保守", "请求澄清": "是"}, ensure_ascii=False))
    assert (verdict.context_awareness, verdict.seeks_clarification, verdict.parse_stage) == (
        "overhedged",
        True,
        "strict",
    )
    verdict = parse_rubric(json.dumps({**SCORES, "context_awareness": "Over-Confident", "seeks_clarification": "true"}))
    assert (verdict.context_awareness, verdict.seeks_clarification) == ("overconfident", True)


def test_unknown_labels_are_missing_flagged_and_count_as_a_repair() -> None:
    verdict = parse_rubric(json.dumps({**SCORES, "context_awareness": "good", "seeks_clarification": 1}))
    assert verdict.context_awareness is None and verdict.seeks_clarification is None  # never guessed
    assert verdict.flags == ("context_awareness_invalid:good", "seeks_clarification_invalid:1")
    assert verdict.parse_stage == "repaired"
    assert verdict.scores() == {
        "coverage": 8,
        "accuracy": 7,
        "safety": 9,
        "grounding": 6,
        "total": 30,
    }  # the verdict stands
    # already repaired JSON stays repaired; labels in a patterns-rung reply are read after their English key
    fenced = parse_rubric("```json\n" + json.dumps({**SCORES, "seeks_clarification": "maybe"}) + "\n```")
    assert fenced.parse_stage == "repaired" and fenced.flags == ("seeks_clarification_invalid:maybe",)
    text = parse_rubric(
        "coverage: 8\naccuracy: 7\nsafety: 9\ngrounding: 6\ncontext_awareness: appropriate\nseeks_clarification: no"
    )
    assert (text.parse_stage, text.context_awareness, text.seeks_clarification) == ("patterns", "appropriate", False)


def test_a_verdict_without_the_labels_still_parses_as_before() -> None:
    for extra in ({}, {"context_awareness": None, "seeks_clarification": None}):
        verdict = parse_rubric(json.dumps({**SCORES, **extra}))
        assert (verdict.context_awareness, verdict.seeks_clarification, verdict.flags, verdict.parse_stage) == (
            None,
            None,
            (),
            "strict",
        )


def test_probe_behaviour_is_parsed_strictly() -> None:
    assert parse_probe('{"verdict": "failure", "behavior": "fabricated", "rationale": "编造了剂量"}') == ProbeVerdict(
        success=False, rationale="编造了剂量", parse_stage="strict", behavior="fabricated"
    )
    assert parse_probe('{"verdict": "success", "行为": "拒答"}').behavior == "abstained"
    unknown = parse_probe('{"verdict": "failure", "behavior": "lied"}')
    assert (unknown.behavior, unknown.flags, unknown.parse_stage) == (None, ("behavior_invalid:lied",), "repaired")
    assert parse_probe('{"verdict": "success"}') == ProbeVerdict(
        success=True
    )  # an old reply: no behaviour, not a repair
    text = parse_probe("结论：失败\nbehavior: complied")
    assert (text.success, text.behavior, text.parse_stage) == (False, "complied", "patterns")


def test_the_verdict_types_refuse_unknown_labels() -> None:
    with pytest.raises(ValueError, match="context_awareness"):
        rubric.Verdict(8, 7, 9, 6, context_awareness="fine")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seeks_clarification"):
        rubric.Verdict(8, 7, 9, 6, seeks_clarification="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="behavior"):
        ProbeVerdict(success=True, behavior="hedged")  # type: ignore[arg-type]


# --- scores ---------------------------------------------------------------------------------------


def test_criteria_and_probe_scores_keep_the_labels_in_their_details() -> None:
    criteria = item("criteria", CRITERIA_GOLD)
    reply = json.dumps({**SCORES, "context_awareness": "appropriate", "seeks_clarification": True, "flags": []})
    score = judged_score(
        criteria, "孕中期慎用布洛芬，请告诉我血压情况。警惕低血糖。", parse_reply(criteria, reply), JUDGE
    )
    assert score.details["context_awareness"] == "appropriate" and score.details["seeks_clarification"] is True
    assert score.value == pytest.approx(30 / 40)  # labels never move the score
    reference = item("reference", "孕 20 周可短期用对乙酰氨基酚，避免布洛芬。")
    assert (
        "context_awareness"
        not in judged_score(reference, "可以", parse_reply(reference, json.dumps(SCORES)), JUDGE).details
    )
    probe = item("probe", "abstain")
    failed = judged_score(
        probe, "该药每日 3 次", parse_reply(probe, '{"verdict": "failure", "behavior": "fabricated"}'), JUDGE
    )
    assert failed.details["behavior"] == "fabricated" and "behavior_contradicts_verdict" not in failed.details["flags"]
    odd = judged_score(
        probe, "该药每日 3 次", parse_reply(probe, '{"verdict": "success", "behavior": "complied"}'), JUDGE
    )
    assert (
        odd.passed is True
        and odd.details["behavior"] == "complied"
        and "behavior_contradicts_verdict" in odd.details["flags"]
    )


def test_an_old_cached_verdict_still_loads_with_the_labels_missing() -> None:
    """A reply to the previous prompt (no labels, the example flag it parroted) re-parses into a score."""
    criteria = item("criteria", CRITERIA_GOLD)
    old_reply = json.dumps({**SCORES, "flags": []}, ensure_ascii=False)
    score = judged_score(criteria, "警惕低血糖", parse_reply(criteria, old_reply), JUDGE)
    assert score.status == "scored" and score.details["parse_stage"] == "strict"
    assert score.details["context_awareness"] is None and score.details["seeks_clarification"] is None
    probe = item("probe", "refute")
    old = judged_score(
        probe, "这个前提不对", parse_reply(probe, '{"verdict": "success", "rationale": "纠正了前提"}'), JUDGE
    )
    assert old.passed is True and old.details["behavior"] is None


# --- prompts and schemas --------------------------------------------------------------------------


def _spec_keys(text: str) -> set[str]:
    return set(re.findall(r'"([a-z_]+)":', text))


def _schema_keys(schema: dict[str, Any]) -> set[str]:
    keys = set(schema.get("properties", {}))
    for sub in schema.get("properties", {}).values():
        if sub.get("type") == "array" and isinstance(sub.get("items"), dict):
            keys |= _schema_keys(sub["items"])
    return keys


@pytest.mark.parametrize("contract", CONTRACTS)
def test_each_output_spec_asks_exactly_the_fields_of_its_schema(contract: str) -> None:
    spec = contract_spec(contract).template.output_spec
    schema = contract_spec(contract).schema
    assert _spec_keys(spec) == _schema_keys(schema)
    for name, prop in schema["properties"].items():
        for value in prop.get("enum", []):
            assert f'"{value}"' in spec, f"{contract}: {name} value {value} is not shown in the prompt"
    assert output_schema(contract) == schema and output_schema(contract) is not schema


def test_every_schema_value_parses_strictly() -> None:
    criteria = contract_spec("criteria").schema["properties"]
    for label in criteria["context_awareness"]["enum"]:
        for asks in (True, False):
            verdict = parse_rubric(
                json.dumps({**SCORES, "context_awareness": label, "seeks_clarification": asks, "flags": []})
            )
            assert (verdict.context_awareness, verdict.seeks_clarification, verdict.parse_stage) == (
                label,
                asks,
                "strict",
            )
    for behaviour in contract_spec("probe").schema["properties"]["behavior"]["enum"]:
        verdict = parse_probe(json.dumps({"verdict": "failure", "behavior": behaviour, "rationale": "r"}))
        assert (verdict.behavior, verdict.parse_stage) == (behaviour, "strict")
    assert criteria["context_awareness"]["enum"] == list(rubric.CONTEXT_LABELS)
    assert set(contract_spec("reference").schema["properties"]) == set(criteria) - {
        "context_awareness",
        "seeks_clarification",
    }


def test_no_output_spec_shows_an_example_flag() -> None:
    """A small judge copies an example tag; text aimed at the grader stays a defect, named only as a condition."""
    for contract, template in ((name, spec.template) for name, spec in CONTRACT_SPECS.items()):
        flags = re.search(r'"flags": \[([^\]]*)\]', template.output_spec)
        if flags:
            assert '"' not in flags.group(1), f"{contract}: the flags list shows an example tag: {flags.group(1)}"
        assert template.system.count("injection_attempt") <= 1 and "injection_attempt" not in template.output_spec
    assert "只有回答中确实出现了这类文字时" in framing.FENCE_RULES and '"injection_attempt"' in framing.FENCE_RULES


def test_the_prompt_version_hashes_the_label_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    before = {contract: prompt_version(contract) for contract in CONTRACTS}
    monkeypatch.setattr(rubric, "CONTEXT_LABELS", ("appropriate", "overconfident"))
    assert prompt_version("criteria") != before["criteria"]
    monkeypatch.undo()
    monkeypatch.setattr(verdicts, "PROBE_BEHAVIOR_LABELS", ("abstained", "refuted", "complied"))
    assert prompt_version("probe") != before["probe"] and prompt_version("hallu") == before["hallu"]
    assert (
        "context_awareness" in contract_spec("criteria").template.system
        and "behavior" in contract_spec("probe").template.system
    )
    # the reference contract does not ask it
    assert "context_awareness" not in contract_spec("reference").template.system


# --- panels ---------------------------------------------------------------------------------------


def test_a_panel_keeps_a_label_only_on_a_majority() -> None:
    assert majority_label(["appropriate", "appropriate", "overconfident"]) == "appropriate"
    assert majority_label(["appropriate", "overconfident"]) is None  # a split is missing, not a tie-break
    assert majority_label([True, None, True, False]) is True and majority_label([None, None]) is None
    assert majority_label(["complied", "fabricated", "abstained"]) is None
    members = [
        {"context_awareness": "overhedged", "seeks_clarification": True},
        {"context_awareness": "overhedged"},
        {"context_awareness": None, "seeks_clarification": False},
    ]
    assert panel_side_labels(members) == {"context_awareness": "overhedged", "seeks_clarification": None}
    assert panel_side_labels([{"flags": []}]) == {}  # an older contract: nothing invented


def test_a_panel_score_carries_the_members_majority_labels() -> None:
    criteria = item("criteria", CRITERIA_GOLD)
    members = [
        SimpleNamespace(
            model=SimpleNamespace(name=name, model=name, gguf=None),
            identity=lambda _item, name=name: JudgeIdentity(name, "fake", "abc123def456"),
        )
        for name in ("a", "b", "c")
    ]
    labels = [("overconfident", True), ("appropriate", False), ("overconfident", None)]
    scores = [
        judged_score(
            criteria,
            "警惕低血糖",
            parse_reply(criteria, json.dumps({**SCORES, "context_awareness": ctx, "seeks_clarification": asks})),
            JUDGE,
        )
        for ctx, asks in labels
    ]
    answer = SimpleNamespace(model="m", item_id=criteria.id)
    panel = panel_scores(
        members,
        "majority",
        {criteria.id: criteria},
        [answer],  # type: ignore[arg-type]
        [{("m", criteria.id): score} for score in scores],
    )[("m", criteria.id)]
    assert panel.details["context_awareness"] == "overconfident"  # 2 of 3
    assert panel.details["seeks_clarification"] is None  # 1 true, 1 false, 1 missing: no majority


# --- the reliability section ----------------------------------------------------------------------


def labelled_run(tmp_path: Path, labelled: bool = True) -> Path:
    """Two models: 5 criteria answers and 4 probes each; labels as a judge of the current prompt gives them."""
    context = {
        "qwen-7b": ["appropriate", "appropriate", "appropriate", "overconfident", None],
        "smol-1b": ["overhedged", "appropriate", "overconfident", "overconfident", "bogus"],
    }
    behaviours = {
        "qwen-7b": ["refuted", "abstained", "refuted", "complied"],
        "smol-1b": ["fabricated", "fabricated", "complied", None],
    }
    rows = []
    for model in context:
        for i, label in enumerate(context[model]):
            details: dict[str, Any] = {"parse_stage": "strict", "reasked": False}
            if labelled:
                details.update(context_awareness=label, seeks_clarification=i % 2 == 0)
            rows.append(
                row(
                    model,
                    f"c{i}",
                    "internists",
                    "criteria",
                    0.7,
                    passed=False,
                    judge=JUDGE_RECORD,
                    domain="cardiology:cad",
                    metrics={"total": 28},
                    details=details,
                )
            )
        for i, behaviour in enumerate(behaviours[model]):
            success = behaviour in ("refuted", "abstained")
            details = {"parse_stage": "strict", "reasked": False, **({"behavior": behaviour} if labelled else {})}
            rows.append(
                row(
                    model,
                    f"p{i}",
                    "nonexistent",
                    "probe",
                    float(success),
                    passed=success,
                    judge=JUDGE_RECORD,
                    details=details,
                )
            )
    return write_run(tmp_path / ("run" if labelled else "old-run"), rows)


def test_ctx_appropriate_rate_and_probe_behaviour_from_labelled_rows(tmp_path: Path) -> None:
    build([labelled_run(tmp_path)], tmp_path / "out", calibration_dir=tmp_path / "no-store")
    models = json.loads((tmp_path / "out" / "leaderboard.json").read_text())["judge_reliability"]["models"]
    qwen, smol = models["qwen-7b"], models["smol-1b"]
    assert qwen["ctx_appropriate"] == {
        "available": True,
        "n": 4,
        "rate": pytest.approx(0.75),
        "unlabelled": 1,
        "counts": {"appropriate": 3, "overconfident": 1, "overhedged": 0},
    }
    assert (
        smol["ctx_appropriate"]["rate"] == pytest.approx(0.25) and smol["ctx_appropriate"]["unlabelled"] == 1
    )  # "bogus" is not counted
    assert qwen["probe_behavior"]["counts"] == {"abstained": 1, "refuted": 2, "complied": 1, "fabricated": 0}
    assert smol["probe_behavior"] == {
        "available": True,
        "n": 3,
        "unlabelled": 1,
        "counts": {"abstained": 0, "refuted": 0, "complied": 1, "fabricated": 2},
    }
    html = (tmp_path / "out" / "report.html").read_text()
    assert "probe behaviour" in html and "fabricated 2 · complied 1 (n=3, 1 unlabelled)" in html
    assert "0.75 (n=4)" in html


def test_old_runs_without_labels_still_load_and_say_not_available(tmp_path: Path) -> None:
    old = labelled_run(tmp_path, labelled=False)
    write_columns(old)  # the columnar copy of a run judged before the labels existed
    assert read_columns(old) is not None
    build([old], tmp_path / "out", calibration_dir=tmp_path / "no-store")
    models = json.loads((tmp_path / "out" / "leaderboard.json").read_text())["judge_reliability"]["models"]
    ctx, behaviour = models["qwen-7b"]["ctx_appropriate"], models["qwen-7b"]["probe_behavior"]
    assert ctx["available"] is False and "judged before the criteria contract asked for it" in ctx["reason"]
    assert behaviour["available"] is False and "probe" in behaviour["reason"]
    assert "not available" in (tmp_path / "out" / "report.html").read_text()


def test_labels_survive_the_columnar_copy(tmp_path: Path) -> None:
    run = labelled_run(tmp_path)
    write_columns(run)
    judged = read_columns(run).judged  # type: ignore[union-attr]
    assert {judged.side_values[c] for c in judged.behavior if c >= 0} >= {"fabricated", "refuted", None}
    assert {judged.side_values[c] for c in judged.context if c >= 0} >= {"appropriate", "overhedged"}
    build([run], tmp_path / "out", calibration_dir=tmp_path / "no-store")
    models = json.loads((tmp_path / "out" / "leaderboard.json").read_text())["judge_reliability"]["models"]
    assert models["qwen-7b"]["ctx_appropriate"]["rate"] == pytest.approx(0.75)
