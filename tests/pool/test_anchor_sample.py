"""Judge drift across nights (FAKE judge): ``--anchor-sample N`` asks the judge afresh, never the
cache, and compares with the run's verdicts — cached ones are an earlier night's.

Night 1 the judge passes every answer. Night 2 the same judge (same identity) turns strict: the
run's own verdicts still come from the cache, but the anchors ask it again, disagree, and
compare.md warns of judge drift.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pool import RunSpec, run_pool
from tests.fake_pool import score_rows, write_fake_pool, write_jsonl
from tests.pool.anchor_fixtures import ITEMS, Judge


def test_anchor_sample_detects_a_judge_that_drifted_behind_the_same_identity(
    tmp_path: Path, drift_judge_url: str
) -> None:
    data = write_jsonl(tmp_path / "items.jsonl", ITEMS)
    pool = write_fake_pool(tmp_path / "pool.yaml", drift_judge_url)
    root = tmp_path / "runs"

    def night(name: str) -> Any:
        return run_pool(RunSpec(pool=pool, data=[data], out=root / name, cache_dir=tmp_path / "cache", anchor_sample=4))

    first = night("n1")
    anchors = first.scoring["anchors"]
    assert anchors["asked"] == 4 and anchors["verdicts"] == 4
    assert anchors["previous"]["n"] == 0 and anchors["all"]["pass_agreement"] == 1.0  # verdicts asked tonight
    assert not anchors["drift_warning"]

    Judge.strict = True
    second = night("n2")
    anchors = second.scoring["anchors"]
    assert anchors["previous"]["n"] == 4  # the run's verdicts came from the cache: night 1's
    assert anchors["previous"]["pass_agreement"] == 0.0 and anchors["previous"]["mean_abs_total_diff"] == 16.0
    assert anchors["drift_warning"]
    rows = score_rows(root / "n2")
    assert sum("anchor" in r["details"] for r in rows) == 4
    assert all(r["passed"] for r in rows)  # the scores themselves are the cached verdicts; the anchors flag them
    text = (root / "n2" / "compare.md").read_text(encoding="utf-8")
    assert "JUDGE DRIFT" in text and "judge anchors: 4 of 4 judged afresh" in text
