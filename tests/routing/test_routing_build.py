"""routing.build end to end on synthetic run directories: files, manifest, ties, identities, errors."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

import routing.build
from routing.boards.leaderboard import build_buckets
from routing.build import OUTPUTS, BuildOptions, build, main
from routing.decide.manifest import bucket_route
from routing.load.runs import LoadError, digest_scores, load_runs
from routing.load.table import common_items_mask
from tests.routing.run_fixtures import (
    JUDGE,
    OTHER_JUDGE,
    identity,
    make_run,
    row,
    synthetic_rows,
    write_run,
)

REPO = Path(__file__).resolve().parents[2]
FAST = BuildOptions(bootstrap=200, bt_rounds=20, elo_rounds=10)


def quick(run_dirs: list[Path], out: Path | None = None, **kw: Any) -> dict[str, Any]:
    options = BuildOptions(**{**FAST.__dict__, **kw})
    build(run_dirs, out, options)
    target = out or run_dirs[0]
    return yaml.safe_load((target / "routing_manifest.yaml").read_text(encoding="utf-8"))


def test_cli_writes_all_six_files_and_exits_zero(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "routing.build",
            "--run",
            str(run),
            "--out",
            str(out),
            "--bootstrap",
            "200",
            "--bt-rounds",
            "20",
            "--elo-rounds",
            "10",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stdout and "buckets" in proc.stdout
    for name in OUTPUTS:
        assert (out / name).stat().st_size > 0, name
    leaderboard = json.loads((out / "leaderboard.json").read_text())
    assert set(leaderboard["families"]) == {"capability", "specialty", "orchestration", "robustness", "exam", "tcm"}
    pairwise = json.loads((out / "pairwise.json").read_text())
    assert {s["level"] for s in pairwise["scopes"]} == {"family", "bucket"}
    hard = yaml.safe_load((out / "hard.yaml").read_text())
    assert hard["item_ids"] and set(hard["item_ids"]) <= {
        json.loads(line)["item_id"] for line in (run / "scores.jsonl").open()
    }
    assert "<table" in (out / "report.html").read_text()


def test_cli_help_and_input_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0 and "--common" in capsys.readouterr().out
    assert main(["--run", str(tmp_path / "nope")]) == 2
    assert "nope: not a directory" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["--run", str(empty)]) == 2
    assert f"{empty / 'summary.json'}: not found" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["--run", str(empty), "--min-n", "0"])
    assert info.value.code == 2


def test_an_out_folder_that_cannot_be_made_is_input_and_a_failed_write_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = make_run(tmp_path / "run")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    fast = ["--bootstrap", "200", "--bt-rounds", "20", "--elo-rounds", "10"]
    assert main(["--run", str(run), "--out", str(blocker / "out"), *fast]) == 2
    err = capsys.readouterr().err
    assert f"--out {blocker / 'out'}: cannot create the folder" in err

    def full_disk(path: Path, *args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(routing.build, "atomic_write_text", full_disk)
    assert main(["--run", str(run), "--out", str(tmp_path / "out"), *fast]) == 1
    err = capsys.readouterr().err
    assert "error: writing the routing files failed: [Errno 28] No space left on device" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("{not json", ":3: invalid JSON"),
        (json.dumps(row("m", "x", "t", "single_choice", 1.5)), ":3: value: a scored row needs a number in [0, 1]"),
        (json.dumps({**row("m", "x", "t", "single_choice", 1.0), "model_identity": None}), ":3: model_identity:"),
        (json.dumps({**row("m", "x", "t", "single_choice", 1.0), "family": "vibes"}), ":3: family: must be one of"),
    ],
)
def test_broken_scores_line_is_named_path_line_field(
    tmp_path: Path, line: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_run(
        tmp_path / "run", [row("m", "a", "t", "single_choice", 1.0), row("m", "b", "t", "single_choice", 0.0)]
    )
    with (run / "scores.jsonl").open("a") as f:
        f.write(line + "\n")
    assert main(["--run", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"{run / 'scores.jsonl'}{expected}" in err, err
    assert not (run / "routing_manifest.yaml").exists()


def test_duplicate_row_in_one_file_is_an_error(tmp_path: Path) -> None:
    same = row("m", "a", "t", "single_choice", 1.0)
    run = write_run(tmp_path / "run", [same, row("m", "b", "t", "single_choice", 0.0), same])
    with pytest.raises(LoadError, match=r"scores.jsonl:3: duplicate row .* \(first at line 1\)"):
        load_runs([run])
    with pytest.raises(LoadError, match=r"scores.jsonl:3: duplicate row .* \(first at line 1\)"):
        digest_scores(run)  # the nightly index's one-pass reader says the same


def test_manifest_round_trips_through_safe_load(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    manifest = quick([run])
    text = (run / "routing_manifest.yaml").read_text(encoding="utf-8")
    assert yaml.safe_load(yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True)) == manifest
    assert yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True, width=120) == text
    assert manifest["schema_version"] == 2 and manifest["kind"] == "medpool-routing-manifest"
    assert manifest["pool_fingerprints"] == ["pool-fp-1"] and manifest["data_fingerprints"] == ["data-fp-1"]
    assert manifest["parameters"]["min_n"] == 5 and manifest["default"]["model"] == "alpha"
    assert manifest["orchestrator"]["model"] == "alpha" and "capability" in manifest["orchestrator"]["components"]
    for model in ("alpha", "beta", "gamma"):
        assert (
            manifest["models"][model]["median_latency_s"] > 0
            and manifest["models"][model]["median_completion_tokens"] > 0
        )
    for bucket_id, bucket in manifest["buckets"].items():
        assert bucket_id.startswith(f"{bucket['family']}/{bucket['kind']}/")
        assert all(set(c) >= {"model", "n", "score", "ci"} for c in bucket["candidates"])
    assert manifest["buckets"]["tcm/task/syndrome_classification"]["metric"] == "macro_f1"


def bucket_rows(values: dict[str, list[float | None]], task: str = "single_choice") -> list[dict[str, Any]]:
    rows = []
    for model, scores in values.items():
        for i, v in enumerate(scores):
            if v is not None:
                rows.append(row(model, f"q{i}", task, "single_choice", v, passed=v >= 0.5))
    return rows


def routes_for(
    tmp_path: Path, rows: list[dict[str, Any]], min_n: int = 5, floor: float | None = None, **kw: Any
) -> dict[str, Any]:
    loaded = load_runs([write_run(tmp_path / "run", rows)])
    buckets = build_buckets(loaded.table, rounds=500, seed=0, **kw)
    return {b.id: bucket_route(b, min_n, 3, floor) for b in buckets}


def test_clear_winner_is_decisive(tmp_path: Path) -> None:
    route = routes_for(tmp_path, bucket_rows({"strong": [1.0] * 10, "weak": [0.0] * 10}))["exam/task/single_choice"]
    assert route["routable"] and route["decisive"] and route["tied_top"] == ["strong"] and route["model"] == "strong"
    assert (
        route["chosen_by"] == "paired_test"
        and route["method"] == "mcnemar_midp"
        and route["served_by"] == "exam/task/single_choice"
    )
    assert [c["model"] for c in route["candidates"]] == ["strong", "weak"] and [
        c["verdict"] for c in route["candidates"]
    ] == ["leader", "worse"]
    lo, hi = route["candidates"][0]["ci"]  # a unanimous sample still gets a Wilson interval, never zero-width
    assert route["candidates"][0]["ci_method"] == "wilson" and hi == 1.0 and 0.6 < lo < 0.7
    assert route["candidates"][1]["n_paired"] == 10 and route["candidates"][1]["p_holm"] < 0.05


def test_overlapping_intervals_are_a_tie(tmp_path: Path) -> None:
    pattern = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    route = routes_for(tmp_path, bucket_rows({"a": pattern, "b": pattern[1:] + pattern[:1], "c": [0.0] * 10}))[
        "exam/task/single_choice"
    ]
    assert route["routable"] and not route["decisive"]
    assert sorted(route["tied_top"]) == ["a", "b"]  # c's CI [0, 0] does not reach the leader's


def test_insufficient_data_exactly_below_min_n(tmp_path: Path) -> None:
    rows = bucket_rows({"a": [1.0] * 4, "b": [0.0] * 4}, task="tiny") + bucket_rows(
        {"a": [1.0] * 5, "b": [1.0] * 3}, task="edge"
    )
    routes = routes_for(tmp_path, rows)
    tiny, edge = routes["exam/task/tiny"], routes["exam/task/edge"]
    assert tiny["insufficient_data"] and not tiny["routable"] and tiny["candidates"] == [] and tiny["tied_top"] == []
    assert "no model has n >= 5 scored items (most: 4)" in tiny["reason"]
    assert not edge["insufficient_data"] and edge["routable"] and edge["tied_top"] == ["a"]  # n = 5 = min_n is enough
    assert edge["excluded"] == [
        {
            "model": "b",
            "judge": None,
            "n": 3,
            "score": 1.0,
            "ci": [0.309988, 1.0],
            "ci_method": "wilson",
            "median_latency_s": 1.0,
            "mean_completion_tokens": 100.0,
            "mean_cost": None,  # unpriced
            "reason": "n=3 < min_n=5",
        }
    ]


def test_floor_makes_a_bucket_unroutable_without_calling_it_insufficient(tmp_path: Path) -> None:
    route = routes_for(tmp_path, bucket_rows({"a": [0.0, 1.0] * 5}), floor=0.8)["exam/task/single_choice"]
    assert not route["insufficient_data"] and not route["routable"] and "floor 0.8" in route["reason"]


def test_infra_errors_are_excluded_and_counted_per_cell(tmp_path: Path) -> None:
    rows = bucket_rows({"a": [1.0] * 6, "b": [0.0] * 6})
    rows += [row("b", f"q{i}", "single_choice", "single_choice", None, status="infra_error") for i in (6, 7)]
    loaded = load_runs([write_run(tmp_path / "run", rows)])
    (bucket,) = build_buckets(loaded.table, rounds=100)
    cells = {c.entrant.label: c for c in bucket.cells}
    assert (cells["b"].n, cells["b"].infra_errors, cells["b"].stats["score"].value) == (6, 2, 0.0)
    assert (cells["a"].n, cells["a"].infra_errors) == (6, 0)


def test_common_keeps_only_items_every_model_scored(tmp_path: Path) -> None:
    rows = bucket_rows({"a": [1.0] * 8, "b": [0.0] * 8})
    rows = [r for r in rows if not (r["model"] == "b" and r["item_id"].endswith("/q7"))]
    rows.append(row("b", "q6", "other", "single_choice", None, status="infra_error"))
    rows += [row("b", "q6", "single_choice", "single_choice", None, status="infra_error") for _ in range(1)]
    rows = [
        r
        for r in rows
        if not (r["model"] == "b" and r["item_id"].endswith("single_choice/q6") and r["status"] == "scored")
    ]
    table = load_runs([write_run(tmp_path / "run", rows)]).table
    keep = common_items_mask(table)
    kept = {
        (table.entrants[e].label, table.items[i]) for e, i in zip(table.entrant[keep], table.item[keep], strict=True)
    }
    assert {item.rsplit("/", 1)[1] for _, item in kept} == {
        f"q{i}" for i in range(6)
    }  # q6 (infra for b), q7 (missing for b) gone
    (bucket,) = [b for b in build_buckets(table, keep, rounds=100) if b.name == "single_choice"]
    assert {c.entrant.label: c.n for c in bucket.cells} == {"a": 6, "b": 6}
    assert {c.entrant.label: c.n for c in build_buckets(table, rounds=100)[1].cells} == {"a": 8, "b": 6}


def test_different_model_identities_are_never_merged(tmp_path: Path) -> None:
    local = write_run(
        tmp_path / "r1", [row(identity("m"), f"q{i}", "t", "single_choice", 1.0) for i in range(6)], run_id="r1"
    )
    remote = write_run(
        tmp_path / "r2",
        [row(identity("m", backend="ollama"), f"q{i}", "t", "single_choice", 0.0) for i in range(6)],
        run_id="r2",
        created_at="2026-11-30T10:00:00Z",
    )
    manifest = quick([local, remote], out=tmp_path / "out")
    route = manifest["buckets"]["exam/task/t"]
    assert sorted(c["model"] for c in route["candidates"]) == ["m [backend=llamacpp]", "m [backend=ollama]"]
    assert route["tied_top"] == ["m [backend=llamacpp]"] and route["decisive"]
    assert set(manifest["models"]) == {"m [backend=ollama]", "m [backend=llamacpp]"}


def test_different_judges_are_never_merged_but_the_same_key_is_superseded(tmp_path: Path) -> None:
    def judged(judge: dict[str, str], value: float) -> list[dict[str, Any]]:
        return [row("m", f"q{i}", "MedCOT", "reference", value, judge=judge) for i in range(6)]

    r1 = write_run(tmp_path / "r1", judged(JUDGE, 0.9), run_id="r1", created_at="2026-11-28T00:00:00Z")
    r2 = write_run(tmp_path / "r2", judged(OTHER_JUDGE, 0.2), run_id="r2", created_at="2026-11-29T00:00:00Z")
    r3 = write_run(tmp_path / "r3", judged(JUDGE, 0.7), run_id="r3", created_at="2026-11-30T00:00:00Z")
    loaded = load_runs([r3, r1, r2])
    assert loaded.superseded == 6 and [r.run_id for r in loaded.runs] == ["r1", "r2", "r3"]
    (bucket,) = build_buckets(loaded.table, rounds=100)
    scores = {c.entrant.label: c.stats["score"].value for c in bucket.cells}
    assert scores == {
        f"m | judge {OTHER_JUDGE['model']}@{OTHER_JUDGE['backend']}#{OTHER_JUDGE['prompt_version']}": pytest.approx(
            0.2
        ),
        f"m | judge {JUDGE['model']}@{JUDGE['backend']}#{JUDGE['prompt_version']}": pytest.approx(0.7),
    }
    # --since drops the older runs entirely
    assert [r.run_id for r in load_runs([r1, r2, r3], since="2026-11-29T12:00:00Z").runs] == ["r3"]
    with pytest.raises(LoadError, match="every run was created earlier"):
        load_runs([r1], since="2027-01-01")


def test_an_infra_error_in_a_later_run_does_not_replace_a_result(tmp_path: Path) -> None:
    r1 = write_run(
        tmp_path / "r1", [row("m", "q0", "t", "single_choice", 1.0)], run_id="r1", created_at="2026-11-28T00:00:00Z"
    )
    r2 = write_run(tmp_path / "r2", [row("m", "q0", "t", "single_choice", None, status="infra_error")], run_id="r2")
    table = load_runs([r1, r2]).table
    assert list(table.value) == [1.0] and list(table.status) == [0]


def test_hostile_names_are_escaped_in_the_report(tmp_path: Path) -> None:
    hostile = "<script>alert(1)</script>"
    rows = synthetic_rows({"evil": 0.7, "good": 0.5}, n_items=6, names={"evil": hostile})
    for r in rows:
        r["details"]["answer"] = '<img src=x onerror="alert(2)">'
        if r["domain"]:
            r["domain"] = r["domain"] + '"><script>alert(3)</script>'
    run = write_run(tmp_path / "run", rows)
    build([run], None, FAST)
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "<script" not in page.lower() and "onerror=" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>" not in (run / "leaderboard.md").read_text(encoding="utf-8")
    manifest = yaml.safe_load((run / "routing_manifest.yaml").read_text(encoding="utf-8"))
    assert hostile in manifest["models"]


def test_full_vs_hard_and_hard_yaml_shape(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", n_items=20)
    build([run], None, BuildOptions(**{**FAST.__dict__, "hard_n": 5}))
    hard = yaml.safe_load((run / "hard.yaml").read_text(encoding="utf-8"))
    assert hard["kind"] == "medpool-hard-subset" and hard["method"]["lam"] == 0.5
    assert all(t["selected"] == min(5, t["items"]) for t in hard["tasks"].values())
    assert len(hard["item_ids"]) == sum(t["selected"] for t in hard["tasks"].values()) == len(set(hard["item_ids"]))
    assert hard["models"] == ["alpha", "beta", "gamma"]
    for entry in hard["full_vs_hard"].values():
        macro = entry["macro"]
        assert macro["gap"] == pytest.approx(macro["full"] - macro["hard"], abs=2e-6)
    difficulties = [item["difficulty"] for item in hard["items"] if item["task"] == "single_choice"]
    assert difficulties == sorted(difficulties, reverse=True)
    assert np.all(np.diff([i["difficulty"] for i in hard["items"] if i["task"] == "MedCOT"]) <= 0)
