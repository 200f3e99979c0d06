"""report.html's sections come from one list: every section drawn has its link and every link its section;
the "Since last night" tables take their columns from one declared table (``DELTA_COLUMNS``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from routing.build import BuildOptions, build
from routing.nights.compare import compare_runs
from routing.nights.sections import DELTA_COLUMNS, DELTA_HEAD, since_last_night_section
from routing.report.page import SECTIONS, render_report
from tests.nightly_fixtures import make_night
from tests.routing.run_fixtures import synthetic_rows, write_run

FAST = BuildOptions(bootstrap=100, bt_rounds=10, elo_rounds=5)

PANEL_BLOCK: dict[str, Any] = {
    "alpha_warn": 0.67,
    "panels": {
        "panel:a+b": {
            "rule": "mean",
            "cost": {"priced_per_verdict": None, "calls_per_verdict": 2, "tokens_per_verdict": 300, "members": {}},
            "members": {"a": {"verdicts": 10, "missing": 0, "agreement_with_panel": 0.9}},
            "overall": {"n": 10, "complete": 10, "krippendorff_alpha_total": 0.8, "fleiss_kappa_pass": 0.7},
            "families": {},
            "buckets": {},
        }
    },
}


def built_documents(tmp_path: Path) -> dict[str, Any]:
    run = write_run(tmp_path / "run", synthetic_rows({"a": 0.8, "b": 0.5, "c": 0.3}, n_items=8))
    build([run], None, FAST)
    return {
        "leaderboard": json.loads((run / "leaderboard.json").read_text(encoding="utf-8")),
        "pairwise": json.loads((run / "pairwise.json").read_text(encoding="utf-8")),
        "hard": yaml.safe_load((run / "hard.yaml").read_text(encoding="utf-8")),
        "manifest": yaml.safe_load((run / "routing_manifest.yaml").read_text(encoding="utf-8")),
        "infra": {},
    }


def nav_and_ids(page: str) -> tuple[list[str], list[str]]:
    nav = re.search(r"<p>(<a href=.*?)</p>", page)
    assert nav, "the page has no navigation"
    return re.findall(r'href="#([^"]+)"', nav.group(1)), re.findall(r'<h2 id="([^"]+)"', page)


def test_every_section_drawn_has_its_link_and_every_link_its_section(tmp_path: Path) -> None:
    docs = built_documents(tmp_path)
    docs["leaderboard"]["judge_panel"] = PANEL_BLOCK
    links, ids = nav_and_ids(render_report(**docs))
    assert links == ids, "navigation and body drifted apart"
    assert "judge-panel" in links and "runs" in links and "pairwise" in links
    assert [a for a in (s.anchor for s in SECTIONS) if a in links] == links  # page order is the list's order


def test_a_section_with_nothing_to_show_has_no_link(tmp_path: Path) -> None:
    docs = built_documents(tmp_path)
    links, ids = nav_and_ids(render_report(**docs))
    assert "judge-panel" not in links and links == ids


def test_section_anchors_are_unique() -> None:
    anchors = [s.anchor for s in SECTIONS]
    assert len(anchors) == len(set(anchors)), anchors


def test_since_last_night_tables_take_their_columns_from_the_declared_table(tmp_path: Path) -> None:
    base, new = make_night(tmp_path, 1), make_night(tmp_path, 2)
    doc = compare_runs(base, new).to_json()
    html = since_last_night_section(doc)
    table = html[html.index('<table class="compare">') :]
    table = table[: table.index("</table>")]
    assert re.findall(r"<th>(.*?)</th>", table) == [*(c.head for c in DELTA_COLUMNS), ""] == DELTA_HEAD
    rows = re.findall(r"<tr>(.*?)</tr>", table[table.index("<tbody>") :])
    assert rows and all(row.count("<td") == len(DELTA_HEAD) for row in rows)
    assert "worse" in table and "<script" not in html  # the direction's tags; model names escaped
