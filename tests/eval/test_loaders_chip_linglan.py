"""CHIP TCM case and LingLan loaders: golds, question order, options, unlabelled cases, path:line:field
errors, shape recognition, and ideal answers scoring 1.0 through ``score_answer``. Fixtures are
small original cases written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.items import Item
from eval.items.scores import Score
from eval.loaders import ItemFormatError, choose_loader, load_items
from eval.loaders.formats import chip, linglan
from eval.scorers import score_answer

MECHANISM_OPTIONS = (
    "A:脾胃虚寒;B:肝郁化火;C:瘀血阻络;D:寒邪客胃;E:胃热炽盛;F:饮食停滞;G:胃阴亏虚;H:湿浊中阻;I:肾阳不足;J:心血亏虚"
)
SYNDROME_OPTIONS = (
    "A：脾胃虚寒；B：寒邪客胃；C：肝胃郁热；D：胃阴不足；E：瘀阻胃络；"
    "F：饮食伤胃；G：湿热中阻；H：肝胃不和；I：心脾两虚；J：脾虚湿盛"
)
CLINICAL_INFO = ["胃脘灼热疼痛", "饥饿时加重", "口干口苦", "心烦易怒", "大便干结", "舌红", "苔黄", "脉弦数"]
SUMMARY = "临证体会：情志不遂，肝郁化火，横逆犯胃，胃热炽盛，故胃脘灼痛、口干口苦、心烦易怒。辨证：肝胃郁热。"

LABELLED = {
    "案例编号": "案例1",
    "临床资料": (
        "张某，男，38岁。主诉及病史：反复胃脘灼热疼痛半年，饥饿时加重，口干口苦，心烦易怒，大便干结。"
        "诊查：舌红，苔黄，脉弦数。"
    ),
    "信息识别抽取能力：临床信息": ";".join(CLINICAL_INFO),
    "信息分析推断能力：病机": "肝郁化火;胃热炽盛",
    "病机答案": "B；E",
    "病机选项": MECHANISM_OPTIONS,
    "信息分析推断能力：证候": "肝胃郁热",
    "证候答案": "C",
    "证候选项": SYNDROME_OPTIONS,
    "信息解释总结能力：临证体会和辨证结果": SUMMARY,
}
UNLABELLED = {
    "案例编号": "案例2",
    "临床资料": (
        "李某，女，56岁。主诉及病史：夜寐不安三月，多梦易醒，心悸健忘，神疲食少。诊查：面色少华，舌淡，脉细弱。"
    ),
    "信息识别抽取能力：临床信息": "",
    "病机答案": "",
    "病机选项": (
        "A:心血亏虚;B:脾气虚弱;C:痰热扰心;D:肝火上炎;E:心肾不交;F:胆气虚怯;G:瘀血内阻;H:胃气失和;I:阴虚火旺;J:肝郁气滞"
    ),
    "证候答案": "",
    "证候选项": (
        "A:心脾两虚;B:痰热扰心;C:肝火扰心;D:心肾不交;E:心胆气虚;F:胃气失和;G:瘀血内阻;H:阴虚火旺;I:肝郁血虚;J:痰湿内阻"
    ),
}
CHIP_IDEAL = ";".join(CLINICAL_INFO) + "@B;E@C@" + SUMMARY


def write_lines(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def scored(item: Item, answer: str) -> Score:
    result = score_answer(item, answer, "ok")
    assert isinstance(result, Score) and result.status == "scored", result
    return result


# ---------------------------------------------------------------------------------------------
# CHIP


@pytest.fixture
def chip_items(tmp_path) -> list[Item]:
    return list(load_items([write_lines(tmp_path / "chip" / "cases.jsonl", [LABELLED, UNLABELLED])]).items)


def test_chip_labelled_case_gold_options_and_question_order(chip_items):
    item = chip_items[0]
    assert (item.id, item.suite, item.task, item.track, item.gold_type) == (
        "chip/chip_tcm/案例1",
        "chip",
        "chip_tcm",
        "tcm",
        "tcm_case",
    )
    assert item.scorable and item.source.line == 1
    assert item.gold["clinical_info"] == tuple(CLINICAL_INFO)
    assert item.gold["mechanisms"] == ("B", "E") and item.gold["syndromes"] == (
        "C",
    )  # "B；E" split on the full-width ；
    assert item.gold["summary"] == SUMMARY
    mechanisms, syndromes = item.meta["mechanism_options"], item.meta["syndrome_options"]
    assert list(mechanisms) == list("ABCDEFGHIJ") and mechanisms["B"] == "肝郁化火" and mechanisms["J"] == "心血亏虚"
    assert list(syndromes) == list("ABCDEFGHIJ") and syndromes["C"] == "肝胃郁热"  # full-width ： and ； parsed
    assert item.meta["mechanism_names"] == ("肝郁化火", "胃热炽盛") and item.meta["syndrome_names"] == ("肝胃郁热",)
    question = item.question
    assert LABELLED["临床资料"] in question
    marks = [question.index(mark) for mark in ("（1）", "（2）", "（3）", "（4）", "@")]
    assert marks == sorted(marks)
    assert marks[1] < question.index("A:脾胃虚寒;B:肝郁化火") < question.index("J:心血亏虚") < marks[2]
    assert marks[2] < question.index("C:肝胃郁热") < marks[3]


def test_chip_unlabelled_case_is_listed_not_scored(tmp_path, chip_items):
    item = chip_items[1]
    assert item.id == "chip/chip_tcm/案例2" and item.source.line == 2
    assert not item.scorable and "unlabelled" in item.skip_reason and item.meta["unlabelled"]
    assert item.meta["syndrome_options"]["E"] == "心胆气虚"
    result = load_items([tmp_path / "chip"])
    assert [s.id for s in result.skipped] == ["chip/chip_tcm/案例2"]
    assert score_answer(item, CHIP_IDEAL, "ok").status == "unscorable"


def test_chip_ideal_answer_scores_one(chip_items):
    result = scored(chip_items[0], CHIP_IDEAL)
    assert result.value == pytest.approx(1.0)
    numbered = "(1) " + "；".join(CLINICAL_INFO) + "\n(2) B、E\n(3) C\n(4) " + SUMMARY
    assert scored(chip_items[0], numbered).value == pytest.approx(1.0)
    wrong = scored(chip_items[0], ";".join(CLINICAL_INFO) + "@A;B@D@" + SUMMARY)
    assert wrong.value == pytest.approx(0.2 + 0.3 * (1 / 3) + 0.1)


def test_chip_json_list_lines_and_manifest(tmp_path):
    path = tmp_path / "chip-b" / "test_a.json"
    path.parent.mkdir()
    path.write_text(json.dumps([LABELLED, UNLABELLED], ensure_ascii=False, indent=2), encoding="utf-8")
    items = list(chip.LOADER.load(path, "chip-b"))
    starts = [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if line.strip() == "{"]
    assert [i.source.line for i in items] == starts == [2, 14]
    assert items[0].gold["mechanisms"] == ("B", "E")
    # A JSON list is read through the registry when a manifest names the format.
    (path.parent / "medpool-suite.yaml").write_text('suite: chip-b\nfiles:\n  "*.json": chip\n', encoding="utf-8")
    assert [i.id for i in load_items([path.parent]).items] == ["chip-b/chip_tcm/案例1", "chip-b/chip_tcm/案例2"]


def test_chip_broken_cases_name_path_line_and_field(tmp_path):
    missing = {k: v for k, v in LABELLED.items() if k != "病机选项"}
    path = write_lines(tmp_path / "c" / "broken.jsonl", [LABELLED, missing])
    with pytest.raises(ItemFormatError, match="field '病机选项': missing") as error:
        load_items([path])
    assert (error.value.path, error.value.line, error.value.field) == (str(path), 2, "病机选项")
    assert f"{path}:2:" in str(error.value)

    partial = {**LABELLED, "证候答案": ""}
    with pytest.raises(ItemFormatError, match="field '证候答案': missing while") as error:
        load_items([write_lines(tmp_path / "d" / "partial.jsonl", [partial])])
    with pytest.raises(ItemFormatError, match=r"field '病机答案': letters \['K'\] are not among the options"):
        load_items([write_lines(tmp_path / "e" / "letters.jsonl", [{**LABELLED, "病机答案": "B;K"}])])
    with pytest.raises(ItemFormatError, match="field '病机选项': option 2 '气血亏耗' is not 'LETTER:text'"):
        load_items([write_lines(tmp_path / "f" / "options.jsonl", [{**LABELLED, "病机选项": "A:火升风动;气血亏耗"}])])

    listed = tmp_path / "g" / "broken.json"
    listed.parent.mkdir()
    listed.write_text(json.dumps([LABELLED, missing], ensure_ascii=False, indent=2), encoding="utf-8")
    with pytest.raises(ItemFormatError) as error:
        list(chip.LOADER.load(listed, "g"))
    assert (error.value.line, error.value.field) == (14, "病机选项")
    listed.write_text('[\n  {"案例编号": "案例1"\n   "临床资料": "胃痛"\n  }\n]', encoding="utf-8")
    with pytest.raises(ItemFormatError, match="invalid JSON") as error:
        list(chip.LOADER.load(listed, "g"))
    assert error.value.line == 3


# ---------------------------------------------------------------------------------------------
# LingLan

LINGLAN = [
    {
        "id": "sc-1",
        "task_type": "single_choice",
        "question": "“诸风掉眩，皆属于”哪一脏？",
        "options": {"A": "心", "B": "肝", "C": "脾", "D": "肺"},
        "gold_answer": "B",
        "metadata": {"source": "自拟", "difficulty": "easy"},
    },
    {
        "id": "mc-1",
        "task_type": "multi_choice",
        "question": "下列哪些是四君子汤的组成药物？",
        "options": ["A. 人参", "B. 白术", "C. 当归", "D. 茯苓"],
        "gold_answer": "A;B;D",
        "metadata": None,
    },
    {
        "id": "cz-1",
        "task_type": "cloze",
        "question": "中医“四诊”指望诊、闻诊、问诊和____。",
        "options": None,
        "gold_answer": "切诊",
        "metadata": {"dataset": "four exams"},
    },
    {
        "id": "ex-1",
        "task_type": "extraction",
        "question": "从下文抽取“症状”和“舌象”实体：患者头痛，恶寒，头痛以午后为甚，舌淡红。",
        "options": None,
        "gold_answer": [
            {"entity": "头痛", "type": "症状", "count": 2},
            {"entity": "恶寒", "type": "症状", "count": 1},
            {"entity": "舌淡红", "type": "舌象"},
        ],
        "metadata": {},
    },
    {
        "id": "ol-1",
        "task_type": "open_label",
        "question": "胁肋胀痛，情志抑郁，食少便溏，舌淡苔白，脉弦细。请写出证型名称。",
        "options": None,
        "gold_answer": ["肝郁脾虚证"],
        "metadata": {"task": "syndrome naming"},
    },
    {
        "id": 6,
        "task_type": "quantitative",
        "question": "写出桂枝汤各药的常用剂量，每行“药名 剂量g”。",
        "options": None,
        "gold_answer": "桂枝汤",
        "gold_vector": [
            {"herb": "桂枝", "dose_grams": 9},
            {"herb": "芍药", "dose_grams": 9},
            {"herb": "生姜", "dose_grams": 9},
            {"herb": "大枣", "dose_grams": 6},
            {"herb": "炙甘草", "dose_grams": 6},
        ],
        "metadata": {"source": "自拟"},
    },
]
LINGLAN_IDEAL = {
    "sc-1": "B",
    "mc-1": "A、B、D",
    "cz-1": "切诊",
    "ex-1": "症状：头痛、头痛、恶寒\n舌象：舌淡红",
    "ol-1": "肝郁脾虚证",
    "6": "桂枝 9g\n芍药 9g\n生姜 9g\n大枣 6g\n炙甘草 6g",
}


@pytest.fixture
def linglan_items(tmp_path) -> dict[str, Item]:
    items = load_items([write_lines(tmp_path / "linglan" / "items.jsonl", LINGLAN)]).items
    return {item.local_id: item for item in items}


def test_linglan_gold_types_and_golds(linglan_items):
    items = linglan_items
    assert {k: i.gold_type for k, i in items.items()} == {
        "sc-1": "single_choice",
        "mc-1": "multi_choice",
        "cz-1": "cloze",
        "ex-1": "extraction",
        "ol-1": "open_label",
        "6": "quantitative",
    }
    assert {i.track for i in items.values()} == {"tcm"} and all(i.scorable for i in items.values())
    assert items["sc-1"].id == "linglan/single_choice/sc-1" and items["sc-1"].gold == "B"
    assert items["sc-1"].meta["difficulty"] == "easy" and items["sc-1"].meta["task_type"] == "single_choice"
    assert items["mc-1"].options == (("A", "人参"), ("B", "白术"), ("C", "当归"), ("D", "茯苓"))
    assert items["mc-1"].gold == ("A", "B", "D")
    assert items["cz-1"].task == "four_exams" and items["cz-1"].gold == "切诊"
    assert [dict(e) for e in items["ex-1"].gold] == [
        {"entity": "头痛", "type": "症状"},
        {"entity": "头痛", "type": "症状"},
        {"entity": "恶寒", "type": "症状"},
        {"entity": "舌淡红", "type": "舌象"},
    ]
    assert items["ol-1"].task == "syndrome_naming" and items["ol-1"].gold == ("肝郁脾虚证",)
    assert dict(items["6"].gold) == {"桂枝": 9, "芍药": 9, "生姜": 9, "大枣": 6, "炙甘草": 6}
    assert items["6"].source.line == 6


def test_linglan_ideal_answers_score_one(linglan_items):
    for local_id, answer in LINGLAN_IDEAL.items():
        assert scored(linglan_items[local_id], answer).value == pytest.approx(1.0), local_id
    assert scored(linglan_items["ex-1"], "症状：头痛、恶寒\n舌象：舌淡红").value < 1.0  # the count matters


def test_linglan_json_list_empty_gold_and_errors(tmp_path):
    path = tmp_path / "ll" / "items.json"
    path.parent.mkdir()
    rows = [LINGLAN[0], {**LINGLAN[4], "id": "ol-2", "gold_answer": None}]
    path.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    items = list(linglan.LOADER.load(path, "ll"))
    assert items[0].source.line == 2 and items[0].scorable
    assert not items[1].scorable and items[1].meta["gold_missing"] and "empty gold" in items[1].skip_reason

    bad = write_lines(tmp_path / "l2" / "bad.jsonl", [LINGLAN[0], {**LINGLAN[0], "id": "x", "task_type": "essay"}])
    with pytest.raises(ItemFormatError, match="field 'task_type': unknown task_type 'essay'") as error:
        load_items([bad])
    assert error.value.line == 2
    no_gold = {k: v for k, v in LINGLAN[0].items() if k != "gold_answer"}
    with pytest.raises(ItemFormatError, match="field 'gold_answer': missing"):
        list(linglan.LOADER.load(write_lines(tmp_path / "l3" / "a.jsonl", [no_gold]), "l3"))
    with pytest.raises(ItemFormatError, match=r"field 'gold_answer': single_choice gold labels \['E'\] are not among"):
        list(linglan.LOADER.load(write_lines(tmp_path / "l4" / "a.jsonl", [{**LINGLAN[0], "gold_answer": "E"}]), "l4"))
    with pytest.raises(ItemFormatError, match=r"field 'gold_answer\[0\].count': must be a positive integer"):
        bad_count = {**LINGLAN[3], "gold_answer": [{"entity": "头痛", "type": "症状", "count": 0}]}
        list(linglan.LOADER.load(write_lines(tmp_path / "l5" / "a.jsonl", [bad_count]), "l5"))


# ---------------------------------------------------------------------------------------------
# Recognition


def test_shape_recognition_picks_the_right_loader(tmp_path):
    jsonl = tmp_path / "x.jsonl"
    assert choose_loader(jsonl, LABELLED).name == "chip"
    assert choose_loader(jsonl, UNLABELLED).name == "chip"
    assert choose_loader(tmp_path / "x.json", [LABELLED]).name == "chip"
    assert choose_loader(jsonl, LINGLAN[0]).name == "linglan"
    assert (
        choose_loader(jsonl, {"id": 1, "task": "t", "track": "exam", "gold_type": "cloze", "gold": "答"}).name
        == "medpool"
    )
    assert choose_loader(jsonl, {"norm_syndrome": "x", "chief_complaint": "y"}).name == "tcm_sd"
    assert choose_loader(jsonl, {"question": "q", "answer": "a", "other": {}}).name == "reference"
    write_lines(tmp_path / "mixed" / "chip.jsonl", [LABELLED])
    write_lines(tmp_path / "mixed" / "linglan.jsonl", LINGLAN)
    tasks = {item.task for item in load_items([tmp_path / "mixed"]).items}
    assert tasks == {
        "chip_tcm",
        "single_choice",
        "multi_choice",
        "four_exams",
        "extraction",
        "syndrome_naming",
        "quantitative",
    }


def test_a_pretty_printed_json_list_is_recognised_by_shape(tmp_path):
    import json

    from eval.loaders import load_items

    folder = tmp_path / "ll"
    folder.mkdir()
    item = {
        "id": "x1",
        "task_type": "single_choice",
        "question": "哪个是补气药？",
        "options": {"A": "黄芪", "B": "大黄"},
        "gold_answer": "A",
        "metadata": {},
    }
    (folder / "items.json").write_text(json.dumps([item], ensure_ascii=False, indent=2), encoding="utf-8")
    loaded = load_items([folder])
    assert [(i.id, i.gold_type, i.gold) for i in loaded.items] == [("ll/single_choice/x1", "single_choice", "A")]
