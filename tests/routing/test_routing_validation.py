"""routing.decide.validation: cross-validated routed score vs the best single model and the per-item oracle."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from routing.boards.leaderboard import build_buckets
from routing.build import BuildOptions, build, main
from routing.decide.manifest import build_manifest
from routing.decide.validation import (
    assign_folds,
    cross_validate,
    manifest_decider,
    oracle_scores,
    routed_model,
)
from routing.load.runs import load_runs
from tests.routing.run_fixtures import make_run, row, write_run

PARAMS = BuildOptions(bootstrap=200).parameters()
TASKS = ("t0", "t1", "t2")


def exam_rows(
    skill: Mapping[str, Mapping[str, float]],
    n_items: int = 30,
    seed: int = 0,
    infra: Mapping[str, set[str]] | None = None,
    sd: float = 0.2,
) -> list[dict[str, Any]]:
    """Continuous exam scores (cloze char-F1): model m scores ~ Normal(skill[m][task], sd) on each of
    n_items items per task; ``infra[m]`` lists item ids (``t0/q3``) where m has an infra error instead."""
    rng = np.random.default_rng(seed)
    rows = []
    for model, per_task in skill.items():
        for task, mean in per_task.items():
            for i in range(n_items):
                if f"{task}/q{i}" in (infra or {}).get(model, set()):
                    rows.append(row(model, f"q{i}", task, "cloze", None, status="infra_error"))
                else:
                    value = float(np.clip(rng.normal(mean, sd), 0.0, 1.0))
                    rows.append(row(model, f"q{i}", task, "cloze", value, passed=value >= 0.5))
    return rows


# each model best on its own task; the others often beat it on single items (the oracle gap is not all routing's)
SPECIALISTS = {
    "a": {"t0": 0.85, "t1": 0.5, "t2": 0.5},
    "b": {"t0": 0.5, "t1": 0.85, "t2": 0.5},
    "c": {"t0": 0.5, "t1": 0.5, "t2": 0.85},
}
# a is best everywhere on average, but b and c win single items, so the oracle gap is real
DOMINANT = {"a": dict.fromkeys(TASKS, 0.8), "b": dict.fromkeys(TASKS, 0.65), "c": dict.fromkeys(TASKS, 0.5)}


def validate(tmp_path: Path, rows: list[dict[str, Any]], seed: int = 0, k: int = 5, **params: Any) -> dict[str, Any]:
    loaded = load_runs([write_run(tmp_path / f"run-{seed}-{k}", rows)])
    parameters = {**PARAMS, **params}
    decide = manifest_decider(loaded.table, parameters, rounds=200, seed=seed)
    return cross_validate(loaded.table, None, decide, k=k, seed=seed, rounds=200, min_n=parameters["min_n"])


def test_specialists_routing_beats_the_best_single_model_and_recovers_most_of_the_gap(tmp_path: Path) -> None:
    exam = validate(tmp_path, exam_rows(SPECIALISTS))["families"]["exam"]
    assert exam["items"] == exam["evaluated"] == 90 and exam["folds"] == 5
    assert exam["routed_to"] == {"a": 30, "b": 30, "c": 30} and exam["route_sources"] == {"bucket": 90}
    assert exam["routed"]["value"] == pytest.approx(0.85, abs=0.04)
    assert exam["best_single"]["value"] == pytest.approx(0.62, abs=0.05)  # one specialist: (0.85 + 0.5 + 0.5) / 3
    assert exam["lift"]["ci"][0] > 0.1  # the whole interval well above zero
    assert exam["oracle"]["value"] > exam["routed"]["value"] > exam["best_single"]["value"]
    assert 0.75 < exam["gap_recovered"]["value"] < 1.0 and exam["gap_recovered"]["ci"][0] > 0.6
    assert exam["missing"] == {"no_route": 0, "routed_unscored": 0, "best_single_unscored": 0}


def test_one_dominant_model_routing_equals_the_best_single_model(tmp_path: Path) -> None:
    exam = validate(tmp_path, exam_rows(DOMINANT))["families"]["exam"]
    assert exam["routed_to"] == {"a": 90} and exam["best_single_models"] == {"a": 5}
    assert exam["routed"] == exam["best_single"]
    assert exam["lift"] == {"value": 0.0, "ci": [0.0, 0.0]}
    assert exam["oracle"]["value"] > exam["best_single"]["value"] + 0.01  # a real gap, none of it recovered
    assert exam["gap_recovered"] == {"value": 0.0, "ci": [0.0, 0.0]}


def test_no_gap_to_recover_is_null_and_says_why(tmp_path: Path) -> None:
    exam = validate(tmp_path, exam_rows({"solo": dict.fromkeys(TASKS, 0.7)}))["families"]["exam"]
    gap = exam["gap_recovered"]
    assert gap["value"] is None and gap["ci"] == [None, None] and "no gap to recover" in gap["reason"]
    assert exam["routed"] == exam["best_single"] == exam["oracle"]


def test_deterministic_for_a_seed(tmp_path: Path) -> None:
    rows = exam_rows(SPECIALISTS, n_items=12)
    first = validate(tmp_path, rows, seed=3)
    assert validate(tmp_path / "again", rows, seed=3) == first
    assert validate(tmp_path, rows, seed=4)["families"]["exam"]["routed"] != first["families"]["exam"]["routed"]


def test_folds_are_seeded_balanced_and_stratified() -> None:
    strata = np.repeat([0, 1, 2, 3], [23, 7, 3, 12])
    folds = assign_folds(strata, 5, seed=0)
    assert np.array_equal(folds, assign_folds(strata, 5, seed=0)) and not np.array_equal(
        folds, assign_folds(strata, 5, seed=1)
    )
    sizes = np.bincount(folds, minlength=5)
    assert sizes.max() - sizes.min() <= 1
    for stratum, m in enumerate([23, 7, 3, 12]):
        per_fold = np.bincount(folds[strata == stratum], minlength=5)
        assert per_fold.min() >= m // 5 and per_fold.max() <= -(-m // 5)


def test_infra_errors_of_the_routed_model_are_missing_and_counted(tmp_path: Path) -> None:
    dead = {f"t0/q{i}" for i in range(5)}  # a, t0's specialist, failed five of its own items
    exam = validate(tmp_path, exam_rows(SPECIALISTS, infra={"a": dead}))["families"]["exam"]
    assert exam["missing"]["routed_unscored"] == 5 and exam["missing"]["no_route"] == 0
    assert exam["evaluated"] == 85  # no other model failed; the reasons may overlap (a is also often the best single)
    assert exam["missing"]["best_single_unscored"] <= 5
    assert exam["routed_to"]["a"] == 30  # routed there, but no score: missing, not zero


def test_unroutable_buckets_use_the_manifest_fallback(tmp_path: Path) -> None:
    rows = exam_rows(SPECIALISTS, n_items=30) + exam_rows({"a": {"tiny": 0.2}, "b": {"tiny": 0.8}}, n_items=4, seed=1)
    exam = validate(tmp_path, rows)["families"]["exam"]
    # tiny has 4 items: at most 4 on the training folds, below min_n = 5 in every fold: the family serves it
    assert exam["route_sources"] == {"bucket": 90, "family": 4} and exam["items"] == 94


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"model": "m", "served_by": "exam/task/t"}, ("m", "bucket")),
        ({"model": "s", "served_by": "specialty/system/cardiology"}, ("s", "parent")),
        ({"model": "f", "served_by": "exam"}, ("f", "family")),
        ({"model": "d", "served_by": "default"}, ("d", "default")),
        ({"model": None, "served_by": None}, (None, "none")),
    ],
)
def test_routed_model_follows_served_by(entry: dict[str, Any], expected: tuple[str | None, str]) -> None:
    assert routed_model({"buckets": {"exam/task/t": entry}, "default": {"model": "d"}}, "exam/task/t") == expected
    assert routed_model({"buckets": {}, "default": {"model": "d"}}, "exam/task/t") == ("d", "default")


def test_families_never_mix(tmp_path: Path) -> None:
    rows = exam_rows(SPECIALISTS)
    rng = np.random.default_rng(5)
    for model, p in (("a", 0.2), ("b", 0.2), ("c", 0.95)):  # c is the best router, though the worst at exams on average
        rows += [row(model, f"r{i}", "specialty_routing", "routing", float(rng.random() < p)) for i in range(40)]
    families = validate(tmp_path, rows)["families"]
    assert set(families) == {"exam", "orchestration"}
    assert families["orchestration"]["items"] == 40 and families["exam"]["items"] == 90
    assert families["orchestration"]["best_single_models"] == {"c": 5} and families["orchestration"]["routed_to"] == {
        "c": 40
    }


def test_oracle_is_the_best_score_any_model_got() -> None:
    scores = np.array([[0.1, np.nan, 0.4], [np.nan, np.nan, np.nan], [0.0, 0.0, 0.0]])
    assert np.array_equal(oracle_scores(scores), [0.4, np.nan, 0.0], equal_nan=True)


@pytest.mark.parametrize("n_items", [6, 20])
def test_the_lean_rebuild_routes_every_bucket_as_build_manifest_does(tmp_path: Path, n_items: int) -> None:
    """The k rebuilds leave out columns and decisions no route reads: every bucket entry, and the
    family and default decisions a bucket falls back to, must equal build_manifest's."""
    table = load_runs([make_run(tmp_path / "run", n_items=n_items)]).table
    decide = manifest_decider(table, PARAMS, rounds=200, seed=0)
    fell_back = 0
    for keep in (np.ones(len(table), dtype=bool), table.item % 3 != 0, table.item % 5 == 0):
        full = build_manifest(table, build_buckets(table, keep, rounds=200), [], PARAMS)
        lean = decide(keep)
        assert lean["buckets"] == {b: entry for b, entry in full["buckets"].items() if entry["kind"] != "broad_area"}
        assert all(lean["families"][f] == full["families"][f] for f in lean["families"])
        if lean["default"]:
            assert lean["default"] == full["default"]
        fell_back += sum(not entry["routable"] for entry in lean["buckets"].values())
    assert fell_back  # the comparison covered fallbacks too


def test_build_writes_the_validation_block_and_the_report_section(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", exam_rows(SPECIALISTS, n_items=15))
    build([run], None, BuildOptions(bootstrap=200, bt_rounds=20, elo_rounds=10))
    manifest = yaml.safe_load((run / "routing_manifest.yaml").read_text(encoding="utf-8"))
    validation = manifest["validation"]
    assert (validation["k"], validation["seed"], validation["bootstrap"]) == (5, 0, 200)
    assert set(validation["families"]["exam"]) >= {
        "items",
        "evaluated",
        "routed",
        "best_single",
        "oracle",
        "lift",
        "gap_recovered",
        "missing",
        "best_single_models",
        "routed_to",
    }
    page = (run / "report.html").read_text(encoding="utf-8")
    assert 'id="validation"' in page and "routing pays" in page
    build([run], tmp_path / "off", BuildOptions(bootstrap=200, bt_rounds=20, elo_rounds=10, cv_folds=0))
    assert "validation" not in yaml.safe_load((tmp_path / "off" / "routing_manifest.yaml").read_text(encoding="utf-8"))
    with pytest.raises(SystemExit) as info:
        main(["--run", str(run), "--cv-folds", "1"])
    assert info.value.code == 2


def test_an_undecided_bucket_takes_its_parents_pick_when_that_model_is_tied():
    from routing.decide.manifest import serve_unroutable

    def entry(name, model, tied, chosen="tie_rule", kind="task"):
        return {
            "family": "tcm",
            "kind": kind,
            "name": name,
            "routable": True,
            "served_by": f"tcm/{kind}/{name}",
            "model": model,
            "tied_top": tied,
            "chosen_by": chosen,
        }

    routes = {
        "tcm/task/a": entry("a", "fast", ["fast", "strong"]),  # undecided: parent's pick is tied
        "tcm/task/b": entry("b", "fast", ["fast", "other"]),  # undecided: parent's pick not tied
        "tcm/task/c": entry("c", "fast", ["fast"], chosen="paired_test"),
    }  # decided: left alone
    serve_unroutable(routes, {"tcm": {"model": "strong", "routable": True}}, {"model": "strong"})
    assert routes["tcm/task/a"]["model"] == "strong" and routes["tcm/task/a"]["chosen_by"] == "parent_tie_break"
    assert routes["tcm/task/a"]["tie_broken_by"] == "tcm" and routes["tcm/task/a"]["served_by"] == "tcm/task/a"
    assert routes["tcm/task/b"]["model"] == "fast" and routes["tcm/task/b"]["chosen_by"] == "tie_rule"
    assert routes["tcm/task/c"]["model"] == "fast" and routes["tcm/task/c"]["chosen_by"] == "paired_test"
