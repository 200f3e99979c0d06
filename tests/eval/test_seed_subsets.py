"""Frozen nested tiers (mini 30 ⊂ medium 100 ⊂ large): the difficulty heuristic to the letter, the
coverage seeds and round robin, the tier files (byte-stable, fingerprinted), `pool.run --subset`
reading them (absent file, changed gold, vanished ids), and the heuristic-vs-observed agreement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from eval.items import Item, Source
from eval.loaders import load_demo_suite, load_items
from eval.subsets import data_fingerprint, difficulties, named_subset, read_tier, subset_order, tier_candidates
from eval.subsets.__main__ import main as subsets_main
from eval.subsets.agreement import agreement, observed_difficulty
from pool.items_source import DataError, select_items
from tests.shared_data import SHARED_DATA, need_shared

SHARED = SHARED_DATA
MEDBENCH = SHARED / "medbench-agent-95"
INTERNISTS = SHARED / "book-gold" / "internists.yaml"


def ref(local: str, task: str, reference: str, question: str, domain: str | None = None) -> Item:
    return Item(
        id=f"t/{task}/{local}",
        suite="t",
        track="capability",
        task=task,
        gold_type="reference",
        gold=reference,
        source=Source("t.jsonl", 1),
        question=question,
        domain=domain,
    )


def crit(
    local: str,
    topics: int,
    warn: bool = False,
    must_not: bool = False,
    question: str = "问题？",
    domain: str = "cardiology:hypertension",
    patient_phrases: bool = False,
) -> Item:
    gold = {
        "expected_topics": [f"要点{k}" for k in range(topics)],
        "must_warn": ["就医"] if warn else [],
        "must_not": ["停药"] if must_not else [],
    }
    if patient_phrases:
        gold["patient_must_not_phrases"] = ["自行停药"]
    return Item(
        id=f"b/internists/{local}",
        suite="b",
        track="specialty",
        task="internists",
        gold_type="criteria",
        gold=gold,
        source=Source("b.yaml", 1),
        question=question,
        domain=domain,
    )


def exam(local: str) -> Item:
    return Item(
        id=f"e/quiz/{local}",
        suite="e",
        track="exam",
        task="quiz",
        gold_type="single_choice",
        gold="A",
        source=Source("e.jsonl", 1),
        question="选哪个？",
        options=(("A", "甲"), ("B", "乙")),
    )


# --- the heuristic, to the letter ---------------------------------------------------------------


def test_reference_difficulty_is_the_weighted_sum_of_track_normalised_features():
    items = [
        ref("1", "MedDefend", "x" * 10, "q" * 30),
        ref("2", "MedCallAPI", "x" * 30, "q" * 10),
        ref("3", "Unlisted", "x" * 20, "q" * 20),
    ]
    # task weights 1.0, 0.5, 0.6 -> 1, 0, 0.2; reference lengths -> 0, 1, 0.5; question lengths -> 1, 0, 0.5
    raw = [0.6 * 1 + 0.25 * 0 + 0.15 * 1, 0.6 * 0 + 0.25 * 1 + 0.15 * 0, 0.6 * 0.2 + 0.25 * 0.5 + 0.15 * 0.5]
    low, high = min(raw), max(raw)
    got = difficulties(items)
    for item, value in zip(items, raw, strict=True):
        assert got[item.id] == pytest.approx((value - low) / (high - low))


def test_criteria_difficulty_counts_topics_warnings_forbidden_statements_and_guidelines():
    items = [
        crit("A", 2),
        crit("B", 6, warn=True),
        crit("C", 4, must_not=True),
        crit("D", 4, patient_phrases=True, question="按2023年版指南，血压目标是多少？"),
        crit("E_GUIDELINE", 2),
    ]
    # topics 2,6,4,4,2 -> 0, 1, .5, .5, 0; warn 0,1,0,0,0; must_not 0,0,1,1,0; guideline 0,0,0,1,1
    raw = {"A": 0.0, "B": 0.35 + 0.25, "C": 0.35 * 0.5 + 0.20, "D": 0.35 * 0.5 + 0.20 + 0.20, "E_GUIDELINE": 0.20}
    low, high = min(raw.values()), max(raw.values())
    got = difficulties(items)
    for local, value in raw.items():
        assert got[f"b/internists/{local}"] == pytest.approx((value - low) / (high - low))


def test_a_shared_feature_and_other_gold_types_sit_in_the_middle():
    same = [crit("A", 3, warn=True), crit("B", 3, warn=True)]  # every feature has zero span
    assert set(difficulties(same).values()) == {0.5}
    assert difficulties([exam("1"), exam("2")]) == {"e/quiz/1": 0.5, "e/quiz/2": 0.5}
    assert difficulties([crit("X", 2, question="根据指南……")])["b/internists/X"] == 0.5  # a single item: zero span
    year = difficulties([crit("Y", 2, question="2019年起有何变化？"), crit("Z", 2, question="3019年呢？")])
    assert year["b/internists/Y"] == 1.0 and year["b/internists/Z"] == 0.0  # only 2010–2029 followed by 年


# --- the order ------------------------------------------------------------------------------------


def test_coverage_seeds_then_round_robin_over_buckets():
    items = [
        ref("1", "MedDefend", "x" * 50, "q", "cardiology:cad"),
        ref("2", "MedDefend", "x" * 40, "q", "cardiology:cad"),
        ref("3", "MedDefend", "x" * 10, "q", "renal:ckd"),
        ref("4", "MedDBOps", "x", "q"),
        ref("5", "MedDBOps", "x" * 5, "q"),
        crit("A", 5, warn=True, domain="renal:ckd"),
        crit("B", 1, domain="renal:ckd"),
        crit("C", 3, domain="digestive:gi"),
        exam("1"),
    ]
    d = difficulties(items)
    by_id = {i.id: i for i in items}
    order = [i.id for i in subset_order(items)]
    assert sorted(order) == sorted(by_id)
    assert order[:2] == ["t/MedDefend/1", "t/MedDBOps/5"]  # each reference task's hardest, hardest first
    assert d["t/MedDefend/1"] > d["t/MedDBOps/5"]
    rest = order[2:]

    def bucket(item_id: str) -> tuple:
        item = by_id[item_id]
        return (item.track, item.task, item.domain or "")

    buckets = {bucket(i) for i in rest}
    first_pass = rest[: len(buckets)]
    assert {bucket(i) for i in first_pass} == buckets  # every bucket once before any twice
    tops = [d[i] for i in first_pass]
    assert tops == sorted(tops, reverse=True)  # buckets by their hardest remaining member
    assert rest.index("b/internists/A") < rest.index("b/internists/B")  # inside a bucket: hardest first
    assert [i.id for i in subset_order(items, cover=False)][:2] != order[:2]  # --no-cover: buckets only


def test_round_robin_lays_out_every_bucket_before_repeating_one():
    items = (
        [crit(f"A{k}", k + 1, domain="cardiology:cad") for k in range(4)]
        + [crit(f"B{k}", k + 1, domain="renal:ckd") for k in range(2)]
        + [exam(str(k)) for k in range(3)]
    )
    order = [i.id for i in subset_order(items)]
    d = difficulties(items)
    assert order[:3] == ["b/internists/A3", "e/quiz/0", "b/internists/B1"]  # one per bucket, by hardest member
    assert order[3:6] == ["b/internists/A2", "e/quiz/1", "b/internists/B0"]
    assert d["b/internists/A3"] == 1.0 and d["b/internists/B1"] == pytest.approx(1 / 3)  # exam items sit at 0.5
    assert order[6:] == ["b/internists/A1", "e/quiz/2", "b/internists/A0"]


def test_tiers_are_nested_prefixes_of_30_and_100():
    items = [crit(f"Q{k:03d}", k % 7 + 1, warn=k % 3 == 0, domain=f"renal:t{k % 9}") for k in range(150)]
    mini, medium, large = (named_subset(items, name) for name in ("mini", "medium", "large"))
    assert (len(mini), len(medium), len(large)) == (30, 100, 150)
    assert medium[:30] == mini and large[:100] == medium
    with pytest.raises(ValueError, match="mini, medium, large"):
        named_subset(items, "huge")


# --- the files ------------------------------------------------------------------------------------


def test_cli_writes_three_byte_stable_tier_files(tmp_path, capsys):
    assert subsets_main(["--out", str(tmp_path / "a")]) == 0
    assert subsets_main(["--out", str(tmp_path / "b")]) == 0
    demo = load_demo_suite()
    ranked = tier_candidates(demo.items)
    tiers = {}
    for name in ("mini", "medium", "large"):
        text = (tmp_path / "a" / f"{name}.yaml").read_text(encoding="utf-8")
        again = (tmp_path / "b" / f"{name}.yaml").read_text(encoding="utf-8")
        assert text.replace(str(tmp_path / "a"), "X") == again.replace(str(tmp_path / "b"), "X")
        assert text.startswith("# generated by python -m eval.subsets, do not edit")
        doc = yaml.safe_load(text)
        assert doc["tier"] == name and doc["data_fingerprint"] == data_fingerprint(ranked)
        assert doc["parameters"]["cover"] is True and doc["parameters"]["tiers"] == {
            "mini": 30,
            "medium": 100,
            "large": "all",
        }
        tiers[name] = doc["item_ids"]
        assert read_tier(tmp_path / "a" / f"{name}.yaml").item_ids == tuple(doc["item_ids"])
    assert tiers["mini"] == [i.id for i in subset_order(ranked)][:30]
    assert tiers["medium"][:30] == tiers["mini"] and tiers["large"][: len(tiers["medium"])] == tiers["medium"]
    assert len(tiers["large"]) == len(ranked) and not any(i.track == "orchestration" for i in ranked)
    assert "30 items" in capsys.readouterr().out
    assert subsets_main(["--out", str(tmp_path / "c"), "--no-cover"]) == 0
    assert yaml.safe_load((tmp_path / "c" / "mini.yaml").read_text(encoding="utf-8"))["parameters"]["cover"] is False


def test_cli_bad_data_is_exit_2(tmp_path, capsys):
    assert subsets_main(["--data", str(tmp_path / "nope"), "--out", str(tmp_path)]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_mini_covers_every_medbench_task_on_the_reference_suites(tmp_path):
    need_shared(MEDBENCH)
    need_shared(INTERNISTS)
    loaded = load_items([MEDBENCH, INTERNISTS])
    assert subsets_main(["--data", str(MEDBENCH), str(INTERNISTS), "--out", str(tmp_path)]) == 0
    mini = read_tier(tmp_path / "mini.yaml").item_ids
    by_id = {i.id: i for i in loaded.items}
    tasks = {i.task for i in loaded.items if i.gold_type == "reference"}
    assert {by_id[i].task for i in mini[: len(tasks)]} == tasks  # the coverage seeds come first
    seeds = [by_id[i] for i in mini[: len(tasks)]]
    d = difficulties(tier_candidates(loaded.items))
    for seed in seeds:  # each is its task's hardest
        assert d[seed.id] == max(d[i.id] for i in loaded.items if i.task == seed.task)
    assert len({by_id[i].domain for i in mini if by_id[i].track == "specialty"}) == sum(
        by_id[i].track == "specialty" for i in mini
    )  # criteria picks of mini: all different specialties
    without = tmp_path / "plain"
    assert subsets_main(["--data", str(MEDBENCH), str(INTERNISTS), "--out", str(without), "--no-cover"]) == 0
    assert read_tier(without / "mini.yaml").item_ids != mini


# --- pool.run --subset NAME -------------------------------------------------------------------------


@pytest.fixture
def demo():
    return load_demo_suite()


def test_subset_reads_the_frozen_file_in_its_order(demo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ranked = [i.id for i in tier_candidates(demo.items)]
    chosen = ranked[::-1][:4]  # an order the heuristic would not give: the file wins
    frozen = Path("subsets") / "mini.yaml"
    frozen.parent.mkdir()
    frozen.write_text(
        yaml.safe_dump(
            {
                "tier": "mini",
                "data_fingerprint": data_fingerprint(tier_candidates(demo.items)),
                "refresh": "python -m eval.subsets",
                "item_ids": chosen,
            }
        ),
        encoding="utf-8",
    )
    assert [i.id for i in select_items(demo, {"subset": "mini"})] == chosen


def test_subset_without_a_file_is_computed_and_says_how_to_freeze(demo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    notes: list[str] = []
    chosen = select_items(demo, {"subset": "mini"}, notes)
    assert [i.id for i in chosen] == [i.id for i in named_subset(tier_candidates(demo.items), "mini")]
    said = "\n".join(notes)
    assert "computed in memory" in said and "python -m eval.subsets" in said
    assert subsets_main([]) == 0  # writes ./subsets: the same tier, frozen
    notes.clear()
    assert select_items(demo, {"subset": "mini"}, notes) == chosen
    assert not [note for note in notes if note.startswith("warning:")]


def test_a_changed_gold_or_vanished_ids_warn_and_run_the_rest(demo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert subsets_main([]) == 0
    mini = read_tier(Path("subsets/mini.yaml")).item_ids
    gone = set(mini[:3])
    changed = type(demo)(tuple(i for i in demo.items if i.id not in gone), demo.skipped)
    notes: list[str] = []
    chosen = select_items(changed, {"subset": "mini"}, notes)
    assert [i.id for i in chosen] == list(mini[3:])
    said = "\n".join(notes)
    assert "3 of the 30 item ids in subsets/mini.yaml are not in the data" in said
    assert "data differs" in said and "refresh it with `python -m eval.subsets`" in said
    other = type(demo)(tuple(i for i in demo.items if i.id not in set(mini)), demo.skipped)
    with pytest.raises(DataError, match="none of the 30 item ids"):
        select_items(other, {"subset": "mini"})


def test_a_broken_tier_file_names_the_file_and_field(demo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("subsets").mkdir()
    Path("subsets/medium.yaml").write_text(
        "tier: medium\ndata_fingerprint: x\nrefresh: y\nitem_ids: nope\n", encoding="utf-8"
    )
    with pytest.raises(DataError, match=r"subsets/medium.yaml:4: field 'item_ids': must be a list"):
        select_items(demo, {"subset": "medium"})


def test_orchestration_items_go_along_whole_and_routing_follows_the_tier(demo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    chosen = select_items(demo, {"subset": "mini", "orchestration": True})
    tier = {i.id for i in named_subset(tier_candidates(demo.items), "mini")}
    probes = [i for i in demo.scorable_items if i.track == "orchestration"]
    assert {i.id for i in probes} <= {i.id for i in chosen}
    derived = [i for i in chosen if i.meta.get("derived_from")]
    assert derived and all(i.meta["derived_from"] in tier for i in derived)
    assert {i.id for i in chosen if i.track != "orchestration"} == tier


# --- agreement with observed difficulty ---------------------------------------------------------------


def test_agreement_is_spearman_against_composite_difficulty(tmp_path):
    items = [crit(f"Q{k}", k + 1) for k in range(6)]
    heuristic = difficulties(items)
    rows = []
    for model, noise in (("m1", 0.0), ("m2", 0.1)):
        for item in items:  # the harder by the heuristic, the lower the score
            value = max(0.0, min(1.0, 1.0 - heuristic[item.id] * 0.8 - noise))
            rows.append({"model": model, "item_id": item.id, "status": "scored", "value": value})
    rows.append({"model": "m1", "item_id": "elsewhere/x/1", "status": "scored", "value": 0.3})
    rows.append({"model": "m3", "item_id": items[0].id, "status": "infra_error", "value": None})
    (tmp_path / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    observed = observed_difficulty(tmp_path)
    report = agreement(items, observed)
    assert report["overall"]["rho"] == pytest.approx(1.0) and report["overall"]["n"] == 6
    assert report["per_track"]["specialty"]["rho"] == pytest.approx(1.0)
    assert report["matched_items"] == 6 and report["observed_items"] == 7
    assert subsets_main(["--agreement", str(tmp_path / "missing")]) == 2
