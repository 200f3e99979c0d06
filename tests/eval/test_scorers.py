"""Judge-free scorers: every gold type on good, bad and messy answers, the status
passthroughs, the registry, and every demo item scored against a hand-written ideal answer."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval.items import GOLD_TYPES, Item, Source
from eval.items.scores import Score
from eval.loaders import load_demo_suite
from eval.scorers import (
    SCORERS,
    NeedsJudge,
    UnknownGoldTypeError,
    register,
    score_answer,
)
from eval.scorers.orchestration_parsing import called_by_name

SOURCE = Source("tests/eval/test_scorers.py", 1)


def make(gold_type: str, gold, question: str = "问题", **fields) -> Item:
    return Item(
        id=f"t/{gold_type}/1",
        suite="t",
        track=fields.pop("track", "exam"),
        task=gold_type,
        gold_type=gold_type,
        gold=gold,
        source=SOURCE,
        question=question,
        **fields,
    )


def scored(item: Item, answer: str | None, status: str = "ok") -> Score:
    result = score_answer(item, answer, status)
    assert isinstance(result, Score) and result.status == "scored", result
    assert "parsed" in result.details and isinstance(result.details["notes"], list)
    return result


@pytest.fixture(scope="module")
def demo() -> dict[str, Item]:
    return {item.local_id: item for item in load_demo_suite().items}


# ---------------------------------------------------------------------------------------------
# Registry and status passthrough


def test_every_gold_type_has_exactly_one_scorer():
    assert set(SCORERS) == set(GOLD_TYPES)
    with pytest.raises(ValueError, match="already has a scorer"):
        register("single_choice")(lambda item, answer: None)


def test_unknown_gold_type_is_a_clear_error(monkeypatch):
    item = make("cloze", "茯苓")
    monkeypatch.delitem(SCORERS, "cloze")
    with pytest.raises(UnknownGoldTypeError, match=r"no scorer for gold type 'cloze'.*@register"):
        score_answer(item, "茯苓", "ok")


def test_bad_status_is_rejected():
    with pytest.raises(ValueError, match="answer status"):
        score_answer(make("cloze", "茯苓"), "茯苓", "timeout")


@pytest.mark.parametrize("gold_type", ["single_choice", "cloze", "reference", "routing"])
def test_infra_error_is_not_a_zero(gold_type, demo):
    item = next(i for i in demo.values() if i.gold_type == gold_type)
    result = score_answer(item, None, "infra_error")
    assert isinstance(result, Score) and result.status == "infra_error" and result.value is None


def test_unscorable_item_passes_through():
    item = make("probe", "abstain", "x", track="orchestration", scorable=False, skip_reason="validity: unverified")
    result = score_answer(item, "不知道", "ok")
    assert result.status == "unscorable" and result.value is None and result.details["reason"] == "validity: unverified"


@pytest.mark.parametrize("gold_type", ["reference", "criteria", "probe"])
def test_judged_types_need_the_judge(gold_type, demo):
    item = next(i for i in demo.values() if i.gold_type == gold_type)
    assert score_answer(item, "一些回答", "ok") == NeedsJudge(gold_type)
    assert score_answer(item, "", "error") == NeedsJudge(gold_type)


def test_error_status_is_scored_and_noted(demo):
    result = scored(demo["sc_001"], "答案：D", status="error")
    assert result.value == 1.0 and any("status 'error'" in note for note in result.details["notes"])


# ---------------------------------------------------------------------------------------------
# Single and multi choice


@pytest.mark.parametrize(
    "answer",
    [
        "D",
        "Ｄ",
        "d",
        "D. 依那普利",
        "（D）",
        "**答案：D**",
        "答案：D",
        "正确答案是 D",
        "故选D。",
        "Answer: D",
        "The answer is (D).",
        "$\\boxed{D}$",
        "依那普利",
        "分析：A拉贝洛尔、B硝苯地平、C甲基多巴妊娠期均可使用；ACE抑制剂有致畸性。\n答案：D",
        "<think>A可以用，B可以用，C也可以。</think>\n\nD",
        "先看A，再看B。一开始我以为答案是A。\n\n仔细想想，答案：Ｄ（依那普利）",
        "### 解析\n- A 可用\n- C 可用\n\n**最终答案：D**",
    ],
)
def test_single_choice_good(answer, demo):
    assert scored(demo["sc_001"], answer).value == 1.0, answer


@pytest.mark.parametrize("answer", ["A", "答案：B", "拉贝洛尔", "选C", "I think the answer is A."])
def test_single_choice_wrong(answer, demo):
    result = scored(demo["sc_001"], answer)
    assert result.value == 0.0 and result.passed is False


@pytest.mark.parametrize("answer", ["答案：A和D", "A、D", "AD", "答案：B或D"])
def test_single_choice_naming_several_is_ambiguous(answer, demo):
    result = scored(demo["sc_001"], answer)
    assert result.value == 0.0 and result.details["ambiguous"] is True and result.details["parsed"] is None


ECHO = "A. 拉贝洛尔\nB. 硝苯地平\nC. 甲基多巴\nD.依那普利"  # smollm2's answer to sc_001 in the default run


@pytest.mark.parametrize(
    "answer", [ECHO, f"请看选项：\n{ECHO}", f"{ECHO}\n", "Ａ．拉贝洛尔\nＢ．硝苯地平\nＣ．甲基多巴\nＤ．依那普利"]
)
def test_repeating_the_option_list_chooses_nothing(answer, demo):
    """Before, the last echoed line ("D.依那普利") was read as the answer and scored 1.0."""
    result = scored(demo["sc_001"], answer)
    assert result.value == 0.0 and result.details["parsed"] is None
    assert "the option list repeated in the answer was left out" in result.details["notes"]


@pytest.mark.parametrize(
    "answer", [f"{ECHO}\n答案：D", f"D\n{ECHO}", "D. 依那普利", "A. 拉贝洛尔\nD. 依那普利\n答案：D"]
)
def test_an_answer_beside_or_without_a_full_echo_still_counts(answer, demo):
    assert scored(demo["sc_001"], answer).value == 1.0, answer


def test_multi_choice_echo_is_left_out_too(demo):
    options = demo["mc_001"].options
    echo = "\n".join(f"{label}. {text}" for label, text in options)
    assert scored(demo["mc_001"], echo).details["parsed"] == []
    assert scored(demo["mc_001"], f"{echo}\n答案：ABCE").value == 1.0


def test_single_choice_letters_inside_option_texts_are_not_choices():
    item = make("single_choice", "B", "首选？", options=[["A", "ACE抑制剂"], ["B", "β受体阻滞剂"]])
    assert scored(item, "答案：B（不选ACE抑制剂）").value == 1.0
    assert scored(item, "ACEI类不合适，选B").value == 1.0


@pytest.mark.parametrize(
    "answer",
    [
        "A、B、C、E",
        "ABCE",
        "A,B,C,E",
        "答案：A、B、C和E",
        "Answer: A, B, C, E",
        "Ａ，Ｂ，Ｃ，Ｅ",
        "分析……D不是禁忌证。\n\n**答案：ABCE**",
        "选ABCE",
    ],
)
def test_multi_choice_exact(answer, demo):
    result = scored(demo["mc_001"], answer)
    assert result.value == 1.0 and result.metrics["f1"] == 1.0, answer


def test_multi_choice_partial_and_wrong(demo):
    partial = scored(demo["mc_001"], "答案：A和C")
    assert partial.value == 0.0 and partial.details["parsed"] == ["A", "C"]
    assert partial.metrics["precision"] == 1.0 and partial.metrics["recall"] == 0.5
    extra = scored(demo["mc_002"], "答案：ACDE")
    assert extra.value == 0.0 and extra.metrics["precision"] == 0.75 and extra.metrics["recall"] == 1.0


def test_multi_choice_by_option_text(demo):
    assert scored(demo["mc_003"], "与甘草相反的是甘遂、海藻、芫花。").value == 1.0


# ---------------------------------------------------------------------------------------------
# Cloze, open labels, classification


def test_cloze(demo):
    assert scored(demo["cz_001"], "60~100").value == 1.0
    assert scored(demo["cz_001"], "正常成人安静时心率为60～100次/分。").value == 1.0
    assert scored(demo["cz_002"], "**7.0**").value == 1.0
    assert scored(demo["cz_002"], "空腹血浆葡萄糖≥7.0 mmol/L").value == 1.0
    assert scored(demo["cz_003"], "切").value == 1.0  # either acceptable filler
    assert scored(demo["cz_004"], "答案：茯苓").passed is True
    near = scored(demo["cz_004"], "白茯苓")
    assert near.passed is True and 0.5 < near.value < 1.0
    wrong = scored(demo["cz_004"], "甘草")
    assert wrong.value == 0.0 and wrong.passed is False


def test_open_label(demo):
    item = demo["ol_001"]
    assert scored(item, "脾胃虚寒证").value == 1.0
    assert scored(item, "脾胃虚寒").value == 1.0  # DTR-F1 tolerates a missing 证
    assert scored(item, "根据胃脘隐痛、喜温喜按、舌淡苔白，辨证为：脾胃虚寒证。治宜温中健脾。").value == 1.0
    two = scored(item, "证型：脾胃虚寒证、脾胃气虚证")
    assert two.details["parsed"] == ["脾胃虚寒证", "脾胃气虚证"] and two.metrics["precision"] == 0.5
    assert scored(item, "肝胃不和证").value == 0.0
    not_split = make("open_label", ["肝胃不和证"], track="tcm")
    result = scored(not_split, "肝胃不和证和脾虚证")
    assert result.details["parsed"] == ["肝胃不和证", "脾虚证"] and result.metrics["tp"] == 1


def test_classification(demo):
    item = demo["cl_001"]
    assert scored(item, "风寒束表证").value == 1.0
    assert scored(item, "辨证分析：恶寒重、无汗、脉浮紧，不是风热犯表证。\n答案：风寒束表证").value == 1.0
    assert scored(item, "风寒束表").value == 1.0  # char-F1 ≥ 0.7
    wrong = scored(item, "风热犯表证")
    assert wrong.value == 0.0 and wrong.details["parsed"] == "风热犯表证"
    none = scored(item, "建议就医。")
    assert none.value == 0.0 and none.details["parsed"] is None


COLD_LABELS = ["风寒束表证", "风热犯表证", "暑湿伤表证", "气虚外感证"]


@pytest.mark.parametrize(
    "answer",
    [
        # gemma3-270m on cl_001 and cl_004 (demo run, cut at its budget): lists, not answers
        "\n证型名称：风寒束表证\n证型名称：风热犯表证\n证型名称：暑湿伤表证\n证",
        "\n1. 寒湿犯表证\n2. 暑湿伤表证\n3. 气虚外感证\n4. 风热",
        "风寒束表证或风热犯表证",
        "风寒束表证、风热犯表证、暑湿伤表证、气虚外感证",
        "答案：风寒束表证/风热犯表证",
    ],
)
def test_classification_enumeration_or_hedge_chooses_nothing(demo, answer):
    """An answer must commit to one label: naming several is ambiguous and scores 0, whichever
    label is the gold (the old "longest, then last named" credited a list that ended on it)."""
    for local_id in ("cl_001", "cl_002", "cl_003", "cl_004"):
        result = scored(demo[local_id], answer)
        assert result.value == 0.0 and result.details["parsed"] is None, (local_id, result.details)
        assert any(note.startswith("ambiguous: names several labels") for note in result.details["notes"])


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("辨证为风寒束表证，需与风热犯表证、暑湿伤表证鉴别。", "风寒束表证"),  # differential, not a second answer
        ("排除风热犯表证，诊断为风寒束表证", "风寒束表证"),  # ruled out
        ("恶寒重而发热轻，并非风热犯表证，当属风寒束表证", "风寒束表证"),
        ("证型：风寒束表证。治宜辛温解表，与风热犯表证不同。", "风寒束表证"),  # explanation after 。
        ("风寒束表证、风热犯表证、暑湿伤表证、气虚外感证\n答案：风热犯表证", "风热犯表证"),  # echo, then an answer
        ("这是非常像风寒束表证的表现", "风寒束表证"),  # 非常 is not a negation
    ],
)
def test_classification_reads_one_committed_label(answer, expected):
    item = make("classification", "风寒束表证", track="tcm", meta={"labels": COLD_LABELS})
    assert scored(item, answer).details["parsed"] == expected


def test_classification_longer_label_hides_the_shorter_inside_it():
    """TCM-SD's label set nests names (气虚证 inside 气虚血瘀证): the whole mention is the label named."""
    item = make("classification", "气虚血瘀证", track="tcm", meta={"labels": ["气虚证", "气虚血瘀证", "血瘀证"]})
    assert scored(item, "辨证：气虚血瘀证").value == 1.0
    assert scored(item, "气虚证").details["parsed"] == "气虚证"
    assert scored(item, "气虚证，血瘀证").details["parsed"] is None


@settings(max_examples=60, deadline=None)
@given(
    order=st.permutations(COLD_LABELS),
    k=st.integers(2, 4),
    joiner=st.sampled_from(["、", "，", "\n", "或", "\n- ", "；也可能是", " / "]),
)
def test_classification_listing_labels_never_scores(order, k, joiner):
    """Property: an answer that names k ≥ 2 distinct labels scores 0 against every gold."""
    answer = joiner.join(order[:k])
    for gold in COLD_LABELS:
        item = make("classification", gold, track="tcm", meta={"labels": COLD_LABELS})
        assert scored(item, answer).value == 0.0


# ---------------------------------------------------------------------------------------------
# Extraction and doses


def test_extraction(demo):
    item = demo["ex_001"]
    messy = (
        "好的，抽取结果如下：\n\n- **症状**：咳嗽、发热、咽痛\n- **药物**：对乙酰氨基酚\n\n说明：以上为文本中全部实体。"
    )
    result = scored(item, messy)
    assert result.value == 1.0 and not any(e["type"] == "说明" for e in result.details["parsed"])
    assert (
        scored(
            item,
            '[{"entity": "咳嗽", "type": "症状"}, {"entity": "发热", "type": "症状"}, '
            '{"entity": "咽痛", "type": "症状"}, {"entity": "对乙酰氨基酚", "type": "药物"}]',
        ).value
        == 1.0
    )
    assert scored(item, "咳嗽（症状）、发热（症状）、咽痛（症状）、对乙酰氨基酚（药物）").value == 1.0
    partial = scored(item, "症状：咳嗽\n症状：头痛")
    assert partial.metrics["tp"] == 1 and partial.metrics["fp"] == 1 and partial.metrics["fn"] == 3


@pytest.mark.parametrize(
    "answer",
    [
        "麻黄 9g\n桂枝 6g\n杏仁 6g\n炙甘草 3g",
        "麻黄9克，桂枝6克，杏仁6克，炙甘草3克。",
        "| 药名 | 剂量 |\n|---|---|\n| 麻黄 | 9 g |\n| 桂枝 | 6 g |\n| 杏仁 | 6 g |\n| 炙甘草 | 3 g |",
        "1. 麻黄（去节）：９ｇ\n2. 桂枝：6 g\n3. 杏仁、炙甘草分别是6g、3g",
        "麻黄汤为辛温解表之剂，麻黄用量可在6-12g之间。\n答案：\n麻黄 9g\n桂枝 6g\n杏仁 6g\n炙甘草 3g",
    ],
)
def test_doses_formats(answer, demo):
    result = scored(demo["qt_001"], answer)
    assert result.details["parsed"]["麻黄"] == 9.0 and result.details["parsed"]["桂枝"] == 6.0
    if "分别" not in answer:
        assert result.value == pytest.approx(1.0) and result.passed and result.metrics["mae"] == 0.0


def test_doses_each_and_wrong(demo):
    each = scored(demo["qt_002"], "人参、白术、茯苓各9g，炙甘草6g")
    assert each.value == pytest.approx(1.0) and each.metrics["shared"] == 4
    off = scored(demo["qt_003"], "黄连 6g\n吴茱萸 6g")
    assert off.passed is False and off.metrics["mae"] == pytest.approx(7.5)


# ---------------------------------------------------------------------------------------------
# CHIP case

CHIP_IDEAL = {
    "chip_001": "胃脘胀痛;痛连两胁;嗳气频作;情志不畅加重;纳差;脉弦@A;B@A@临证体会：情志不畅，肝气郁结，横逆犯胃，"
    "胃失和降，故胃脘胀痛连胁、嗳气频作。辨证：肝胃不和。",
    "chip_002": "心悸气短;动则尤甚;神疲乏力;自汗;胸闷刺痛;唇甲青紫;舌淡暗有瘀点;脉细涩@A;C@B@临证体会：年老心气亏虚，"
    "无力推动血行，瘀血阻络，故心悸气短、动则尤甚、胸闷刺痛、唇甲青紫。辨证：气虚血瘀。",
}


def test_chip_case_sections_and_partial(demo):
    item = demo["chip_001"]
    sections = (
        "（1）临床信息：胃脘胀痛、痛连两胁、嗳气频作、情志不畅加重、纳差、脉弦\n"
        "（2）病机：A:肝气郁结；B:胃失和降\n（3）证候：肝胃不和\n"
        "（4）临证体会：情志不畅，肝气郁结，横逆犯胃，胃失和降，故胃脘胀痛连胁、嗳气频作。辨证：肝胃不和。"
    )
    result = scored(item, sections)
    assert result.metrics["p1"] == 1.0 and result.metrics["p2"] == 1.0 and result.metrics["p3"] == 1.0
    assert result.value > 0.95
    partial = scored(item, "答案：胃脘胀痛;纳差@A;C@A;B@肝胃不和")
    assert partial.metrics["p1"] == pytest.approx(2 / 6) and partial.metrics["p2"] == pytest.approx(1 / 3)
    assert partial.metrics["p3"] == pytest.approx(1 / 2) and 0 < partial.value < 0.5
    echoed = scored(item, "chip_001@" + CHIP_IDEAL["chip_001"])
    assert echoed.value == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------------
# Routing

MULTI_WORD = [
    ["A", "infectious:skin_soft_tissue"],
    ["B", "infectious:skin"],
    ["C", "womens_health:womens_health"],
    ["D", "substance_use:alcohol_drugs"],
    ["E", "endocrine:pituitary"],
]


@pytest.mark.parametrize(
    "answer, expected",
    [
        ("infectious:skin_soft_tissue", "infectious:skin_soft_tissue"),
        ("答案：infectious：skin_soft_tissue", "infectious:skin_soft_tissue"),
        ("**Answer:** `infectious: skin soft tissue`", "infectious:skin_soft_tissue"),
        ("INFECTIOUS:SKIN_SOFT_TISSUE", "infectious:skin_soft_tissue"),
        ("infectious:skin", "infectious:skin"),
        ("A", "infectious:skin_soft_tissue"),
        ("答案：Ｃ", "womens_health:womens_health"),
        ("womens_health:womens_health", "womens_health:womens_health"),
        ("考虑 endocrine:pituitary？不对。\n最终答案：substance_use:alcohol_drugs", "substance_use:alcohol_drugs"),
        ("先想到 infectious:skin，后来认为应是 infectious:skin_soft_tissue", "infectious:skin_soft_tissue"),
    ],
)
def test_routing_multi_word_slugs(answer, expected):
    item = make("routing", expected, "选择专科", track="orchestration", options=MULTI_WORD)
    result = scored(item, answer)
    assert result.details["parsed"] == expected and result.value == 1.0, result.details


def test_routing_wrong_and_without_options(demo):
    wrong = scored(demo["rt_005"], "答案：B")
    assert wrong.value == 0.0 and wrong.details["parsed"] == "womens_health:womens_health"
    free = make("routing", "infectious:skin_soft_tissue", "专科？", track="orchestration")
    assert scored(free, "建议就诊 infectious:skin_soft_tissue 专科").value == 1.0
    assert scored(free, "infectious:skin").value == 0.0


# ---------------------------------------------------------------------------------------------
# Tool decision


@pytest.mark.parametrize(
    "answer",
    [
        'query_lab_result(patient_id="A1023", test_name="血钾")',
        "query_lab_result(A1023, 血钾)",
        '```tool\nquery_lab_result(patient_id="A1023", test_name="血钾")\n```',
        '{"name": "query_lab_result", "arguments": {"patient_id": "A1023", "test_name": "血钾"}}',
        '<tool_call>\n{"name": "query_lab_result", "arguments": {"patient_id": "A1023"}}\n</tool_call>',
        '好的，我来查询。\nquery_lab_result（patient_id="A1023", test_name="血钾"）',
        '<think>需要查系统。</think>\nquery_lab_result(patient_id="A1023", test_name="血钾")',
    ],
)
def test_tool_call_detected(answer, demo):
    assert scored(demo["td_001"], answer).details["parsed"] == "call"
    assert scored(demo["td_001"], answer).value == 1.0
    assert scored(demo["td_003"], answer).value == 0.0  # calling when not needed costs as much


@pytest.mark.parametrize(
    "answer", ["成人血钾正常范围约为3.5～5.5 mmol/L。", "**3.5-5.5 mmol/L**，无需调用 query_lab_result 工具。"]
)
def test_direct_answer_detected(answer, demo):
    assert scored(demo["td_003"], answer).details["parsed"] == "direct"
    assert scored(demo["td_003"], answer).value == 1.0
    assert scored(demo["td_001"], answer).value == 0.0


def test_tool_call_for_api_description_items():
    question = (
        "API 描述：CreateImagingExamOrder（影像检查申请）描述：开具影像检查。输入参数：patient_id (string，必填)："
        "患者ID。exam_type (string，必填)：检查类型。用户问题：给住院号 ZY01 的病人开个胸部CT。"
    )
    item = make("tool_decision", "call", question, track="orchestration")
    assert scored(item, '```json\n{"patient_id": "ZY01", "exam_type": "胸部CT"}\n```').value == 1.0
    assert scored(item, "CreateImagingExamOrder（patient_id: ZY01, exam_type: 胸部CT）").value == 1.0
    assert scored(item, "胸部CT需要空腹吗？一般不需要。").value == 0.0


_CALL_TEXT = st.text(alphabet="ab_.( \t1中（", max_size=14)


@settings(max_examples=300, deadline=None)
@given(name=st.text(alphabet="ab_.1中", max_size=3), text=_CALL_TEXT)
def test_called_by_name_is_the_regex_it_replaced(name, text):
    """Property: the str-based check agrees with ``(?<![\\w.])NAME\\s*\\(`` on any name and text."""
    assert called_by_name(name, text) == bool(re.search(rf"(?<![\w.]){re.escape(name)}\s*\(", text))


# ---------------------------------------------------------------------------------------------
# True / false

TRUE_ANSWERS = [
    "对",
    "对。",
    "正确",
    "是",
    "是的",
    "√",
    "✓",
    "T",
    "Ｔ",
    "true",
    "True.",
    "yes",
    "答案：对",
    "**答案：正确**",
    "Answer: True",
    "$\\boxed{T}$",
    "对，成人静息心率正常范围是60～100次/分。",
    "这个说法正确。",
    "<think>想想……可能不对？</think>\n对",
    "该说法是对的，正确。",
]
FALSE_ANSWERS = [
    "错",
    "错。",
    "错误",
    "不正确",
    "不对",
    "否",
    "不是",
    "×",
    "✗",
    "F",
    "false",
    "No.",
    "答案：错",
    "答案是：错误",
    "错误。正确的说法是：ACE抑制剂妊娠期禁用。",
    "这个说法是错误的。",
    "该说法不正确。",
    "这个说法是否正确？我认为错误。",
    "The statement is false.",
    "不错的问题。答案：错",
]


@pytest.mark.parametrize("answer", TRUE_ANSWERS)
def test_true_false_reads_true(answer, demo):
    assert scored(demo["tf_001"], answer).value == 1.0, answer
    assert scored(demo["tf_002"], answer).value == 0.0, answer


@pytest.mark.parametrize("answer", FALSE_ANSWERS)
def test_true_false_reads_false(answer, demo):
    result = scored(demo["tf_002"], answer)
    assert result.value == 1.0 and result.details["parsed"] == "false", (answer, result.details)
    assert scored(demo["tf_001"], answer).value == 0.0, answer


@pytest.mark.parametrize(
    "answer", ["对于这个问题，我无法判断。", "很难说", "", "The answer depends.", "是否需要更多信息？"]
)
def test_true_false_without_a_verdict_scores_zero(answer, demo):
    for local_id in ("tf_001", "tf_002"):
        result = scored(demo[local_id], answer)
        assert result.value == 0.0 and result.details["parsed"] is None, (answer, result.details)


def test_true_false_naming_both_is_ambiguous(demo):
    result = scored(demo["tf_001"], "这个说法有正确的部分，也有错误的部分。")
    assert result.value == 0.0 and result.details["ambiguous"] is True and result.details["parsed"] is None


def test_true_false_gold_is_true_or_false():
    with pytest.raises(ValueError, match=r"true_false gold must be one of \['true', 'false'\]"):
        make("true_false", "对")


@settings(max_examples=300, deadline=None)
@given(answer=st.text(), gold=st.sampled_from(["true", "false"]))
def test_true_false_is_accuracy(answer, gold):
    result = scored(make("true_false", gold), answer)
    assert result.value in (0.0, 1.0) and result.passed is (result.value == 1.0)
    assert result.metrics == {"accuracy": result.value} and result.details["parsed"] in ("true", "false", None)
    assert result.value == float(result.details["parsed"] == gold)


@settings(max_examples=200, deadline=None)
@given(reasoning=st.text(), gold=st.sampled_from(["true", "false"]), word=st.sampled_from([0, 1, 2, 3]))
def test_true_false_explicit_answer_wins(reasoning, gold, word):
    verdict = {"true": ["对", "正确", "√", "True"], "false": ["错", "错误", "×", "False"]}[gold][word]
    assert scored(make("true_false", gold), f"{reasoning}\n答案：{verdict}").value == 1.0


# ---------------------------------------------------------------------------------------------
# Every demo item: ideal answer → full marks; empty answer → a scored 0

IDEAL = {
    "sc_001": "D",
    "sc_002": "答案：C",
    "sc_003": "A. 发汗解表，宣肺平喘",
    "sc_004": "C",
    "mc_001": "A、B、C、E",
    "mc_002": "ACE",
    "mc_003": "答案：A,B,C",
    "mc_004": "A和B",
    "cz_001": "60～100",
    "cz_002": "7.0",
    "cz_003": "切诊",
    "cz_004": "茯苓",
    "ex_001": "症状：咳嗽\n症状：发热\n药物：对乙酰氨基酚\n症状：咽痛",
    "ex_002": "疾病：高血压\n检查：心电图\n疾病：心房颤动\n检查：心脏超声",
    "ex_003": "舌象：舌淡胖有齿痕\n舌象：苔白腻\n脉象：脉濡缓",
    "td_001": 'query_lab_result(patient_id="A1023", test_name="血钾")',
    "td_002": 'book_clinic(department="心内科", date="明天上午")',
    "td_003": "成人血钾正常范围一般为3.5～5.5 mmol/L。",
    "td_004": "一般体温超过38.5℃且持续不退，或伴有精神差、抽搐、呼吸困难等情况，应及时就医。",
    "rt_001": "endocrine:diabetes_t2",
    "rt_002": "cardiology:cad",
    "rt_003": "A",
    "rt_004": "respiratory:copd",
    "rt_005": "infectious:skin_soft_tissue",
    "ol_001": "脾胃虚寒证",
    "ol_002": "肝阳上亢证",
    "ol_003": "心脾两虚证",
    "ol_004": "痰热壅肺证",
    "qt_001": "麻黄 9g\n桂枝 6g\n杏仁 6g\n炙甘草 3g",
    "qt_002": "人参 9g\n白术 9g\n茯苓 9g\n炙甘草 6g",
    "qt_003": "黄连 18g\n吴茱萸 3g",
    "cl_001": "风寒束表证",
    "cl_002": "风热犯表证",
    "cl_003": "暑湿伤表证",
    "cl_004": "气虚外感证",
    "tf_001": "对",
    "tf_002": "错",
    "tf_003": "答案：错误",
    "tf_004": "正确",
    "tf_005": "√",
    "sc_005": "C",
    "mc_005": "A、B、C、E",
    "cz_005": "3.9～6.1",
    "ex_004": "症状：头痛\n症状：恶心\n药物：氨氯地平",
    "ex_005": "症状：腹泻\n症状：呕吐\n药物：口服补液盐\n药物：蒙脱石散",
    "td_005": "体温达到39.1℃及以上一般称为高热。",
    "ol_005": "风热犯肺证",
    "qt_004": "黄芪 30g\n当归 6g",
    "qt_005": "麻黄 9g\n杏仁 9g\n石膏 18g\n炙甘草 6g",
    "cl_005": "风热犯表证",
    **CHIP_IDEAL,
}
JUDGED = {"reference", "criteria", "probe"}


def test_ideal_answers_cover_every_deterministic_demo_item(demo):
    deterministic = {local_id for local_id, item in demo.items() if item.gold_type not in JUDGED}
    assert deterministic == set(IDEAL)


@pytest.mark.parametrize("local_id", sorted(IDEAL))
def test_demo_ideal_answer_scores_full_marks(local_id, demo):
    result = scored(demo[local_id], IDEAL[local_id])
    assert result.value == pytest.approx(1.0) and result.passed is True, (local_id, result.details)


@pytest.mark.parametrize("local_id", sorted(IDEAL))
@pytest.mark.parametrize("answer, status", [("", "error"), (None, "error"), ("", "ok")])
def test_demo_empty_answer_scores_zero(local_id, answer, status, demo):
    result = scored(demo[local_id], answer, status)
    assert result.value == 0.0 and result.passed is False, (local_id, result.details)


def test_classification_rows_carry_labels_for_macro_f1(demo):
    """routing ranks classification buckets by macro-F1 from these details (routing.load.runs._label)."""
    item = demo["cl_001"]
    right, wrong = scored(item, "风寒束表证"), scored(item, "风热犯表证")
    assert right.details["gold_label"] == wrong.details["gold_label"] == "风寒束表证"
    assert (right.details["predicted_label"], wrong.details["predicted_label"]) == ("风寒束表证", "风热犯表证")
    assert list(right.details["labels"]) == list(item.meta["labels"])
