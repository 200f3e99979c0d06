"""An item's answer budget (``max_tokens``): validated where it is read, sent as min(model's, item's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.items import ItemError
from eval.loaders import ItemFormatError, load_demo_suite, load_items
from pool.config import parse_pool
from pool.plan import answer_request, data_fingerprint
from tests.fake_pool import write_jsonl

POOL = """backends:
  fake: {type: openai, base_url: "http://127.0.0.1:9/v1"}
models:
  - {name: wide, backend: fake, max_tokens: 256}
  - {name: narrow, backend: fake, max_tokens: 8}
  - {name: base, backend: fake, mode: completion, max_tokens: 256}
"""
CHOICE = {
    "id": "c1",
    "task": "single_choice",
    "track": "exam",
    "gold_type": "single_choice",
    "question": "哪一个？",
    "options": [["A", "甲"], ["B", "乙"]],
    "gold": "A",
}


def write(tmp_path: Path, *records: dict) -> Path:
    return write_jsonl(tmp_path / "items.jsonl", records)


def test_the_smaller_budget_is_sent_and_nothing_else_changes(tmp_path: Path) -> None:
    [item] = load_items([write(tmp_path, {**CHOICE, "max_tokens": 32})]).items
    [plain] = load_items([write(tmp_path, CHOICE)]).items
    config = parse_pool(POOL)
    sent = {m.name: answer_request(m, item) for m in config.enabled_models()}
    assert {name: r.params.max_tokens for name, r in sent.items()} == {"wide": 32, "narrow": 8, "base": 32}
    assert sent["base"].mode == "completion" and sent["base"].prompt == plain.completion_prompt()
    unbudgeted = answer_request(config.model("wide"), plain)
    assert unbudgeted.params.max_tokens == 256
    assert (
        sent["wide"].messages == unbudgeted.messages
        and sent["wide"].params.temperature == unbudgeted.params.temperature
    )


def test_the_budget_is_part_of_the_data_fingerprint_only_when_set(tmp_path: Path) -> None:
    [plain] = load_items([write(tmp_path, CHOICE)]).items
    [budgeted] = load_items([write(tmp_path, {**CHOICE, "max_tokens": 32})]).items
    [other] = load_items([write(tmp_path, {**CHOICE, "max_tokens": 16})]).items
    assert len({data_fingerprint([plain]), data_fingerprint([budgeted]), data_fingerprint([other])}) == 3
    assert budgeted.to_record()["max_tokens"] == 32 and "max_tokens" not in plain.to_record()


@pytest.mark.parametrize("bad", [0, -5, 2.5, "32", True])
def test_a_bad_budget_names_the_file_line_and_field(tmp_path: Path, bad: object) -> None:
    path = write(tmp_path, CHOICE, {**CHOICE, "id": "c2", "max_tokens": bad})
    with pytest.raises((ItemFormatError, ItemError), match=r"items.jsonl:2.*max_tokens.*integer >= 1"):
        load_items([path])


def test_the_demo_suite_budgets_fit_each_answer_format() -> None:
    """Short golds get short budgets; free-text answers a budget that leaves room for a full answer
    (192 tokens for clinical answers, 128 for probes: the refusal or correction comes first); the
    CHIP cases' four parts keep the model's own budget."""
    items = load_demo_suite().items
    short = {
        "single_choice",
        "multi_choice",
        "true_false",
        "cloze",
        "routing",
        "classification",
        "open_label",
        "tool_decision",
        "extraction",
        "quantitative",
    }
    budgets = {i.gold_type: set() for i in items}
    for i in items:
        budgets[i.gold_type].add(i.max_tokens)
    assert all(max(budgets[g]) <= 96 for g in short)
    assert budgets["reference"] == budgets["criteria"] == {192} and budgets["probe"] == {128}
    assert budgets["tcm_case"] == {None}
