"""A build that finds a gold freshness audit marks the items carrying a drifted point, and their buckets,
"gold may be stale" in leaderboard.md and report.html — and keeps every statistic as it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from routing.build import BuildOptions, build
from routing.load.rows import LoadError
from tests.routing.run_fixtures import make_run

FAST = BuildOptions(bootstrap=50, bt_rounds=5, elo_rounds=5, cv_folds=0)
DRIFTED_ITEMS = ["synthetic/internal_medicine/crit_0", "synthetic/internal_medicine/crit_3"]  # cardiology:cad


def audit(points: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": "medpool-freshness-audit",
        "schema_version": 1,
        "generated_at": "2026-12-01T00:00:00Z",
        "judges": [{"name": "judge-qwen", "backend": "local", "model": "qwen"}],
        "domains": {"cardiology": {"report": "freshness/cardiology.md", "points": points}},
    }


POINTS = [
    {
        "text": "血压目标<140/90",
        "verdict": "drifted",
        "current_guideline": "指南 2024",
        "note": "收紧",
        "item_ids": DRIFTED_ITEMS,
    },
    {"text": "限酒", "verdict": "current", "current_guideline": "unknown", "note": "", "item_ids": ["synthetic/x/y"]},
]


def board(out: Path) -> dict[str, Any]:
    return json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))


def test_drifted_points_flag_their_items_buckets_and_keep_every_statistic(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    plain = tmp_path / "plain"
    build([run], plain, FAST)
    (run / "freshness.json").write_text(json.dumps(audit(POINTS), ensure_ascii=False), encoding="utf-8")
    flagged = tmp_path / "flagged"
    summary = build([run], flagged, FAST)  # found in the run folder, as a run whose pool file names it leaves it
    assert summary["stale_gold_items"] == 2
    block = board(flagged)["gold_freshness"]
    assert [p["text"] for p in block["drifted_points"]] == ["血压目标<140/90"] and block["points"] == 2
    assert block["flagged_items"] == 2 and block["drifted_points"][0]["items_in_build"] == DRIFTED_ITEMS
    assert block["buckets"] == [
        "specialty/broad_area/内科",
        "specialty/domain/cardiology:cad",
        "specialty/system/cardiology",
    ]
    marked = {
        b["id"]: b["gold_may_be_stale"]
        for f in board(flagged)["families"].values()
        for b in f
        if "gold_may_be_stale" in b
    }
    assert set(marked) == set(block["buckets"]) and marked["specialty/domain/cardiology:cad"]["items"] == 2
    # the items stay in: every bucket's cells are what they were without the audit
    cells = lambda out: {b["id"]: b["cells"] for f in board(out)["families"].values() for b in f}  # noqa: E731
    assert cells(flagged) == cells(plain)
    markdown = (flagged / "leaderboard.md").read_text(encoding="utf-8")
    assert "## Gold may be stale" in markdown and "⚠ gold may be stale: 2 of its items" in markdown
    assert "血压目标&lt;140/90" in markdown and "⚠ gold may be stale" not in (plain / "leaderboard.md").read_text()
    html = (flagged / "report.html").read_text(encoding="utf-8")
    assert '<h2 id="gold-freshness">Gold may be stale</h2>' in html and 'href="#gold-freshness"' in html
    assert "血压目标&lt;140/90" in html and "gold-freshness" not in (plain / "report.html").read_text()


def test_an_explicit_audit_wins_and_a_foreign_file_is_refused(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    given = tmp_path / "other.json"
    given.write_text(json.dumps(audit(POINTS[1:])), encoding="utf-8")
    summary = build([run], tmp_path / "out", FAST, freshness=given)
    assert summary["stale_gold_items"] == 0 and board(tmp_path / "out")["gold_freshness"]["drifted_points"] == []
    given.write_text(json.dumps({"kind": "something-else"}), encoding="utf-8")
    with pytest.raises(LoadError, match=r"other\.json: kind/schema_version: not a medpool-freshness-audit"):
        build([run], tmp_path / "out2", FAST, freshness=given)
