"""Item selection for a run: --orchestration, nested --subset, id files, filter order."""

from __future__ import annotations

import pytest

from eval.items.orchestration import derive_routing_items
from eval.loaders import load_demo_suite
from eval.subsets import named_subset, subset_order
from pool.items_source import DataError, select_items


@pytest.fixture(scope="module")
def demo():
    return load_demo_suite()


def test_orchestration_track_only_with_the_flag(demo):
    without = select_items(demo, {})
    with_flag = select_items(demo, {"orchestration": True})
    assert all(i.track != "orchestration" for i in without)
    tracks = {i.task for i in with_flag if i.track == "orchestration"}
    assert {"tool_decision", "specialty_routing"} <= tracks
    criteria_with_domain = [i for i in demo.scorable_items if i.gold_type == "criteria" and i.domain]
    derived = [i for i in with_flag if i.meta.get("derived_from")]
    assert len(derived) == len(criteria_with_domain)


def test_derived_routing_items_are_deterministic_and_contain_the_gold(demo):
    first = derive_routing_items(demo.items)
    second = derive_routing_items(demo.items)
    assert [(i.id, i.options) for i in first] == [(i.id, i.options) for i in second]
    for item in first:
        texts = [text for _, text in item.options]
        assert item.gold in texts and len(set(texts)) == len(texts)
        assert item.gold_type == "routing" and item.domain == item.gold
        source = next(i for i in demo.items if i.id == item.meta["derived_from"])
        assert source.question in item.question  # the original text, unchanged


def test_subsets_are_nested_and_cover_every_task(demo):
    items = list(demo.scorable_items)
    order = subset_order(items)
    assert sorted(i.id for i in order) == sorted(i.id for i in items)
    tasks = {i.task for i in items}
    seeds = {i.task for i in items if i.gold_type == "reference"}  # each reference task's hardest item comes first
    first_pass = len(seeds) + len({(i.track, i.task, i.domain) for i in items})  # then one item per bucket
    assert {i.task for i in order[:first_pass]} == tasks
    mini = named_subset(items, "mini")
    medium = named_subset(items, "medium")
    assert [i.id for i in mini] == [i.id for i in medium[: len(mini)]]
    with pytest.raises(ValueError):
        named_subset(items, "huge")


def test_subset_file_and_filter_order(demo, tmp_path):
    ids = [i.id for i in demo.scorable_items if i.track != "orchestration"][:5]
    hard = tmp_path / "hard.yaml"
    hard.write_text("item_ids:\n" + "".join(f"  - {i}\n" for i in ids), encoding="utf-8")
    chosen = select_items(demo, {"subset": str(hard)})
    assert [i.id for i in chosen] == ids
    assert len(select_items(demo, {"subset": str(hard), "limit": 2})) == 2
    missing = tmp_path / "ids.txt"
    missing.write_text("demo/nope/1\n", encoding="utf-8")
    with pytest.raises(DataError, match="not in the selected data"):
        select_items(demo, {"subset": str(missing)})


def test_sample_and_domain_filters(demo):
    sampled = select_items(demo, {"sample": 1})
    buckets = [(i.task, i.domain) for i in sampled]
    assert len(buckets) == len(set(buckets))
    cardio = select_items(demo, {"domain": "cardiology"})
    assert cardio and all(i.domain.startswith("cardiology:") for i in cardio)
    with pytest.raises(DataError, match="no such item"):
        select_items(demo, {"id": ["demo/none/0"]})
