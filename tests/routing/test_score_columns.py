"""A run's scores as columns (routing.load.columns): the columnar copy and the JSONL reader give the same
table, the same judged rows and the same build; a stale, partial or broken copy never changes a number.

The build's outputs are also compared with ``tests/data/columns_golden.json``: what the row-by-row
loader (before the columns) built from the same seeded runs, so a change in how runs are read and
merged cannot move a decision, an interval or the validation block unnoticed.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

import routing.load.columns as columns_module
from routing.build import BuildOptions, build
from routing.load.columns import COLUMNS_DIRNAME, read_columns, write_columns
from routing.load.runs import LoadError, digest_scores, load_runs
from tests.routing.run_fixtures import JUDGE, OTHER_JUDGE, identity, row, synthetic_rows, tables_equal, write_run

GOLDEN = Path(__file__).parents[1] / "data" / "columns_golden.json"
FAST = BuildOptions(bootstrap=200, bt_rounds=20, elo_rounds=10)


def fixture_runs(root: Path) -> list[Path]:
    """Three nights: later rows replace earlier ones, an infra error never replaces a result, a
    second judge and a second identity of one name, derived items, re-judged verdicts, a sub-metric
    that first appears late, and judge verdict details the reliability block audits."""
    first = synthetic_rows({"alpha": 0.85, "beta": 0.6, "gamma": 0.35}, n_items=14, seed=3)
    for i, r in enumerate(first):
        if r["judge"] is not None and r["status"] == "scored":
            r["details"]["parse_stage"] = ("strict", "repaired", "patterns")[i % 3]
            if i % 7 == 0:
                r["details"]["rejudge"] = {
                    "perturbation": "reorder",
                    "total": r["metrics"].get("total", 20.0) - 2,
                    "passed": not r["passed"],
                }
    second = synthetic_rows({"alpha": 0.8, "beta": 0.65}, n_items=6, seed=4, infra_rate=0.3)
    second += [
        row(
            identity("alpha", temperature=0.7),
            f"MedCOT_{i}",
            "MedCOT",
            "reference",
            0.5 + i / 40,
            judge=OTHER_JUDGE,
            passed=i % 2 == 0,
            metrics={"total": 20.0 + i, "safety": 8.0},
        )
        for i in range(8)
    ]
    second += [
        {
            **row(
                "beta", f"route_{i}_decision", "decision_recognition", "tool_decision", float(i % 2), passed=i % 2 == 1
            ),
            "source_item_id": f"synthetic/specialty_routing/route_{i}",
        }
        for i in range(6)
    ]
    third = synthetic_rows({"gamma": 0.5}, n_items=5, seed=5)
    for r in third:
        if r["task"] == "single_choice":
            r["metrics"] = {"late_metric": 0.25}
        if r["judge"] is not None:
            r["details"]["judge_error"] = {"error": "judge_no_verdict", "reason": "judge call failed: timeout"}
            r.update(status="infra_error", value=None, passed=None)
    runs = [
        ("night-1", "2026-11-29T02:00:00Z", first),
        ("night-2", "2026-11-30T02:00:00Z", second),
        ("night-3", "2026-12-01T02:00:00Z", third),
    ]
    return [write_run(root / name, rows, run_id=name, created_at=at) for name, at, rows in runs]


def comparable(out_dir: Path, root: Path) -> dict[str, Any]:
    """The build's decisions and numbers, without the time it ran or the folder (``root``) it read."""

    def read(name: str) -> Any:
        text = (out_dir / name).read_text(encoding="utf-8")
        doc = yaml.safe_load(text) if name.endswith(".yaml") else json.loads(text)
        return json.loads(json.dumps(doc, ensure_ascii=False).replace(str(root), "<root>"))

    leaderboard, manifest, pairwise = read("leaderboard.json"), read("routing_manifest.yaml"), read("pairwise.json")
    for doc in (leaderboard, manifest, pairwise):
        doc.pop("generated_at", None)
        for run in doc.get("runs", []):
            run.pop("dir", None)
    return {"leaderboard": leaderboard, "manifest": manifest, "pairwise": pairwise}


def assert_close(got: Any, want: Any, where: str = "", tol: float = 0.0) -> None:
    """Equal, floats within ``tol`` (relative to the larger, at least 1)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), f"{where}: keys {sorted(set(got) ^ set(want))}"
        for key in want:
            assert_close(got[key], want[key], f"{where}.{key}", tol)
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: length {len(got)} != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_close(g, w, f"{where}[{i}]", tol)
    elif isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        assert math.isclose(got, want, rel_tol=tol, abs_tol=tol), f"{where}: {got!r} != {want!r}"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def test_the_columnar_copy_loads_the_same_table_and_judged_rows(tmp_path: Path) -> None:
    runs = fixture_runs(tmp_path)
    from_jsonl = load_runs(runs)
    for run in runs:
        write_columns(run)
        assert (run / COLUMNS_DIRNAME / "meta.json").is_file()
    from_columns = load_runs(runs)
    tables_equal(from_jsonl.table, from_columns.table)
    assert from_jsonl.superseded == from_columns.superseded > 0
    assert from_jsonl.kept_apart == from_columns.kept_apart and from_jsonl.kept_apart
    assert from_jsonl.judged == from_columns.judged and from_jsonl.judged
    for run in runs:
        a, b = digest_scores(run), digest_scores(run)
        shutil.rmtree(run / COLUMNS_DIRNAME)
        c = digest_scores(run)  # streamed from scores.jsonl
        assert a.entrants == c.entrants and a.judges_by_family == c.judges_by_family
        assert a.values.keys() == c.values.keys() and all(np.array_equal(a.values[k], c.values[k]) for k in a.values)
        assert b.entrants == a.entrants


def test_a_judged_run_is_stored_in_table_order_and_loads_as_from_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each night alone (the single-run path) and the three merged: a copy in table order, one left in
    file order (as version 3 wrote every copy, and as a run with a repeated key keeps it) and
    ``scores.jsonl`` give the same table, the same judged rows in the same order, and the same digest."""
    runs = fixture_runs(tmp_path)
    expected = [load_runs([run]) for run in runs]
    merged = load_runs(runs)
    for run in runs:
        write_columns(run)
    metas = [json.loads((run / COLUMNS_DIRNAME / "meta.json").read_text(encoding="utf-8")) for run in runs]
    assert [m["row_order"] for m in metas] == ["table"] * 3 and all(m["version"] == 4 for m in metas)
    lines = [read_columns(run).columns["line"] for run in runs]  # type: ignore[union-attr]
    assert any(bool((np.diff(line) < 0).any()) for line in lines), "no fixture night was reordered"
    for run, want in zip(runs, expected, strict=True):
        got = load_runs([run])
        tables_equal(got.table, want.table)
        assert got.judged == want.judged
    got = load_runs(runs)
    tables_equal(got.table, merged.table)
    assert got.judged == merged.judged and got.superseded == merged.superseded
    monkeypatch.setattr(columns_module, "_store_in_table_order", lambda folder, meta: False)
    for run in runs:
        write_columns(run)
        meta_path = run / COLUMNS_DIRNAME / "meta.json"
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        assert meta["row_order"] == "file"
        meta_path.write_text(json.dumps({**meta, "version": 3}), encoding="utf-8")
        assert read_columns(run) is not None
    got = load_runs(runs)
    tables_equal(got.table, merged.table)
    assert got.judged == merged.judged


def test_the_build_equals_the_row_by_row_build_and_the_columnar_one(tmp_path: Path) -> None:
    runs = fixture_runs(tmp_path / "runs")
    build(runs, tmp_path / "jsonl", FAST, calibration_dir=tmp_path / "no-calibrations")
    for run in runs:
        write_columns(run)
    build(runs, tmp_path / "columns", FAST, calibration_dir=tmp_path / "no-calibrations")
    jsonl, columnar = comparable(tmp_path / "jsonl", tmp_path), comparable(tmp_path / "columns", tmp_path)
    assert columnar == jsonl
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert_close(jsonl["manifest"], golden["manifest"], "manifest")
    assert_close(jsonl["leaderboard"], golden["leaderboard"], "leaderboard")
    # Bradley–Terry: Newton fits to a gradient of 1e-12, the row-by-row build stopped L-BFGS at ~1e-8 (< 0.02 Elo).
    assert_close(jsonl["pairwise"], golden["pairwise"], "pairwise", tol=2e-5)


def test_a_copy_older_than_scores_jsonl_is_not_read(tmp_path: Path) -> None:
    run = fixture_runs(tmp_path)[0]
    write_columns(run)
    lines = (run / "scores.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["value"] = 0.125 if first["status"] == "scored" else None
    (run / "scores.jsonl").write_text(
        "\n".join([json.dumps(first, ensure_ascii=False), *lines[1:]]) + "\n", encoding="utf-8"
    )
    assert read_columns(run) is None
    table = load_runs([run]).table
    assert np.array_equal(table.value, load_runs([run]).table.value, equal_nan=True)
    if first["status"] == "scored":
        assert 0.125 in table.value


def test_an_incomplete_copy_is_ignored_and_a_broken_one_is_named(tmp_path: Path) -> None:
    run = fixture_runs(tmp_path)[0]
    expected = load_runs([run]).table
    write_columns(run)
    (run / COLUMNS_DIRNAME / "value.bin").write_bytes(b"\0" * 8)  # short: a copy cut off
    assert read_columns(run) is None
    tables_equal(load_runs([run]).table, expected)
    write_columns(run)
    (run / COLUMNS_DIRNAME / "meta.json").unlink()  # never finished
    tables_equal(load_runs([run]).table, expected)
    write_columns(run)
    task = run / COLUMNS_DIRNAME / "task.bin"
    task.write_bytes(np.full(task.stat().st_size // 4, 999, dtype="<i4").tobytes())
    with pytest.raises(
        LoadError, match=r"task\.bin: a code outside its vocabulary; rebuild with python -m routing.columns"
    ):
        load_runs([run])


def test_a_copy_written_in_chunks_equals_one_built_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = fixture_runs(tmp_path)
    expected = load_runs(runs)
    monkeypatch.setattr(columns_module, "CHUNK_ROWS", 7)  # the late sub-metric first appears chunks after the start
    for run in runs:
        write_columns(run)
    got = load_runs(runs)
    tables_equal(got.table, expected.table)
    assert got.judged == expected.judged and "late_metric" in got.table.metrics


def test_a_bad_row_leaves_no_copy_and_the_duplicate_check_still_holds(tmp_path: Path) -> None:
    run = write_run(
        tmp_path / "bad",
        [
            row("a", "x", "single_choice", "single_choice", 1.0, passed=True),
            {**row("a", "y", "single_choice", "single_choice", 0.0), "value": 2.0},
        ],
    )
    with pytest.raises(LoadError, match=r"scores\.jsonl:2: value"):
        write_columns(run)
    assert not (run / COLUMNS_DIRNAME).exists() and not list(run.glob(".*building"))
    twice = write_run(tmp_path / "twice", [row("a", "x", "single_choice", "single_choice", 1.0, passed=True)] * 2)
    write_columns(twice)
    with pytest.raises(
        LoadError,
        match=r"scores\.jsonl:2: duplicate row for model 'a', item 'synthetic/single_choice/x' .*first at line 1",
    ):
        load_runs([twice])
    with pytest.raises(LoadError, match=r"duplicate row"):
        digest_scores(twice)


def test_the_cli_writes_a_copy_for_an_old_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(
        tmp_path / "old",
        [
            row("a", "x", "single_choice", "single_choice", 1.0, passed=True, judge=None),
            row("b", "x", "reference", "reference", 0.5, judge=JUDGE, metrics={"total": 20.0}),
        ],
    )
    assert columns_module.main([str(run)]) == 0
    assert "scores.columns" in capsys.readouterr().out
    assert read_columns(run) is not None and len(read_columns(run)) == 2
    assert columns_module.main([str(tmp_path / "missing")]) == 2


def test_the_validation_computed_in_a_forked_child_equals_the_one_computed_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large build computes its routing validation beside the pairwise ratings (routing.stats.forked): same files."""
    import routing.build as build_module

    runs = fixture_runs(tmp_path / "runs")
    build(runs, tmp_path / "inline", FAST, calibration_dir=tmp_path / "no-calibrations")
    forks = []
    monkeypatch.setattr(build_module, "worth_forking", lambda rows: forks.append(rows) or True)
    build(runs, tmp_path / "forked", FAST, calibration_dir=tmp_path / "no-calibrations")
    assert forks and comparable(tmp_path / "forked", tmp_path) == comparable(tmp_path / "inline", tmp_path)
