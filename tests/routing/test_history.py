"""routing.nights.history: the run index survives cut-short lines, moved and deleted folders and concurrent appends."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from routing.nights.history import INDEX_FILENAME, append_run, latest_comparable, main, read_index, read_index_checked
from tests.nightly_fixtures import HOSTILE, make_night

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    for night in (1, 2, 3):
        make_night(runs, night, n_items=4, build_manifest=False)
    return runs


def test_an_entry_records_the_run(root: Path) -> None:
    entry = append_run(root, root / "night-1")
    assert (entry.run_id, entry.dir, entry.status, entry.data_fingerprint) == (
        "night-1",
        "night-1",
        "finished",
        "data-fp-nightly",
    )
    assert set(entry.models) == {"alpha", "beta", HOSTILE} and entry.models["alpha"]["identity"]["name"] == "alpha"
    assert (
        entry.judges_by_family["capability"] == ["judge-qwen@llamacpp#a1b2c3d4"]
        and entry.judges_by_family["exam"] == []
    )
    assert entry.cached == {"answers": 36 * 3, "cached": 0, "share": 0.0}
    assert entry.scores["alpha"]["exam"]["n"] == 4 and not entry.missing
    assert read_index(root) == [entry]


def test_last_entry_per_run_wins_and_order_is_by_creation(root: Path) -> None:
    append_run(root, root / "night-2")
    append_run(root, root / "night-1")
    summary = json.loads((root / "night-2" / "summary.json").read_text())
    (root / "night-2" / "summary.json").write_text(json.dumps({**summary, "run_status": "interrupted"}))
    append_run(root, root / "night-2")  # resumed: appended again
    entries = read_index(root)
    assert [(e.run_id, e.status) for e in entries] == [("night-1", "finished"), ("night-2", "interrupted")]
    assert len((root / INDEX_FILENAME).read_text().splitlines()) == 3


def test_a_cut_short_last_line_is_skipped_and_the_next_append_starts_fresh(root: Path) -> None:
    append_run(root, root / "night-1")
    with (root / INDEX_FILENAME).open("a") as f:
        f.write('{"run_id": "night-9", "dir": "nig')  # a crash mid-write
    entries, problems = read_index_checked(root)
    assert [e.run_id for e in entries] == ["night-1"] and problems == []
    append_run(root, root / "night-2")
    entries, problems = read_index_checked(root)
    assert [e.run_id for e in entries] == ["night-1", "night-2"]
    assert len(problems) == 1 and "line 2" in problems[0]


def test_deleted_and_moved_folders_are_marked_not_errors(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for night in ("night-1", "night-2", "night-3"):
        append_run(root, root / night)
    assert latest_comparable(root, root / "night-3") == root / "night-2"
    shutil.rmtree(root / "night-2")
    entries = read_index(root)
    assert [e.missing for e in entries] == [False, True, False]
    assert latest_comparable(root, root / "night-3") == root / "night-1"
    assert latest_comparable(root, root / "night-1") is None  # nothing earlier
    assert main(["--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "3 run(s), 1 missing" in out and "[missing]" in out
    moved = tmp_path / "elsewhere"
    shutil.move(root, moved)  # the whole root moved: relative entries still resolve
    assert [e.missing for e in read_index(moved)] == [False, True, False]
    assert main(["--root", str(moved), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in listed] == ["night-1", "night-2", "night-3"] and listed[1]["missing"] is True


def test_only_finished_runs_on_the_same_data_are_comparable(root: Path) -> None:
    summary_path = root / "night-2" / "summary.json"
    summary = json.loads(summary_path.read_text())
    summary_path.write_text(json.dumps({**summary, "data_fingerprint": "other-data"}))
    for night in ("night-1", "night-2", "night-3"):
        append_run(root, root / night)
    assert latest_comparable(root, root / "night-3") == root / "night-1"


def test_no_index_is_an_empty_list_and_a_bad_root_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert read_index(tmp_path / "absent") == []
    assert main(["--root", str(tmp_path / "absent")]) == 0
    (tmp_path / "file").write_text("x")
    assert main(["--root", str(tmp_path / "file")]) == 2
    assert "not a directory" in capsys.readouterr().err


APPENDER = """
import sys
from pathlib import Path
from routing.nights.history import append_run
for _ in range(int(sys.argv[3])):
    append_run(Path(sys.argv[1]), Path(sys.argv[2]))
"""


def test_concurrent_appends_from_two_processes_never_interleave(root: Path) -> None:
    count = 15
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", APPENDER, str(root), str(root / night), str(count)],
            cwd=REPO,
            stderr=subprocess.PIPE,
            text=True,
        )
        for night in ("night-1", "night-2")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    lines = (root / INDEX_FILENAME).read_text().splitlines()
    assert len(lines) == 2 * count
    assert sorted(json.loads(line)["run_id"] for line in lines) == ["night-1"] * count + ["night-2"] * count
    entries, problems = read_index_checked(root)
    assert [e.run_id for e in entries] == ["night-1", "night-2"] and problems == []


def test_the_streamed_digest_holds_what_the_score_table_holds(root: Path) -> None:
    """The index reads scores.jsonl in one pass (routing.load.runs.digest_scores); per entrant and family it must
    see exactly the scored values, entrants and judges that the full table (load_runs) holds."""
    import numpy as np

    from routing.load.runs import digest_scores, load_runs
    from routing.load.table import SCORED

    for night in ("night-1", "night-3"):
        table, digest = load_runs([root / night]).table, digest_scores(root / night)
        assert [e.label for e in digest.entrants] == [e.label for e in table.entrants]
        families = table.names("family")
        for code, family in enumerate(families):
            in_family = table.family == code
            judges = {table.entrants[e].judge_key for e in set(table.entrant[in_family].tolist())}
            assert digest.judges_by_family[family] == tuple(sorted(k for k in judges if k))
            for e in range(len(table.entrants)):
                rows = in_family & (table.entrant == e)
                if not rows.any():
                    assert (e, family) not in digest.values
                    continue
                expected = np.sort(table.value[rows & (table.status == SCORED)])
                assert np.array_equal(np.sort(digest.values[(e, family)]), expected)
