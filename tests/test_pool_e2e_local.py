"""End to end through the REAL managed llama.cpp server with the three real models (no fakes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]

try:
    import llama_cpp  # noqa: F401

    HAVE_LLAMA = True
except ImportError:
    HAVE_LLAMA = False

pytestmark = pytest.mark.skipif(
    not HAVE_LLAMA and os.environ.get("CI") != "true",
    reason="llama-cpp-python is not installed (pip install -e '.[local]'); required under CI=true",
)


def test_default_pool_runs_three_local_models_end_to_end(tmp_path):
    pool = yaml.safe_load((REPO / "model_pool.yaml").read_text(encoding="utf-8"))
    pool["defaults"]["max_tokens"] = 12  # keep the test short; the shipped pool is otherwise unchanged
    pool_file = tmp_path / "pool.yaml"
    pool_file.write_text(yaml.safe_dump(pool, allow_unicode=True), encoding="utf-8")
    env = {**os.environ, "MEDPOOL_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "pool.run", "--pool", str(pool_file), "--limit", "2", "--out", str(tmp_path / "run")]
    first = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]

    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    results = [r for r in rows if r["stage"] == "answer"]
    judged = [r for r in rows if r["stage"].startswith("judge:")]
    assert judged and all(r["status"] in ("ok", "error", "infra_error") for r in judged)
    assert sorted({r["model"] for r in results}) == ["gemma3-270m", "qwen2.5-coder-0.5b", "smollm2-135m"]
    assert len(results) == 6 and len({(r["model"], r["item_id"]) for r in results}) == 6
    assert all(r["status"] in ("ok", "error") and r["attempts"] == 1 for r in results)
    assert all(r["completion_tokens"] and r["completion_tokens"] <= 13 for r in results)
    assert any(r["text"].strip() for r in results if r["model"] == "qwen2.5-coder-0.5b")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["run_status"] == "finished"
    assert sum(summary["totals"]["status"].values()) == len(rows)
    scores = [json.loads(line) for line in (tmp_path / "run" / "scores.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(scores) == 6 and all(s["status"] in ("scored", "infra_error", "unscorable") for s in scores)
    assert all(s["judge"]["model"] == "qwen2.5-coder-0.5b" for s in scores if s["gold_type"] in ("reference", "criteria"))
    assert "llama_perf_context_print" in (tmp_path / "run" / "llamacpp-local.log").read_text(errors="replace")

    again = subprocess.run([*command[:-1], str(tmp_path / "run2")], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    second = [json.loads(line) for line in (tmp_path / "run2" / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(r["cached"] and r["attempts"] == 0 for r in second)  # answers and verdicts alike
    assert [(r["model"], r["item_id"], r["stage"], r["text"]) for r in second] == [
        (r["model"], r["item_id"], r["stage"], r["text"]) for r in rows]
