"""End to end through the REAL managed llama.cpp server with the three real models (no fakes)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.local_models import requires_llama
from tests.processes import alive

REPO = Path(__file__).resolve().parents[2]

pytestmark = requires_llama
# A request may take this long: these tests check what a run does, not how fast a 0.5B judge answers on
# a busy machine (under load one verdict took minutes, and the shipped 120 s made it an infra error).
PATIENT_S = 1800


def test_default_pool_runs_three_local_models_end_to_end(tmp_path):
    pool = yaml.safe_load((REPO / "model_pool.yaml").read_text(encoding="utf-8"))
    pool["defaults"]["max_tokens"] = 12  # keep the test short; the shipped pool is otherwise unchanged
    pool["backends"]["local"]["timeout_s"] = PATIENT_S
    pool_file = tmp_path / "pool.yaml"
    pool_file.write_text(yaml.safe_dump(pool, allow_unicode=True), encoding="utf-8")
    env = {**os.environ, "MEDPOOL_CACHE_DIR": str(tmp_path / "cache")}
    command = [
        sys.executable,
        "-m",
        "pool.run",
        "--pool",
        str(pool_file),
        "--limit",
        "2",
        "--out",
        str(tmp_path / "run"),
    ]
    first = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=2 * PATIENT_S)
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
    assert all(
        s["judge"]["model"] == "qwen2.5-coder-0.5b" for s in scores if s["gold_type"] in ("reference", "criteria")
    )
    logs = sorted((tmp_path / "run").glob("llamacpp-local*.log"))  # one per replica
    assert logs and any("llama_perf_context_print" in log.read_text(errors="replace") for log in logs)

    again = subprocess.run(
        [*command[:-1], str(tmp_path / "run2")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=2 * PATIENT_S,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    second = [
        json.loads(line) for line in (tmp_path / "run2" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert all(r["cached"] and r["attempts"] == 0 for r in second)  # answers and verdicts alike
    assert [(r["model"], r["item_id"], r["stage"], r["text"]) for r in second] == [
        (r["model"], r["item_id"], r["stage"], r["text"]) for r in rows
    ]


def test_killed_while_judging_leaves_no_server_and_resume_keeps_verdicts_the_judges(tmp_path):
    """The real pool: SIGKILL while the judge works leaves no llama.cpp server behind; SIGTERM exits
    130; the resume stores every verdict as the judge's, never a candidate's answer. The servers are
    stopped (SIGSTOP) while the signal is sent, so the run cannot finish first on a fast machine."""
    import signal
    import time

    from bench.harness.chaos import phase_of

    pool = yaml.safe_load((REPO / "model_pool.yaml").read_text(encoding="utf-8"))
    pool["defaults"]["max_tokens"] = 12
    pool["backends"]["local"]["timeout_s"] = PATIENT_S
    pool_file = tmp_path / "pool.yaml"
    pool_file.write_text(yaml.safe_dump(pool, allow_unicode=True), encoding="utf-8")
    env = {**os.environ, "MEDPOOL_CACHE_DIR": str(tmp_path / "cache")}
    run_dir = tmp_path / "run"
    first = [
        sys.executable,
        "-m",
        "pool.run",
        "--pool",
        str(pool_file),
        "--limit",
        "3",
        "--no-routing",
        "--out",
        str(run_dir),
    ]
    resume = [sys.executable, "-m", "pool.run", "--resume", str(run_dir)]
    for command, sig in ((first, signal.SIGKILL), (resume, signal.SIGTERM)):
        started = time.time() - 0.001
        proc = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 600
        while phase_of(run_dir, started) != "judging":
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the run never reached the judge"
            time.sleep(0.05)
        server_pids = [json.loads(f.read_text(encoding="utf-8"))["pid"] for f in run_dir.glob("llamacpp-local*.pid")]
        assert server_pids, "no llama.cpp server pid file while judging"
        for pid in server_pids:  # hold the run in the judge phase: its servers answer nothing until SIGCONT
            os.kill(pid, signal.SIGSTOP)
        proc.send_signal(sig)
        code = proc.wait(120)  # a stopped server still takes its SIGKILL (after the stop's grace)
        for pid in server_pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        proc.stderr.close()
        if sig == signal.SIGTERM:
            assert code == 130
        gone_by = time.monotonic() + 30
        while any(alive(pid) for pid in server_pids) and time.monotonic() < gone_by:
            time.sleep(0.1)
        survivors = [pid for pid in server_pids if alive(pid)]
        assert not survivors, f"llama.cpp server(s) {survivors} outlived pool.run ({sig!r})"
    done = subprocess.run(resume, cwd=REPO, env=env, capture_output=True, text=True, timeout=2 * PATIENT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    answers = {(r["model"], r["item_id"]): r["text"] for r in rows if r["stage"] == "answer"}
    verdicts = [r for r in rows if r["stage"].startswith("judge:")]
    assert verdicts and all(r["answered_by"] == "qwen2.5-coder-0.5b" for r in verdicts)
    assert all(r["answered_by"] == r["model"] for r in rows if r["stage"] == "answer")
    assert not any(
        r["text"] and r["text"] == answers[(r["model"], r["item_id"])] and r["model"] != "qwen2.5-coder-0.5b"
        for r in verdicts
    )
