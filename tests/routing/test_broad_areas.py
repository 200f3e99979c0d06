"""Broad areas (内科 / 精神科 ▸ system ▸ domain): how an item's area is found, the specialty/broad_area
buckets of the leaderboard, the manifest and the report, and the judge-free inventory."""

from __future__ import annotations

import dataclasses
import json
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from eval.inventory import main as inventory_main
from eval.inventory import render_markdown, take_inventory
from eval.items.broad_areas import AREA_NAMES, OTHER, broad_area_of
from eval.loaders import ItemFormatError, load_demo_suite, load_items
from routing.boards.leaderboard import build_buckets
from routing.build import BuildOptions, build
from routing.load.columns import write_columns
from routing.load.runs import LoadError, load_runs
from routing.nights.compare import distinct_groups
from tests.fake_pool import FakeOpenAIStarter, pool_run_cli, scores_by_item, write_fake_pool
from tests.fakes.mode_judge import judge_behaviour
from tests.routing.run_fixtures import JUDGE, row, write_run
from tests.shared_data import need_shared

INTERNISTS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "book-gold" / "internists.yaml"
FAST = BuildOptions(bootstrap=200, bt_rounds=20, elo_rounds=10, min_n=3, cv_folds=0)


def criteria_yaml(path: Path, records: list[dict[str, Any]]) -> Path:
    """A criteria-gold YAML file (the book-gold shape)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    questions = [
        {"question": f"问题{r['id']}", "expected_topics": ["要点"], "must_warn": [], "must_not": [], **r}
        for r in records
    ]
    path.write_text(yaml.safe_dump({"questions": questions}, allow_unicode=True), encoding="utf-8")
    return path


# --- how an item's area is found -----------------------------------------------------------------


def test_the_source_then_the_declared_system_then_other(tmp_path: Path) -> None:
    criteria_yaml(tmp_path / "gold" / "internists.yaml", [{"id": "i1", "expected_domain": ["psychiatry:sleep"]}])
    criteria_yaml(tmp_path / "gold" / "psy.yaml", [{"id": "p1", "expected_domain": ["cardiology:hypertension"]}])
    criteria_yaml(
        tmp_path / "psy" / "mixed.yaml", [{"id": "s1", "expected_domain": ["dermatology:acne"]}]
    )  # suite "psy"
    criteria_yaml(
        tmp_path / "gold" / "mixed.yaml",
        [
            {"id": "m1", "expected_domain": ["cardiology:cad"]},
            {"id": "m2", "expected_domain": ["depressive:mdd"]},
            {"id": "m3", "expected_domain": ["dermatology:acne"]},
        ],
    )
    areas = {item.local_id: broad_area_of(item) for item in load_items([tmp_path]).items}
    # the source outranks the system: an internists' sleep question is 内科, a psy file's blood pressure one 精神科
    assert areas == {"i1": "内科", "p1": "精神科", "s1": "精神科", "m1": "内科", "m2": "精神科", "m3": OTHER}
    assert AREA_NAMES == ("内科", "精神科")


def test_an_items_own_broad_area_outranks_everything(tmp_path: Path) -> None:
    criteria_yaml(
        tmp_path / "gold" / "psy.yaml",
        [{"id": "p1", "expected_domain": ["substance_use:alcohol"], "broad_area": "内科"}],
    )
    (tmp_path / "gold" / "extra.jsonl").write_text(
        json.dumps(
            {
                "id": "j1",
                "task": "psy",
                "track": "specialty",
                "gold_type": "criteria",
                "question": "孩子发烧怎么办？",
                "gold": {"expected_topics": ["补液"], "must_warn": [], "must_not": []},
                "domain": "pediatrics:fever",
                "meta": {"broad_area": "儿科"},
            },
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    areas = {item.local_id: broad_area_of(item) for item in load_items([tmp_path]).items}
    assert areas == {"p1": "内科", "j1": "儿科"}


@pytest.mark.parametrize("bad", ["内科/心内", "内 科", "", 3])
def test_a_broad_area_that_cannot_name_a_bucket_is_refused_with_its_place(tmp_path: Path, bad: Any) -> None:
    path = criteria_yaml(
        tmp_path / "gold" / "psy.yaml", [{"id": "p1", "expected_domain": ["depressive:mdd"], "broad_area": bad}]
    )
    with pytest.raises(ItemFormatError) as info:
        load_items([path])
    assert (
        str(path) in str(info.value)
        and "meta.broad_area" in str(info.value)
        and "without '/' or spaces" in str(info.value)
    )


def test_the_demo_criteria_items_declare_their_area() -> None:
    criteria = [item for item in load_demo_suite().items if item.gold_type == "criteria"]
    assert criteria and all("broad_area" in item.meta for item in criteria)
    assert sorted(broad_area_of(item) for item in criteria) == ["儿科", "内科", "内科", "内科", "内科"]


# --- the leaderboard, the manifest, the report ----------------------------------------------------


def area_rows() -> list[dict[str, Any]]:
    """Two models on criteria items of every kind of area: by source (internists, psy), recorded in the row
    (儿科; 内科 on a psy item), by system (a demo task's cardiology item), and none (other)."""
    items = [  # (item, task, suite, domain, recorded area)
        *((f"h{i}", "internists", "book-gold", "cardiology:hypertension", None) for i in range(3)),
        *((f"d{i}", "internists", "book-gold", "endocrine:diabetes_t2", None) for i in range(3)),
        *((f"m{i}", "psy", "book-gold", "depressive:mdd", None) for i in range(3)),
        *((f"a{i}", "psy", "book-gold", "substance_use:alcohol", None) for i in range(2)),
        ("a2", "psy", "book-gold", "substance_use:alcohol", "内科"),
        ("c0", "internal_medicine", "demo", "cardiology:cad", None),
        *((f"f{i}", "misc", "demo", "pediatrics:fever", "儿科") for i in range(2)),
        *((f"s{i}", "misc", "demo", "dermatology:acne", None) for i in range(2)),
    ]
    rows = []
    for model, base in (("alpha", 0.9), ("beta", 0.4)):
        for k, (item, task, suite, domain, area) in enumerate(items):
            value = base - 0.05 * (k % 3)
            r = row(
                model,
                item,
                task,
                "criteria",
                value,
                judge=JUDGE,
                passed=value >= 0.85,
                domain=domain,
                suite=suite,
                metrics={"total": value * 40},
            )
            rows.append({**r, "broad_area": area} if area else r)
    return rows


def means(rows: list[dict[str, Any]], model: str, area: str) -> tuple[int, float]:
    values = [r["value"] for r in rows if r["model"] == model and expected_area(r) == area]
    return len(values), float(np.mean(values))


def expected_area(r: dict[str, Any]) -> str:
    if r.get("broad_area"):
        return r["broad_area"]
    return {"internists": "内科", "psy": "精神科"}.get(r["task"]) or (
        "内科" if r["domain"].startswith("cardiology") else OTHER
    )


def test_broad_area_buckets_roll_up_recorded_and_derived_areas(tmp_path: Path) -> None:
    rows = area_rows()
    run = write_run(tmp_path / "run", rows)
    table = load_runs([run]).table
    assert table.names("broad_area") == (OTHER, "儿科", "内科", "精神科")
    buckets = {b.id: b for b in build_buckets(table, rounds=100)}
    areas = {b.name: b for b in buckets.values() if b.kind == "broad_area"}
    assert set(areas) == {"内科", "精神科", "儿科", OTHER} and all(b.family == "specialty" for b in areas.values())
    for name, bucket in areas.items():
        for cell in bucket.cells:
            n, mean = means(rows, cell.entrant.label, name)
            assert cell.n == n and cell.stats["score"].value == pytest.approx(mean)
    assert areas["内科"].n_items == 8 and areas["精神科"].n_items == 5  # the psy item recorded as 内科 moved
    # the system and domain buckets are unchanged by the new level: substance_use spans two areas, one bucket
    assert buckets["specialty/system/substance_use"].n_items == 3
    assert buckets["specialty/domain/cardiology:hypertension"].n_items == 3

    write_columns(run)  # the columnar copy carries the recorded areas and derives the rest alike
    columnar = load_runs([run]).table
    assert columnar.names("broad_area") == table.names("broad_area") and np.array_equal(
        columnar.broad_area, table.broad_area
    )


def test_a_table_built_without_the_column_derives_it_as_the_loader_does(tmp_path: Path) -> None:
    rows = [{k: v for k, v in r.items() if k != "broad_area"} for r in area_rows()]
    table = load_runs([write_run(tmp_path / "run", rows)]).table
    rebuilt = dataclasses.replace(
        table, broad_area=None, vocab={k: v for k, v in table.vocab.items() if k != "broad_area"}
    )
    assert rebuilt.names("broad_area") == table.names("broad_area") == (OTHER, "内科", "精神科")
    assert np.array_equal(rebuilt.broad_area, table.broad_area)


def test_a_row_whose_broad_area_cannot_name_a_bucket_is_named_by_line(tmp_path: Path) -> None:
    rows = area_rows()
    rows[4]["broad_area"] = "内科/心内"
    run = write_run(tmp_path / "run", rows)
    with pytest.raises(LoadError, match=r"scores\.jsonl:5: broad_area: must be a name without '/' or spaces"):
        load_runs([run])


def test_the_manifest_report_and_ratings_carry_the_broad_areas(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", area_rows())
    build([run], tmp_path / "out", FAST, calibration_dir=tmp_path / "no-calibrations")
    manifest = yaml.safe_load((tmp_path / "out" / "routing_manifest.yaml").read_text(encoding="utf-8"))
    routes = manifest["buckets"]
    for name in ("内科", "精神科", "儿科", OTHER):
        entry = routes[f"specialty/broad_area/{name}"]
        assert (entry["family"], entry["kind"], entry["name"]) == ("specialty", "broad_area", name)
    assert routes["specialty/broad_area/内科"]["routable"] and routes["specialty/broad_area/内科"]["model"] == "alpha"
    thin = routes["specialty/broad_area/儿科"]  # 2 items < min_n 3: its family serves it, not a system
    assert not thin["routable"] and thin["served_by"] == "specialty" and thin["chosen_by"] == "fallback"
    leaves = sum(1 for entry in routes.values() if entry["kind"] == "domain")
    assert manifest["families"]["specialty"]["buckets"] == leaves  # rollups are not a second vote
    assert manifest["families"]["specialty"]["items"] == 17

    board = json.loads((tmp_path / "out" / "leaderboard.json").read_text(encoding="utf-8"))
    kinds = [b["kind"] for b in board["families"]["specialty"]]
    assert kinds.count("broad_area") == 4 and kinds.index("broad_area") > kinds.index("system")
    scopes = {
        s["scope"] for s in json.loads((tmp_path / "out" / "pairwise.json").read_text(encoding="utf-8"))["scopes"]
    }
    assert "specialty/broad_area/精神科" in scopes
    assert "### broad_area: 内科" in (tmp_path / "out" / "leaderboard.md").read_text(encoding="utf-8")
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    heatmap = html[html.index('<h2 id="heatmap">') :]
    order = [heatmap.index(f"broad area: {name}") for name in ("内科", "精神科", "儿科", OTHER)]
    assert order == sorted(order) and order[-1] < heatmap.index("domain: cardiology:cad")  # the areas lead


def test_compare_tests_a_broad_area_only_when_it_adds_items_to_its_system_and_family() -> None:
    def groups(buckets: dict[str, list[str]]) -> set[str]:
        return {key[0] for key in distinct_groups({(b, "m", ""): ([], [], "m", items) for b, items in buckets.items()})}

    one = {
        "specialty/domain/cardiology:cad": ["a"],
        "specialty/system/cardiology": ["a"],
        "specialty/all": ["a"],
        "specialty/broad_area/内科": ["a"],
    }
    assert groups(one) == {"specialty/domain/cardiology:cad"}
    two = {
        "specialty/domain/cardiology:cad": ["a"],
        "specialty/domain/depressive:mdd": ["b"],
        "specialty/all": ["a", "b"],
        "specialty/broad_area/内科": ["a", "b"],
        "specialty/broad_area/精神科": ["c"],
    }
    assert groups(two) == {
        "specialty/domain/cardiology:cad",
        "specialty/domain/depressive:mdd",
        "specialty/all",
        "specialty/broad_area/精神科",
    }


# --- the inventory --------------------------------------------------------------------------------


def columns(text: str) -> int:
    """Terminal columns of a line: two for each CJK character."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def test_inventory_of_the_demo_suite(capsys: pytest.CaptureFixture[str]) -> None:
    assert inventory_main([]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].startswith(
        "Specialty inventory (judge-free): 5 scorable specialty items in 2 broad areas, 5 systems, 5 domains"
    )
    assert lines[1].startswith("Not counted: ") and "not in the specialty family" in lines[1]
    tree = [line for line in lines[3:] if line.strip() and not line.startswith("Thin")][:12]
    assert tree[0].split() == ["内科", "4", "thin"] and tree[1].split() == ["digestive", "1", "thin"]
    assert tree[2].split() == ["digestive:gi", "1", "thin"] and tree[9].split() == ["儿科", "1", "thin"]
    assert len({columns(line.removesuffix("  thin")) for line in tree}) == 1  # counts line up, 内科 taking 4 columns
    assert "Thin buckets: 12 of 12 buckets have fewer than min_n = 5 items" in text
    assert "  specialty/broad_area/儿科" in text and "  specialty/domain/pediatrics:fever" in text

    assert inventory_main(["--min-n", "1"]) == 0
    assert "No thin bucket: every bucket has at least 1 items." in capsys.readouterr().out
    assert inventory_main(["--md", "--min-n", "2"]) == 0
    md = capsys.readouterr().out
    assert "| broad area | system | domain | items |" in md and "| 内科 |  |  | 4 |" in md
    assert "|  |  | digestive:gi | **1** (thin) |" in md and "| specialty/system/pediatrics | 1 |" in md


def test_inventory_escapes_names_and_fails_without_specialty_items(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = criteria_yaml(
        tmp_path / "gold" / "psy.yaml", [{"id": "p1", "expected_domain": ["depressive:mdd"], "broad_area": "a|b"}]
    )
    md = render_markdown(take_inventory(load_items([path]).items, min_n=5, sources=[str(path)]))
    assert "| a\\|b |  |  | **1** (thin) |" in md and "| specialty/broad_area/a\\|b | 1 |" in md
    exam = tmp_path / "exam" / "items.jsonl"
    exam.parent.mkdir()
    exam.write_text(
        json.dumps(
            {
                "id": "e1",
                "task": "sc",
                "track": "exam",
                "gold_type": "single_choice",
                "question": "选？",
                "options": {"A": "甲", "B": "乙"},
                "gold": "A",
            },
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    assert inventory_main([str(exam)]) == 1
    assert "no scorable specialty (criteria gold) item" in capsys.readouterr().err
    assert inventory_main(["--data", str(tmp_path / "nope")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        inventory_main(["--help"])
    assert info.value.code == 0 and "--min-n" in capsys.readouterr().out


def test_inventory_of_the_internists_gold(capsys: pytest.CaptureFixture[str]) -> None:
    need_shared(INTERNISTS)
    inventory = take_inventory(load_items([INTERNISTS.parent]).items, min_n=5)
    assert inventory.items == 183 and [node.name for node in inventory.tree] == ["内科"]
    assert (inventory.count("broad_area"), inventory.count("system"), inventory.count("domain")) == (1, 17, 92)
    cardiology = next(node for node in inventory.tree[0].children if node.name == "cardiology")
    assert cardiology.items == 26 and not cardiology.thin
    thin = dict(inventory.thin)
    assert thin["specialty/domain/cardiology:cad"] == 3 and "specialty/domain/cardiology:hypertension" not in thin
    assert thin["specialty/system/molecular"] == 1 and "specialty/broad_area/内科" not in thin
    assert inventory_main(["--data", str(INTERNISTS.parent)]) == 0
    assert "183 scorable specialty items in 1 broad area, 17 systems, 92 domains" in capsys.readouterr().out


# --- a run writes each row's area -----------------------------------------------------------------


def test_a_run_writes_each_rows_broad_area_and_builds_its_buckets(
    tmp_path: Path, fake_openai: FakeOpenAIStarter
) -> None:
    gold = tmp_path / "suite"
    criteria_yaml(
        gold / "psy.yaml",
        [
            {"id": "p1", "expected_domain": ["depressive:mdd"]},
            {"id": "p2", "expected_domain": ["anxiety:gad"], "broad_area": "内科"},
        ],
    )
    (gold / "exam.jsonl").write_text(
        json.dumps(
            {
                "id": "e1",
                "task": "sc",
                "track": "exam",
                "gold_type": "single_choice",
                "question": "选哪个？",
                "options": {"A": "甲", "B": "乙"},
                "gold": "B",
                "domain": "cardiology:cad",
            },
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    base_url = fake_openai(judge_behaviour("good"))
    pool = write_fake_pool(tmp_path / "pool.yaml", base_url, (("alpha", 32),), max_retries=0)
    out = pool_run_cli(
        "--pool", str(pool), "--data", str(gold), "--out", str(tmp_path / "run"), cache=tmp_path / "cache"
    )
    assert out.returncode == 0, out.stderr
    rows = scores_by_item(tmp_path / "run")
    assert {item: r["broad_area"] for item, r in rows.items()} == {"p1": "精神科", "p2": "内科", "e1": "内科"}
    board = json.loads((tmp_path / "run" / "leaderboard.json").read_text(encoding="utf-8"))
    assert {b["id"] for b in board["families"]["specialty"] if b["kind"] == "broad_area"} == {
        "specialty/broad_area/内科",
        "specialty/broad_area/精神科",
    }
