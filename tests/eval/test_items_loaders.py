"""The item model, every loader (reference suites in ../shared/data and malformed fixtures), the demo
suite and the ``python -m eval.datasets`` summary."""

import dataclasses
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from eval.datasets import main as datasets_main
from eval.items import GOLD_TYPES, TRACKS, Item, ItemError, Source
from eval.loaders import DuplicateItemError, ItemFormatError, load_demo_suite, load_items

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="module")
def data() -> Path:
    if not DATA.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{DATA} is missing: the reference suites are required in CI")
        pytest.skip(
            f"reference suites not found at {DATA} (../shared/data beside the repo); loader tests against them skipped"
        )
    return DATA


def write_lines(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join((row if isinstance(row, str) else json.dumps(row, ensure_ascii=False)) + "\n" for row in rows),
        encoding="utf-8",
    )
    return path


def own(local_id: str, **fields) -> dict:
    row = {"id": local_id, "task": "t", "track": "exam", "gold_type": "cloze", "question": "填空：____", "gold": "答"}
    row.update(fields)
    return row


# ----- loaders against the reference suites -------------------------------------------------------------------


class TestReferenceSuites:
    def test_reference_jsonl(self, data):
        result = load_items([data / "medbench-agent-95"])
        assert len(result.items) == 330
        tasks = Counter(item.task for item in result.items)
        assert len(tasks) == 11 and set(tasks.values()) == {30}
        assert {(i.suite, i.track, i.gold_type) for i in result.items} == {
            ("medbench-agent-95", "capability", "reference")
        }
        # The .md without a .jsonl is listed, not fatal; the others are read as task descriptions.
        assert [Path(s.source).name for s in result.skipped] == ["MedEthics.md"]
        first = result.items[0]
        assert first.id == f"medbench-agent-95/{first.task}/{first.local_id}"
        assert first.meta["task_doc"] == f"{first.task}.md" and first.meta["task_description"]
        raw = json.loads(
            (data / "medbench-agent-95" / f"{first.task}.jsonl").read_text(encoding="utf-8").splitlines()[0]
        )
        assert first.question == raw["question"] and first.gold == raw["answer"]
        assert first.source == Source(str(data / "medbench-agent-95" / f"{first.task}.jsonl"), 1)

    def test_criteria_yaml(self, data):
        items = load_items([data / "book-gold" / "internists.yaml"]).items
        assert len(items) == 183
        assert all(i.gold_type == "criteria" and i.track == "specialty" and i.domain and ":" in i.domain for i in items)
        first = items[0]
        assert first.id == "book-gold/internists/CARD_HTN_01" and first.domain == "cardiology:hypertension"
        assert first.gold["expected_topics"] and isinstance(first.gold["must_warn"], tuple)
        assert first.source.line == 2
        assert all(isinstance(i.gold["must_not"], tuple) for i in items)

    def test_probes(self, data):
        result = load_items([data / "probes" / "nonexistent.yaml", data / "probes" / "false_premise.yaml"])
        assert len(result.items) == 30
        assert len(result.scorable_items) == 10 and {i.task for i in result.scorable_items} == {"nonexistent"}
        unscorable = [i for i in result.items if not i.scorable]
        assert len(unscorable) == 20 and all("validity" in i.skip_reason for i in unscorable)
        assert [s.id for s in result.skipped] == [i.id for i in unscorable]
        assert {i.gold for i in result.items} == {"abstain", "refute"}
        assert unscorable[0].meta["system"] == "cardiology" and unscorable[0].domain is None

    def test_tool_decision(self, data):
        items = load_items([data / "probes" / "tool_decision.yaml"]).items
        assert len(items) == 30 and all(i.scorable and i.gold_type == "tool_decision" for i in items)
        assert Counter(i.gold for i in items) == {"call": 15, "direct": 15}

    def test_tcm_sd(self, data):
        # The sample holds 5 JSON records; its last line has no newline, so `wc -l` reports 4.
        items = load_items([data / "tcm-sd"]).items
        assert len(items) == 5
        labels = items[0].meta["labels"]
        assert all(i.gold_type == "classification" and i.track == "tcm" and i.gold in labels for i in items)
        raw = json.loads((data / "tcm-sd" / "TCM-SD_data_sample.json").read_text(encoding="utf-8").splitlines()[0])
        assert raw["chief_complaint"] in items[0].question and raw["medical_history"] in items[0].question
        assert items[0].gold == raw["norm_syndrome"] and items[0].meta["lcd_name"] == raw["lcd_name"]

    def test_whole_folder(self, data):
        result = load_items([data])
        assert len(result.items) == 330 + 183 + 30 + 30 + 5
        assert len({i.id for i in result.items}) == len(result.items)
        reasons = {Path(s.source).name: s.reason for s in result.skipped if s.id is None}
        assert set(reasons) == {"hallu_gold.yaml", "MedEthics.md"} and "not an item suite" in reasons["hallu_gold.yaml"]
        again = load_items([data])
        assert [i.id for i in again.items] == [i.id for i in result.items]

    def test_same_file_twice_is_loaded_once(self, data):
        path = data / "probes" / "tool_decision.yaml"
        assert len(load_items([path, path.parent]).items) == 60


# ----- malformed fixtures --------------------------------------------------------------------------------------


class TestMalformed:
    def test_broken_json_line_names_path_and_line(self, tmp_path):
        path = write_lines(tmp_path / "s" / "items.jsonl", [own("a"), '{"id": "b", "task": ', own("c")])
        with pytest.raises(ItemFormatError) as caught:
            load_items([path])
        assert str(caught.value).startswith(f"{path}:2: invalid JSON")
        assert caught.value.line == 2

    def test_missing_field_is_named(self, tmp_path):
        path = write_lines(
            tmp_path / "mb" / "Task.jsonl",
            [
                {"question": "问", "answer": "答", "other": {"id": 1}},
                {"question": "问", "answer": "答", "other": {"source": "x"}},
            ],
        )
        with pytest.raises(ItemFormatError, match=r"Task\.jsonl:2: field 'other\.id': missing") as caught:
            load_items([path])
        assert caught.value.field == "other.id"

    def test_missing_yaml_field_names_the_entry_line(self, tmp_path):
        path = tmp_path / "g" / "gold.yaml"
        path.parent.mkdir()
        path.write_text(
            "questions:\n"
            "- id: A\n  question: 问\n  expected_domain: [cardiology:hypertension]\n  expected_topics: [限盐]\n"
            "- id: B\n  question: 问\n  expected_domain: [cardiology:hypertension]\n  expected_topics: 限盐\n",
            encoding="utf-8",
        )
        with pytest.raises(ItemFormatError, match=r"gold\.yaml:9: field 'expected_topics': must be a list"):
            load_items([path])

    def test_yaml_syntax_error_names_line(self, tmp_path):
        path = tmp_path / "p" / "probes.yaml"
        path.parent.mkdir()
        path.write_text("probes:\n- id: X\n  question: [unclosed\n", encoding="utf-8")
        with pytest.raises(ItemFormatError, match=r"probes\.yaml:\d+: invalid YAML"):
            load_items([path])

    def test_duplicate_id_names_both_lines(self, tmp_path):
        path = write_lines(tmp_path / "s" / "items.jsonl", [own("a"), own("b"), own("a")])
        with pytest.raises(DuplicateItemError) as caught:
            load_items([path])
        message = str(caught.value)
        assert message.startswith(f"{path}:3:") and f"first at {path}:1" in message and "'s/t/a'" in message

    def test_duplicate_across_files(self, tmp_path):
        first = write_lines(tmp_path / "s" / "one.jsonl", [own("a")])
        second = write_lines(tmp_path / "s" / "two.jsonl", [own("b"), own("a")])
        with pytest.raises(
            DuplicateItemError, match=rf"{re.escape(str(second))}:2: .*first at {re.escape(str(first))}:1"
        ):
            load_items([tmp_path / "s"])

    @pytest.mark.parametrize(
        ("fields", "field", "fragment"),
        [
            ({"golds": "x"}, "golds", "unknown field"),
            ({"track": "bench"}, "track", "must be one of"),
            ({"gold_type": "essay"}, "gold_type", "must be one of"),
            ({"messages": [{"role": "user", "content": "问"}]}, "question", "exactly one of"),
            (
                {"gold_type": "single_choice", "gold": "E", "options": {"A": "甲", "B": "乙"}},
                "gold",
                "not among the options",
            ),
            ({"gold_type": "tool_decision", "gold": "maybe"}, "gold", "call"),
            ({"domain": "cardiology"}, "domain", "system:topic"),
            ({"scorable": False}, "skip_reason", "required"),
            ({"gold_type": "quantitative", "gold": {"麻黄": -1}}, "gold", "non-negative"),
        ],
    )
    def test_bad_own_format_fields(self, tmp_path, fields, field, fragment):
        path = write_lines(tmp_path / "s" / "items.jsonl", [own("a"), own("b", **fields)])
        with pytest.raises(ItemFormatError) as caught:
            load_items([path])
        assert caught.value.line == 2 and caught.value.field == field and fragment in str(caught.value)

    def test_unrecognised_data_file_is_an_error(self, tmp_path):
        write_lines(tmp_path / "s" / "x.jsonl", [{"text": "无关"}])
        with pytest.raises(ItemFormatError, match="no loader recognises"):
            load_items([tmp_path / "s"])

    def test_missing_path(self, tmp_path):
        with pytest.raises(ItemFormatError, match="no such file or folder"):
            load_items([tmp_path / "absent"])

    def test_manifest_names_suite_and_skips(self, tmp_path):
        folder = tmp_path / "whatever"
        write_lines(folder / "a.jsonl", [own("a")])
        write_lines(folder / "drafts" / "b.jsonl", ['{"not": "checked"'])
        (folder / "notes.txt").write_text("说明", encoding="utf-8")
        (folder / "medpool-suite.yaml").write_text('suite: mine\nfiles:\n  "drafts/*": skip\n', encoding="utf-8")
        result = load_items([folder])
        assert [i.id for i in result.items] == ["mine/t/a"]
        assert [(Path(s.source).name, s.reason.split(":")[0]) for s in result.skipped] == [
            ("b.jsonl", "skipped by medpool-suite.yaml"),
            ("notes.txt", "not an item file"),
        ]


# ----- the item model -------------------------------------------------------------------------------------------


class TestItem:
    def make(self, **fields) -> Item:
        base = {
            "id": "s/t/1",
            "suite": "s",
            "track": "exam",
            "task": "t",
            "gold_type": "cloze",
            "gold": "答",
            "source": Source("f", 1),
        }
        base.update(fields)
        if "messages" not in base:
            base.setdefault("question", "问")
        return Item(**base)

    def test_chat_messages_keep_the_original_text(self):
        question = "  第一行  有两个空格\n\n\t第三行有制表符\r\n结尾空格  \n"
        item = self.make(question=question)
        assert item.chat_messages() == ({"role": "user", "content": question},)
        assert item.completion_prompt() == f"问题：{question}\n答案："

    def test_options_follow_the_question(self):
        item = self.make(gold_type="single_choice", gold="B", question="选择：\n", options={"A": " 甲 ", "B": "乙"})
        assert item.chat_messages()[0]["content"] == "选择：\n\nA.  甲 \nB. 乙"

    def test_messages_are_returned_as_fresh_dicts(self):
        messages = [{"role": "system", "content": " 系统\n"}, {"role": "user", "content": "问  题\n\n"}]
        item = self.make(messages=messages)
        sent = item.chat_messages()
        assert [dict(m) for m in sent] == messages
        sent[0]["content"] = "changed"
        assert item.chat_messages()[0]["content"] == " 系统\n"
        assert item.completion_prompt() == " 系统\n\n问题：问  题\n\n\n答案："

    def test_immutable(self):
        item = self.make(gold_type="criteria", gold={"expected_topics": ["甲"], "must_warn": []}, meta={"k": [1]})
        with pytest.raises(dataclasses.FrozenInstanceError):
            item.gold = "x"  # type: ignore[misc]
        with pytest.raises(TypeError):
            item.gold["expected_topics"] = ("乙",)  # type: ignore[index]
        with pytest.raises(TypeError):
            item.meta["k"] = 2  # type: ignore[index]
        assert item.meta["k"] == (1,) and hash(item) == hash(
            self.make(gold_type="criteria", gold={"expected_topics": ["甲"]})
        )

    def test_rejects_with_the_field(self):
        with pytest.raises(ItemError) as caught:
            self.make(id="other/t/1")
        assert caught.value.field == "id"
        with pytest.raises(ItemError, match="last message"):
            self.make(messages=[{"role": "user", "content": "问"}, {"role": "assistant", "content": "答"}])


# ----- the demo suite and the CLI -------------------------------------------------------------------------------


class TestDemoSuite:
    def test_covers_every_gold_type(self):
        result = load_demo_suite()
        items = result.items
        assert 40 <= len(items) <= 70 and not result.skipped
        per_task = Counter(i.task for i in items)
        # routing decisions need min_n = 5 items per bucket: every task but the long CHIP cases has them, and
        # the criteria, probe and CHIP buckets are served by their family (5+ items each)
        assert {t for t, n in per_task.items() if n < 5} <= {"chip_case", "probe_false_premise", "probe_nonexistent"}
        assert per_task["probe_false_premise"] + per_task["probe_nonexistent"] >= 5
        assert len({i.id for i in items}) == len(items) and all(i.id.startswith("demo/") for i in items)
        counts = Counter(i.gold_type for i in items)
        assert set(counts) == set(GOLD_TYPES) and min(counts.values()) >= 2
        assert {i.track for i in items} == set(TRACKS)
        assert any(i.messages for i in items) and all(i.scorable for i in items)
        assert all(len(i.chat_messages()[-1]["content"]) < 400 for i in items)  # short enough for tiny models

    def test_records_round_trip_through_the_own_format(self, tmp_path):
        items = load_demo_suite().items
        path = write_lines(tmp_path / "copy" / "demo.jsonl", [item.to_record() for item in items])
        again = load_items([path]).items
        assert [dataclasses.replace(i, source=Source("", 0)) for i in again] == [
            dataclasses.replace(i, source=Source("", 0)) for i in items
        ]


class TestDatasetsCli:
    def test_demo_summary(self, capsys):
        assert datasets_main([]) == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["items"] == summary["scorable"] == sum(summary["by_gold_type"].values())
        assert set(summary["by_gold_type"]) == set(GOLD_TYPES) and summary["by_suite"] == {"demo": summary["items"]}

    def test_reference_summary(self, data, capsys):
        assert datasets_main([str(data)]) == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["items"] == 578 and summary["scorable"] == 558
        assert summary["by_track"] == {"capability": 330, "orchestration": 60, "specialty": 183, "tcm": 5}
        assert len(summary["skipped"]) == 22

    def test_broken_file_exits_2(self, tmp_path, capsys):
        path = write_lines(tmp_path / "s" / "items.jsonl", [own("a"), "{oops"])
        assert datasets_main([str(path)]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and f"{path}:2:" in captured.err

    def test_module_entry_point(self, tmp_path):
        path = write_lines(tmp_path / "s" / "items.jsonl", [own("a")])
        run = subprocess.run(
            [sys.executable, "-m", "eval.datasets", "--compact", str(path)],
            cwd=REPO,
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0 and json.loads(run.stdout)["by_task"] == {"s/t": 1}
        help_run = subprocess.run(
            [sys.executable, "-m", "eval.datasets", "--help"],
            cwd=REPO,
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert help_run.returncode == 0 and "PATH" in help_run.stdout
