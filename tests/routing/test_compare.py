"""routing.nights.compare, routing.nights.trends and the report's night-over-night sections on three synthetic nights
(tests/nightly_fixtures.py): a regression in one bucket, a manifest change, a judge change."""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from routing.nights.compare import (
    EXIT_INPUT,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_WRITE,
    compare_runs,
    main,
    write_comparison,
)
from routing.nights.decision_changes import decision_changes
from routing.nights.history import append_run, read_index
from routing.nights.nightly import after_run
from routing.nights.trends import build_trends, sparkline_svg, trend_data
from routing.report.page import splice_section
from tests.nightly_fixtures import HOSTILE, make_night, make_nights
from tests.routing.browser_fixtures import chromium_or_skip, dump_dom

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return make_nights(tmp_path_factory.mktemp("runs"))


def delta(doc: dict[str, Any], bucket: str, model: str) -> dict[str, Any]:
    return next(d for d in doc["deltas"] if d["bucket"] == bucket and d["model"] == model)


def test_a_regression_in_one_bucket_is_found_and_nothing_else(nights: list[Path]) -> None:
    comparison = compare_runs(nights[0], nights[1])
    doc = comparison.to_json()
    worse = delta(doc, "exam/task/single_choice", "alpha")
    assert worse["direction"] == "regression" and worse["significant"] and worse["test"] == "mcnemar_midp"
    assert worse["n"] == 30 and worse["diff"] < -0.5 and worse["ci"][1] < 0 and worse["p_holm"] < 0.05
    assert [(d["bucket"], d["model"]) for d in doc["deltas"] if d["significant"]] == [
        ("exam/task/single_choice", "alpha")
    ]
    assert not [
        d for d in doc["deltas"] if d["bucket"] in ("exam/all", "specialty/system/endocrine")
    ]  # same items as a leaf
    assert (
        delta(doc, "specialty/all", "beta")["n"] == 30 and delta(doc, "specialty/system/cardiology", "beta")["n"] == 20
    )
    unchanged = delta(doc, "capability/task/MedCOT", "beta")
    assert (
        unchanged["diff"] == 0 and unchanged["p_value"] == 1 and unchanged["ci"][0] < 0 < unchanged["ci"][1]
    )  # never zero-width
    assert all(e["comparable"] for e in doc["families"].values())
    assert comparison.regressed(0.0) and comparison.regressed(0.5) and not comparison.regressed(0.95)
    assert doc["models"] == {"added": [], "removed": [], "changed": []}


def test_the_manifest_change_is_listed_with_its_reason(nights: list[Path]) -> None:
    changes = {c["id"]: c for c in compare_runs(nights[0], nights[1]).to_json()["decisions"]["changes"]}
    bucket = changes["exam/task/single_choice"]
    assert (bucket["base_model"], bucket["new_model"]) == ("alpha", "beta")
    assert bucket["reason"] == "new leader beta (was alpha)"
    assert "capability/task/MedCOT" not in changes


def test_a_judge_change_makes_judged_families_not_comparable(nights: list[Path]) -> None:
    doc = compare_runs(nights[1], nights[2]).to_json()
    for family in ("capability", "specialty"):
        assert not doc["families"][family]["comparable"]
        assert (
            "judge changed" in doc["families"][family]["reason"]
            and "not comparable" in doc["families"][family]["reason"]
        )
        assert not [d for d in doc["deltas"] if d["family"] == family]
    assert {d["family"] for d in doc["deltas"]} == {
        "orchestration",
        "robustness",
        "exam",
        "tcm",
    }  # judge-free still compare
    assert doc["models"]["changed"] == [
        {
            "name": HOSTILE,
            "base": doc["models"]["changed"][0]["base"],
            "new": doc["models"]["changed"][0]["new"],
            "fields": ["temperature"],
        }
    ]
    assert not [d for d in doc["deltas"] if d["model"] == HOSTILE]  # a changed identity is never paired
    assert doc["regressions"] == 0 and doc["new"]["cached"]["share"] == 1.0 and doc["base"]["cached"]["share"] == 0.5
    assert doc["cache"]["cached_in_new"] == doc["cache"]["paired_answers"] > 0


def test_a_judge_calibration_change_is_not_comparable(nights: list[Path], tmp_path: Path) -> None:
    pair = [shutil.copytree(nights[0], tmp_path / name) for name in ("a", "b")]
    for run_dir, sha in zip(pair, ("set-1", "set-2"), strict=True):
        board = json.loads((run_dir / "leaderboard.json").read_text())
        board["judge_reliability"]["judges"] = {
            "judge-qwen": {
                "calibration": [
                    {
                        "judge_key": "judge-qwen@llamacpp#a1b2c3d4",
                        "calibrated_at": "2026-11-01T00:00:00Z",
                        "set": {"sha256": sha},
                        "overall": {"f1": 0.8},
                    }
                ]
            }
        }
        (run_dir / "leaderboard.json").write_text(json.dumps(board))
    doc = compare_runs(pair[0], pair[1]).to_json()
    assert "judge calibration changed" in doc["families"]["capability"]["reason"]
    assert doc["families"]["exam"]["comparable"]


def test_compare_md_is_short_and_says_what_rests_on_cached_answers(nights: list[Path], tmp_path: Path) -> None:
    json_path, md_path = write_comparison(tmp_path / "out", compare_runs(nights[0], nights[1]))
    assert json.loads(json_path.read_text())["kind"] == "medpool-compare"
    text = md_path.read_text()
    assert len(text.splitlines()) <= 40
    assert text.splitlines()[2].startswith("**REGRESSION**")
    assert "cached answers: base 0% (0/810), new 50% (405/810)" in text
    assert "exam/task/single_choice · alpha" in text and "new leader beta (was alpha)" in text
    _, md_path = write_comparison(tmp_path / "out2", compare_runs(nights[1], nights[2]))
    text = md_path.read_text()
    assert len(text.splitlines()) <= 40 and "NOT COMPARABLE capability" in text
    assert "cached in both runs" in text and HOSTILE not in text and "&lt;script&gt;" in text


def test_cli_exit_codes(nights: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, new = str(nights[0]), str(nights[1])
    out = ["--out", str(tmp_path / "cli")]
    assert main([base, new, *out]) == EXIT_OK  # a regression alone does not fail without the flag
    assert main([base, new, *out, "--fail-on-regression"]) == EXIT_REGRESSION
    assert main([base, new, *out, "--fail-on-regression", "0.95"]) == EXIT_OK
    assert main([str(nights[1]), str(nights[2]), *out, "--fail-on-regression"]) == EXIT_OK
    capsys.readouterr()
    assert main([str(tmp_path / "nowhere"), new, *out]) == EXIT_INPUT
    assert "not a directory" in capsys.readouterr().err
    proc = subprocess.run(
        [sys.executable, "-m", "routing.compare", base, new, *out, "--fail-on-regression", "0.1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == EXIT_REGRESSION, proc.stderr
    assert "REGRESSION" in proc.stdout


def test_an_unusable_out_or_root_is_bad_input_and_a_failed_write_is_named(
    nights: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import routing.nights.compare
    from routing.nights.nightly import main as nightly_main

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    base, new = str(nights[0]), str(nights[1])
    assert main([base, new, "--out", str(blocker / "cmp")]) == EXIT_INPUT
    assert f"--out {blocker / 'cmp'}: cannot create the folder" in capsys.readouterr().err
    assert nightly_main([new, "--root", str(blocker / "root")]) == EXIT_INPUT
    assert f"the runs root {blocker / 'root'}: cannot create the folder" in capsys.readouterr().err

    def full_disk(path: Path, *args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(routing.nights.compare, "atomic_write_text", full_disk)
    assert main([base, new, "--out", str(tmp_path / "cmp")]) == EXIT_WRITE
    err = capsys.readouterr().err
    assert "error: writing the comparison failed: [Errno 28] No space left on device" in err


def test_trends_follow_the_index_and_break_on_identity_and_judge_changes(nights: list[Path], tmp_path: Path) -> None:
    root = tmp_path / "index"
    for night in nights:
        append_run(root, night)
    entries = read_index(root)
    trends = build_trends(entries, entries[-1])
    assert [r["run_id"] for r in trends["runs"]] == ["night-1", "night-2", "night-3"]
    series = {(s["model"], s["family"]): s["points"] for s in trends["series"]}
    exam = series[("alpha", "exam")]
    assert exam[0]["value"] > 0.8 and exam[1]["value"] == exam[2]["value"] == 0.0
    assert [p["segment"] for p in exam] == [0, 0, 0]
    assert (
        all(p["ci"][0] < p["value"] or p["value"] == 0 for p in exam) and exam[1]["ci"][1] > 0
    )  # CIs, never zero-width
    hostile = series[(HOSTILE, "orchestration")]
    assert [p["segment"] for p in hostile] == [0, 0, 1] and hostile[2]["break"] == "model identity changed"
    judged = series[("beta", "capability")]
    assert [p["segment"] for p in judged] == [0, 0, 1] and judged[2]["break"] == "judge changed"
    assert [p["segment"] for p in series[("beta", "exam")]] == [0, 0, 0]
    assert len(build_trends(entries, entries[-1], last=2)["runs"]) == 2
    earlier = build_trends(entries, entries[1])  # a report for night 2 charts nights 1–2 only
    assert [r["run_id"] for r in earlier["runs"]] == ["night-1", "night-2"]


def test_svg_is_escaped_inline_and_scriptless() -> None:
    points = [
        {"run": 0, "value": 0.5, "ci": [0.4, 0.6], "n": 10, "segment": 0, "break": None},
        {"run": 1, "value": 0.7, "ci": [0.6, 0.8], "n": 10, "segment": 1, "break": "model identity changed"},
    ]
    runs = [{"run_id": "<img src=x onerror=alert(1)>"}, {"run_id": "r2"}]
    svg = sparkline_svg(points, runs, f"{HOSTILE} · exam")
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert "<script" not in svg and "<img" not in svg and "href" not in svg and "http" not in svg
    assert "&lt;script&gt;" in svg and 'stroke-dasharray="3,2"' in svg  # the identity break is drawn


def test_nightly_after_run_fills_the_report_and_survives_a_deleted_folder(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    first = after_run(root, make_night(root, 1))
    assert first.base is None and first.comparison is None and first.report_updated
    second_dir = make_night(root, 2)
    second = after_run(root, second_dir, fail_on_regression=0.0)
    assert second.base == root / "night-1" and second.exit_code == EXIT_REGRESSION
    page = (second_dir / "report.html").read_text()
    assert page.count('<h2 id="since-last-night">') == 1 and page.count('<h2 id="trends">') == 1
    assert "<svg" in page and HOSTILE not in page and "<script" not in page
    assert page.index('id="since-last-night"') < page.index('id="trends"') < page.index('<h2 id="runs">')
    again = after_run(root, second_dir)  # a resumed run appended again: one section each, one index entry
    assert again.exit_code == EXIT_OK
    page = (second_dir / "report.html").read_text()
    assert page.count('<h2 id="since-last-night">') == 1 and page.count('<h2 id="trends">') == 1
    assert [e.run_id for e in read_index(root)] == ["night-1", "night-2"]
    shutil.rmtree(root / "night-1")
    trends = trend_data(root, second_dir)
    assert trends is not None and trends["runs"][0] == {
        "run_id": "night-1",
        "created_at": "2026-11-01T02:00:00Z",
        "missing": True,
    }
    third = after_run(root, make_night(root, 3))
    assert third.base == root / "night-2"


def test_the_sections_render_in_a_browser_and_run_no_script(nights: list[Path], tmp_path: Path) -> None:
    browser = chromium_or_skip()
    root = tmp_path / "index"
    for night in nights:
        after_run(root, night)
    dom = dump_dom(browser, nights[2] / "report.html", tmp_path / "profile")
    assert "<title>medpool report</title>" in dom and "PWNED</title>" not in dom, "a script ran"
    assert "<script" not in dom.lower()
    assert 'id="since-last-night"' in dom and 'id="trends"' in dom
    assert dom.count("<svg") == 3 * 6 and dom.count("<circle") >= 3 * 6 * 2
    assert "&lt;script&gt;document.title='PWNED'&lt;/script&gt;" in dom  # shown as text


def test_splice_section_into_a_page_without_markers() -> None:
    page = '<html><body><h1>x</h1>\n<h2 id="runs">Runs</h2></body></html>'
    once = splice_section(page, "trends", "<p>T</p>")
    assert once.index("<p>T</p>") < once.index('<h2 id="runs">')
    both = splice_section(once, "since-last-night", "<p>S</p>")
    assert both.index("<p>S</p>") < both.index("<p>T</p>")
    assert splice_section(both, "trends", "<p>T2</p>").count("<p>T") == 1


def test_decision_change_reasons() -> None:
    route = {"routable": True, "model": "a", "leader": "a", "decisive": False, "tied_top": ["a", "b"], "served_by": "x"}
    base = {"buckets": {"x": route, "y": route, "z": route, "w": route}}
    new = {
        "buckets": {
            "x": {**route, "routable": False, "insufficient_data": True, "model": "c", "served_by": "family/exam"},
            "y": {**route, "model": "b", "chosen_by": "parent_tie_break"},
            "z": {**route, "decisive": True, "tied_top": ["a"]},
            "v": route,
        }
    }
    reasons = {c["id"]: c["reason"] for c in decision_changes(base, new)}
    assert reasons == {
        "x": "fell below min_n; served by family/exam",
        "y": "tie broken differently (parent_tie_break)",
        "z": "now decisive (leader significantly better than every other)",
        "w": "bucket gone",
        "v": "new bucket",
    }
