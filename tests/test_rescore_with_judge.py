"""``--rescore RUN --with-judge`` judges a run that was started with ``--no-judge`` (FAKE models)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pool import RunInputError, RunSpec, rescore, resume, run_pool
from tests.test_anchor_sample import ITEMS, fake_url  # noqa: F401 (fixture)


def test_a_run_without_its_judge_is_judged_on_rescore(tmp_path: Path, fake_url: str) -> None:  # noqa: F811
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in ITEMS), encoding="utf-8")
    pool = tmp_path / "pool.yaml"
    pool.write_text(f"""backends:
  fake: {{type: openai, base_url: "{fake_url}", max_concurrency: 2}}
models:
  - {{name: cand, backend: fake, max_tokens: 16}}
  - {{name: judgey, backend: fake, enabled: false}}
judge:
  model: judgey
""", encoding="utf-8")
    run = run_pool(RunSpec(pool=pool, data=[data], out=tmp_path / "run", no_judge=True, no_routing=True))
    rows = [json.loads(line) for line in (run.run_dir / "scores.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {r["status"] for r in rows} == {"unscorable"}
    with pytest.raises(RunInputError, match="--with-judge with --no-judge"):
        rescore(run.run_dir, RunSpec(with_judge=True, no_judge=True))
    with pytest.raises(RunInputError, match="--with-judge with --resume"):
        resume(run.run_dir, RunSpec(with_judge=True))
    judged = rescore(run.run_dir, RunSpec(with_judge=True, no_routing=True))
    rows = [json.loads(line) for line in (judged.run_dir / "scores.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {r["status"] for r in rows} == {"scored"} and all(r["judge"]["model"] == "judgey" for r in rows)
