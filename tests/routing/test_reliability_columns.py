"""Judge reliability read from the judged rows' columns (routing.load.verdicts) gives, byte for byte,
the block the row-by-row reading gave on a varied judged night: several judges and a panel, failed
judge calls and unparseable replies, missing and malformed fields, side labels, flags, re-judged
samples, objective checks beside the judge, answer lengths, two runs merged (a later row replacing an
earlier one, an infra error not replacing a result). ``tests/data/judge_reliability_golden.json``
holds the block the row-by-row reading produced on this fixture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from routing.judges.reliability import build_reliability
from routing.load.columns import write_columns
from routing.load.runs import load_runs
from tests.routing.judged_night_fixtures import fixture_runs, write_night
from tests.routing.run_fixtures import tables_equal

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "judge_reliability_golden.json"


def block_text(runs: list[Path]) -> str:
    block = build_reliability(load_runs(runs), calibration_dir=None)
    return json.dumps(block, ensure_ascii=False, indent=1, default=str)


def test_reliability_from_columns_equals_the_row_by_row_block(tmp_path: Path) -> None:
    runs = fixture_runs(tmp_path)
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    from_jsonl = {"two": block_text(runs), "one": block_text(runs[:1])}
    for run in runs:
        write_columns(run)
    from_columns = {"two": block_text(runs), "one": block_text(runs[:1])}
    for case in ("two", "one"):
        assert from_jsonl[case] == golden[case], case
        assert from_columns[case] == golden[case], case
    block = json.loads(golden["two"])
    assert block["judge_panel"]["panels"] and len(block["judges"]) >= 4
    assert any(j["agreement"] for j in block["judges"].values())
    assert any(j["parse_ladder"]["counts"]["call_failed"] for j in block["judges"].values())


def test_a_judged_night_out_of_table_order_loads_as_the_general_merge(tmp_path: Path, monkeypatch: Any) -> None:
    """A judged night's rows are in (model, item) order, the table's by entrant (judge included): the
    one-run path puts them in order itself and gives what merging them as several runs gives."""
    from routing.load import runs as runs_module

    run = write_night(tmp_path / "night", 3, 30, "2026-11-29T02:00:00Z", reverse=True)
    for copy in (False, True):
        if copy:
            write_columns(run)
        fast = load_runs([run])
        with monkeypatch.context() as patch:
            patch.setattr(runs_module, "_merge_sorted_run", lambda cols: None)
            general = load_runs([run])
        tables_equal(fast.table, general.table)
        assert fast.table.labels == general.table.labels and fast.table.sources == general.table.sources
        assert fast.judged == general.judged and len(fast.judged)
