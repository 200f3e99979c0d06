"""Hard subsets per (family, task): size rule, continuous scores, Full vs Hard, and how many truly hard
items the selection recovers on simulated scores with a known latent difficulty."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from pool.items_source import read_id_list
from routing.boards.hard import CONTINUOUS, PASS_FAIL, hard_recovery_simulation, hard_size
from routing.build import BuildOptions, build, main
from tests.routing.run_fixtures import JUDGE, row, write_run

FAST = BuildOptions(bootstrap=50, bt_rounds=5, elo_rounds=3)


def build_hard_yaml(tmp_path: Path, rows: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
    run = write_run(tmp_path / "run", rows)
    build([run], None, BuildOptions(**{**FAST.__dict__, **options}))
    return yaml.safe_load((run / "hard.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("n", "expected"),
    [(0, 0), (1, 0), (2, 1), (3, 1), (8, 4), (10, 5), (12, 5), (20, 5), (40, 10), (400, 100), (1000, 250)],
)
def test_default_size_is_a_fraction_and_never_the_whole_group(n: int, expected: int) -> None:
    assert hard_size(n) == expected
    assert hard_size(n) < max(n, 1)


def test_size_cap_minimum_and_fraction_bounds() -> None:
    assert hard_size(400, cap=30) == 30 and hard_size(400, 0.1) == 40 and hard_size(12, min_items=2) == 3
    assert hard_size(10, 0.9) == 9  # a proper subset even when the fraction asks for all
    for bad in (0.0, 1.0, -0.5, float("nan")):
        with pytest.raises(ValueError, match="fraction"):
            hard_size(10, bad)
    for bad in ("0", "1", "1.5", "nan"):
        with pytest.raises(SystemExit) as info:
            main(["--run", "x", "--hard-fraction", bad])
        assert info.value.code == 2


def test_same_task_name_in_two_families_makes_two_groups(tmp_path: Path) -> None:
    rows = []
    for model, p in (("strong", 0.9), ("weak", 0.4)):
        for i in range(20):
            ok = float((i * 7 + len(model)) % 10 < 10 * p)
            rows.append(row(model, f"exam_{i}", "shared", "single_choice", ok, passed=bool(ok)))
            rows.append(row(model, f"route_{i}", "shared", "routing", ok, passed=bool(ok), domain="cardiology:cad"))
    hard = build_hard_yaml(tmp_path, rows)
    assert set(hard["tasks"]) == {"exam/shared", "orchestration/shared"}
    for group_id, group in hard["tasks"].items():
        assert group_id == f"{group['family']}/{group['task']}" and group["items"] == 20 and group["selected"] == 5
        assert all(("exam_" if group["family"] == "exam" else "route_") in i for i in group["item_ids"])
        assert group["score"] == PASS_FAIL
    flat = [i for g in hard["tasks"].values() for i in g["item_ids"]]
    assert hard["item_ids"] == flat and len(set(flat)) == 10
    assert {i["family"] for i in hard["items"]} == {"exam", "orchestration"}
    for entry in hard["full_vs_hard"].values():
        assert set(entry["tasks"]) == {"exam/shared", "orchestration/shared"}


def test_continuous_scores_rank_items_that_pass_fail_cannot(tmp_path: Path) -> None:
    """Every judge total is below the pass mark, so pass/fail makes all items equally hard (D = 1);
    the value still orders them, and the chosen items are the lowest-scoring ones, not the first ids."""
    rows = []
    n = 24
    ease = np.random.default_rng(3).permutation(n) / (2 * n)  # item i's mean score, a shuffled ramp below 0.5
    for model, shift in (("a", 0.0), ("b", 0.1), ("c", 0.2)):
        for i in range(n):
            total = round(40 * (ease[i] + shift))
            rows.append(
                row(
                    model,
                    f"q{i:02d}",
                    "MedCOT",
                    "reference",
                    total / 40,
                    passed=False,
                    judge=JUDGE,
                    metrics={"total": total},
                )
            )
    hard = build_hard_yaml(tmp_path, rows)
    group = hard["tasks"]["capability/MedCOT"]
    assert group["score"] == CONTINUOUS and group["selected"] == 6
    truly_hardest = {f"synthetic/MedCOT/q{i:02d}" for i in np.argsort(ease)[:6]}
    assert set(group["item_ids"]) == truly_hardest
    for entry in hard["full_vs_hard"].values():
        assert entry["macro"]["gap"] > 0.15


def test_simulation_recovers_most_truly_hard_items() -> None:
    """Measured over seeds 0–199 (400 items, 6 models, 25%): continuous precision mean 0.86, min 0.77;
    pass/fail mean 0.77, min 0.55; chance 0.25. The bounds below leave room for numeric drift only."""
    results = [hard_recovery_simulation(seed, n_items=400, n_models=6, fraction=0.25) for seed in range(20)]
    continuous = np.array([r["precision_continuous"] for r in results])
    pass_fail = np.array([r["precision_pass_fail"] for r in results])
    assert all(r["k"] == 100 and r["chance"] == 0.25 for r in results)
    assert continuous.min() >= 0.75 and continuous.mean() >= 0.82
    assert continuous.mean() > pass_fail.mean() + 0.05
    assert all(r["gap_min"] > 0.05 for r in results)  # every model scores lower on the hard subset


def test_simulation_is_reproducible_and_small_tasks_still_recover() -> None:
    assert hard_recovery_simulation(7, 100, 4, 0.25) == hard_recovery_simulation(7, 100, 4, 0.25)
    small = [hard_recovery_simulation(seed, n_items=40, n_models=6, fraction=0.25) for seed in range(50)]
    assert np.mean([r["precision_continuous"] for r in small]) >= 0.75
    assert all(r["gap_min"] > 0 for r in small)


def test_built_hard_yaml_recovers_latent_hard_items_and_feeds_subset(tmp_path: Path) -> None:
    """End to end: simulated judge scores through routing.build; hard.yaml's ids are read by pool.run."""
    rng = np.random.default_rng(11)
    n, abilities = 80, {"m1": -0.5, "m2": 0.0, "m3": 0.5, "m4": 1.0}
    latent = rng.normal(0.0, 1.5, size=n)
    rows = []
    for model, ability in abilities.items():
        logits = ability - latent + rng.normal(0.0, 1.0, size=n)
        for i in range(n):
            total = int(np.round(40 / (1 + np.exp(-logits[i]))))
            rows.append(
                row(
                    model,
                    f"q{i:03d}",
                    "MedCOT",
                    "reference",
                    total / 40,
                    passed=total >= 34,
                    judge=JUDGE,
                    metrics={"total": total},
                )
            )
    hard = build_hard_yaml(tmp_path, rows)
    group = hard["tasks"]["capability/MedCOT"]
    assert group["selected"] == 20 < group["items"] == n
    truth = {f"synthetic/MedCOT/q{i:03d}" for i in np.argsort(-latent)[:20]}
    assert len(truth & set(group["item_ids"])) / 20 >= 0.7
    for entry in hard["full_vs_hard"].values():
        assert entry["tasks"]["capability/MedCOT"]["gap"] > 0
    assert read_id_list(tmp_path / "run" / "hard.yaml") == hard["item_ids"] == group["item_ids"]
    md = (tmp_path / "run" / "leaderboard.md").read_text(encoding="utf-8")
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "| MedCOT | capability | continuous | 80 | 20 | m1 |" in md
    assert 'class="hard-groups"' in page and "hardest 25%" in page


def test_cap_limits_every_group(tmp_path: Path) -> None:
    rows = [
        row(m, f"i{i}", "single_choice", "single_choice", float(i % 3 == 0), passed=i % 3 == 0)
        for m in ("x", "y")
        for i in range(100)
    ]
    hard = build_hard_yaml(tmp_path, rows, hard_n=7)
    assert hard["tasks"]["exam/single_choice"]["selected"] == 7 and hard["method"]["cap"] == 7
    # 66 items every model missed share D = 1: 7 are chosen (first ids), 59 tie at the cut
    assert hard["tasks"]["exam/single_choice"]["ties_at_cut"] == 59
