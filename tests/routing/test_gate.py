"""The gate's word per model and family (``routing.compare``): regressed / no change / inconclusive with the minimum
detectable drop, ``--fail-on-inconclusive``, and the sequential gate's state across nights; plus a test-sized
version of ``python -m bench.gate``'s simulations (known truth, seeded)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench.gate.sims import continuous_calibration, fixed_n, n_for_mdd, sequential_rates
from routing.nights.compare import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REGRESSION, compare_runs, main
from routing.nights.compare_md import render_compare_md
from routing.nights.gate.detectable import MDD_MCNEMAR, minimum_detectable_drop
from routing.nights.gate.sequential import STATE_FILENAME
from tests.routing.run_fixtures import row, write_run


def night(root: Path, name: str, values: dict[str, np.ndarray], day: int) -> Path:
    """A run folder ROOT/NAME: every model answers the same pass/fail single-choice items (exam family)."""
    rows = [
        row(model, f"q{i}", "single_choice", "single_choice", float(v), passed=bool(v))
        for model, vs in values.items()
        for i, v in enumerate(vs)
    ]
    return write_run(root / name, rows, run_id=name, created_at=f"2026-11-{day:02d}T02:00:00Z")


def flipped(values: np.ndarray, worse: int, better: int) -> np.ndarray:
    """``values`` with the first ``worse`` right answers made wrong and the first ``better`` wrong ones right."""
    out = values.copy()
    out[np.flatnonzero(out == 1)[:worse]] = 0
    out[np.flatnonzero(values == 0)[:better]] = 1
    return out


def answers(n: int, p: float, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).random(n) < p).astype(float)


def gate_of(doc: dict, model: str) -> dict:
    return next(g for g in doc["gate"] if g["model"] == model and g["family"] == "exam")


def test_too_few_items_to_see_the_drop_is_inconclusive_not_no_change(tmp_path: Path) -> None:
    a = answers(30, 0.8, 1)
    base = night(tmp_path, "n1", {"alpha": a}, 1)
    new = night(tmp_path, "n2", {"alpha": flipped(a, 1, 1)}, 2)
    doc = compare_runs(base, new).to_json()
    g = gate_of(doc, "alpha")
    assert g["status"] == "inconclusive" and g["n"] == 30 and g["mdd"] > doc["min_drop"] == 0.05
    assert g["bucket"] == "exam/task/single_choice"  # the bucket holding the family's items
    d = doc["deltas"][0]
    assert d["status"] == "inconclusive" and d["mdd"] == g["mdd"] and d["mdd_method"] == MDD_MCNEMAR
    assert "- exam: **inconclusive** alpha (MDD " in render_compare_md(doc)
    assert main([str(base), str(new), "--out", str(tmp_path / "o1")]) == EXIT_OK
    assert main([str(base), str(new), "--out", str(tmp_path / "o2"), "--fail-on-inconclusive"]) == EXIT_INCONCLUSIVE
    out = tmp_path / "o3"
    assert main([str(base), str(new), "--out", str(out), "--fail-on-inconclusive", "--min-drop", "0.6"]) == EXIT_OK
    assert gate_of(json.loads((out / "compare.json").read_text()), "alpha")["status"] == "no change"


def test_many_items_and_nothing_changed_is_no_change(tmp_path: Path) -> None:
    a = answers(1000, 0.7, 2)
    base = night(tmp_path, "n1", {"alpha": a, "beta": 1 - a}, 1)
    new = night(tmp_path, "n2", {"alpha": flipped(a, 10, 10), "beta": flipped(1 - a, 5, 5)}, 2)
    doc = compare_runs(base, new).to_json()
    for model in ("alpha", "beta"):
        g = gate_of(doc, model)
        assert g["status"] == "no change" and g["n"] == 1000 and g["mdd"] <= 0.05
    assert main([str(base), str(new), "--fail-on-inconclusive", "--fail-on-regression"]) == EXIT_OK


def test_a_real_drop_is_regressed_and_regression_wins_over_inconclusive(tmp_path: Path) -> None:
    a, b = answers(300, 0.8, 3), answers(12, 0.5, 4)
    base = night(tmp_path, "n1", {"alpha": a}, 1)
    new = night(tmp_path, "n2", {"alpha": flipped(a, 60, 0)}, 2)
    doc = compare_runs(base, new).to_json()
    assert gate_of(doc, "alpha")["status"] == "regressed"
    assert main([str(base), str(new), "--fail-on-regression", "--fail-on-inconclusive"]) == EXIT_REGRESSION
    # a second model too small to see anything: inconclusive; the regression's exit code still wins
    base2 = night(tmp_path, "m1", {"alpha": a, "small": b}, 1)
    new2 = night(tmp_path, "m2", {"alpha": flipped(a, 60, 0), "small": b}, 2)
    assert gate_of(compare_runs(base2, new2).to_json(), "small")["status"] == "inconclusive"
    assert main([str(base2), str(new2), "--fail-on-inconclusive"]) == EXIT_INCONCLUSIVE
    assert main([str(base2), str(new2), "--fail-on-inconclusive", "--fail-on-regression"]) == EXIT_REGRESSION


def test_the_mdd_matches_the_tests_own_power() -> None:
    """At the n where the exact McNemar power of a 10-point drop is 0.8, the MDD of data at that drop is ≈ 0.10."""
    n = n_for_mdd(0.10)
    rng = np.random.default_rng(5)
    before = (rng.random(n) < 0.65).astype(float)
    after = (rng.random(n) < 0.55).astype(float)
    mdd, how = minimum_detectable_drop(before, after, 0.05 / 3)
    assert how == MDD_MCNEMAR and 0.085 < mdd < 0.115


def test_the_sequential_state_survives_three_nights_and_an_alarm_stays(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    rng = np.random.default_rng(6)
    draws = [(rng.random(300) < p).astype(float) for p in (0.7, 0.7, 0.7, 0.4, 0.4)]
    nights = [night(root, f"night-{i + 1}", {"alpha": v}, i + 1) for i, v in enumerate(draws)]
    state_path = root / STATE_FILENAME

    def step(i: int, *extra: str) -> tuple[int, dict, dict]:
        code = main([str(nights[i - 1]), str(nights[i]), "--sequential", "--reference-nights", "2", *extra])
        doc = json.loads((nights[i] / "compare.json").read_text())
        return code, doc["sequential"], json.loads(state_path.read_text())

    _, seq, state = step(1)
    entry = state["entries"]["exam/task/single_choice\t" + next(iter(state["entries"])).split("\t")[1] + "\t"]
    assert [x[0] for x in entry["nights"]] == ["night-1", "night-2"]
    assert seq["comparisons"][0]["status"] == "inconclusive" and seq["comparisons"][0]["monitored_nights"] == 0
    _, seq, state = step(2)
    assert seq["comparisons"][0]["monitored_nights"] == 1
    _, seq, state = step(2)  # the same comparison again: night-3 is not counted twice
    assert seq["comparisons"][0]["monitored_nights"] == 1
    assert len(next(iter(state["entries"].values()))["nights"]) == 3
    code, seq, state = step(3, "--fail-on-regression")
    word = seq["comparisons"][0]
    assert word["status"] == "regressed" and word["alarm_run"] == "night-4" and code == EXIT_REGRESSION
    code, seq, state = step(4, "--fail-on-regression")  # night 5 equals night 4's level: the nightly test is quiet
    doc = json.loads((nights[4] / "compare.json").read_text())
    assert not doc["regressions"] and seq["comparisons"][0]["status"] == "regressed" and code == EXIT_REGRESSION
    assert "alarm since night-4" in (nights[4] / "compare.md").read_text()


def test_a_broken_state_file_is_bad_input_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = answers(50, 0.7, 7)
    base, new = night(tmp_path, "n1", {"alpha": a}, 1), night(tmp_path, "n2", {"alpha": a}, 2)
    (tmp_path / STATE_FILENAME).write_text("{not json", encoding="utf-8")
    assert main([str(base), str(new), "--sequential"]) == 2
    assert STATE_FILENAME in capsys.readouterr().err


def test_simulated_gate_small() -> None:
    """A test-sized ``python -m bench.gate`` (the full sizes and figures: bench/README.md)."""
    healthy = fixed_n(60, 300, 0.0, 0.05, seed=1)
    assert healthy["false_alarm_rate"] <= 0.1 and healthy["statuses"].get("inconclusive", 0) > 0.8
    calibrated = continuous_calibration(100, 0.05, 0.2, seed=4)
    assert 0.65 <= calibrated["power"] <= 0.95 and abs(calibrated["mean_mdd"] - 0.05) < 0.01
    looks = sequential_rates(60, 30, 300, 0.0, 31, 7, 0.05, seed=5)
    assert looks["sequential_false_alarm_rate"] <= 0.05 < looks["fixed_n_false_alarm_rate"]


def test_the_nightly_advances_the_sequential_gate_and_says_inconclusive(tmp_path: Path) -> None:
    from routing.nights.nightly import main as nightly

    root = tmp_path / "runs"
    a = answers(30, 0.8, 8)
    first, second = night(root, "night-1", {"alpha": a}, 1), night(root, "night-2", {"alpha": flipped(a, 1, 1)}, 2)
    assert nightly([str(first), "--root", str(root), "--sequential"]) == EXIT_OK  # nothing earlier to compare
    args = [str(second), "--root", str(root), "--sequential", "--reference-nights", "2", "--fail-on-inconclusive"]
    assert nightly(args) == EXIT_INCONCLUSIVE
    state = json.loads((root / STATE_FILENAME).read_text())
    assert [x[0] for x in next(iter(state["entries"].values()))["nights"]] == ["night-1", "night-2"]
    assert json.loads((second / "compare.json").read_text())["sequential"]["comparisons"][0]["reference_nights"] == 2
