"""``--rescore RUN --with-judge`` judges a run that was started with ``--no-judge`` (FAKE models)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pool import RunInputError, RunSpec, rescore, resume, run_pool
from tests.fake_pool import score_rows, write_fake_pool, write_jsonl
from tests.pool.anchor_fixtures import ITEMS


def test_a_run_without_its_judge_is_judged_on_rescore(tmp_path: Path, drift_judge_url: str) -> None:
    data = write_jsonl(tmp_path / "items.jsonl", ITEMS)
    pool = write_fake_pool(tmp_path / "pool.yaml", drift_judge_url)
    run = run_pool(RunSpec(pool=pool, data=[data], out=tmp_path / "run", no_judge=True, no_routing=True))
    rows = score_rows(run.run_dir)
    assert {r["status"] for r in rows} == {"unscorable"}
    with pytest.raises(RunInputError, match="--with-judge with --no-judge"):
        rescore(run.run_dir, RunSpec(with_judge=True, no_judge=True))
    with pytest.raises(RunInputError, match="--with-judge with --resume"):
        resume(run.run_dir, RunSpec(with_judge=True))
    judged = rescore(run.run_dir, RunSpec(with_judge=True, no_routing=True))
    rows = score_rows(judged.run_dir)
    assert {r["status"] for r in rows} == {"scored"} and all(r["judge"]["model"] == "judgey" for r in rows)
