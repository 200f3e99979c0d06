"""``python -m pool.run`` end to end against the FAKE OpenAI server in its own process:
SIGKILL then --resume equals an uninterrupted run; Ctrl-C exits 130 and resumes; exit codes."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.pool.cli_fixtures import ServedFake, run_cli, stop_or_dump
from tests.processes import count_results


@pytest.fixture
def fake_server(tmp_path):
    """Start the fake with 50 ms latency in a separate process; yield its base URL."""
    fake = ServedFake(tmp_path)
    yield fake.url
    fake.stop()


@pytest.fixture
def held_fake(tmp_path):
    """A fake that answers 15 requests and holds the rest until ``release()``: a signal sent after
    15 results finds the run still working, on any machine."""
    fake = ServedFake(tmp_path, "--hold-after", "15")
    yield fake
    fake.stop()


def write_pool(path: Path, base_url: str, max_retries: int = 3) -> Path:
    path.write_text(
        f"""backends:
  fake:
    type: openai
    base_url: {base_url}
    max_concurrency: 2
    max_retries: {max_retries}
    timeout_s: 5
models:
  - name: alpha
    backend: fake
    max_tokens: 16
  - name: beta
    backend: fake
    mode: completion
    max_tokens: 16
""",
        encoding="utf-8",
    )
    return path


def rows(run_dir: Path) -> list[tuple]:
    lines = (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return [(r["model"], r["item_id"], r["stage"], r["status"], r["text"]) for r in map(json.loads, lines)]


def answers(run_dir: Path) -> list[tuple]:
    return [row for row in rows(run_dir) if row[2] == "answer"]


def wait_for_results(db: Path, proc: subprocess.Popen, at_least: int) -> None:
    deadline = time.monotonic() + 60
    while count_results(db) < at_least:
        assert proc.poll() is None, f"run ended early: {proc.communicate()}"
        assert time.monotonic() < deadline, "no progress"
        time.sleep(0.02)


def test_sigkill_then_resume_matches_an_uninterrupted_run(tmp_path, fake_server, held_fake):
    pool = write_pool(tmp_path / "pool.yaml", fake_server)
    args = ("--pool", str(pool), "--limit", "30", "--no-cache")
    reference = run_cli(*args, "--out", str(tmp_path / "reference"), cache_dir=tmp_path / "c1")
    assert reference.wait(120) == 0, reference.communicate()

    held_pool = write_pool(tmp_path / "held.yaml", held_fake.url)  # same models: same results
    killed = run_cli(
        "--pool",
        str(held_pool),
        "--limit",
        "30",
        "--no-cache",
        "--out",
        str(tmp_path / "killed"),
        cache_dir=tmp_path / "c2",
    )
    wait_for_results(tmp_path / "killed" / "run.sqlite", killed, 15)
    killed.kill()
    killed.wait(10)
    done_before = count_results(tmp_path / "killed" / "run.sqlite")
    assert done_before == 15  # the fake answered 15 and holds the rest
    held_fake.release()

    resumed = run_cli("--resume", str(tmp_path / "killed"), cache_dir=tmp_path / "c2")
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert f"{60 - done_before} to do" in err or done_before == 60
    assert rows(tmp_path / "killed") == rows(tmp_path / "reference")
    assert len(answers(tmp_path / "killed")) == 60  # 2 models × 30 items, each exactly once
    summary = json.loads((tmp_path / "killed" / "summary.json").read_text())
    assert summary["run_status"] == "finished" and summary["resumes"] == 1


def test_ctrl_c_saves_and_prints_how_to_resume(tmp_path, held_fake):
    pool = write_pool(tmp_path / "pool.yaml", held_fake.url)
    run_dir = tmp_path / "run"
    proc = run_cli("--pool", str(pool), "--limit", "30", "--no-cache", "--out", str(run_dir), cache_dir=tmp_path / "c")
    wait_for_results(run_dir / "run.sqlite", proc, 15)  # then the fake holds every request: the run waits
    proc.send_signal(signal.SIGINT)
    out, err = stop_or_dump(proc, 60)
    assert proc.returncode == 130, err
    assert f"--resume {run_dir}" in err
    partial = rows(run_dir)
    assert len(partial) == 15
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["run_status"] == "interrupted"
    held_fake.release()
    resumed = run_cli("--resume", str(run_dir), cache_dir=tmp_path / "c")
    assert resumed.wait(120) == 0
    assert len(answers(run_dir)) == 60 and set(partial) <= set(rows(run_dir))


def test_unreachable_endpoint_exits_1_and_marks_the_model_failed(tmp_path):
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    pool = write_pool(tmp_path / "pool.yaml", f"http://127.0.0.1:{port}/v1", max_retries=0)
    proc = run_cli("--pool", str(pool), "--limit", "8", "--out", str(tmp_path / "run"), cache_dir=tmp_path / "c")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["totals"]["status"]["infra_error"] == 16
    assert "consecutive infra errors" in summary["models"]["alpha"]["failed"]
    assert "--resume" in err


def test_dry_run_prints_the_plan_and_starts_nothing(tmp_path):
    pool = write_pool(tmp_path / "pool.yaml", "http://127.0.0.1:9/v1")
    proc = run_cli(
        "--pool", str(pool), "--limit", "5", "--dry-run", "--out", str(tmp_path / "run"), cache_dir=tmp_path / "c"
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    plan = json.loads(out)
    assert plan["units"] == 10 and plan["backends"]["fake"]["max_concurrency"] == 2
    assert not (tmp_path / "run").exists()


def test_bad_pool_file_exits_2_naming_file_and_line(tmp_path, write_pool):
    pool = write_pool(
        "backends:\n  fake:\n    type: openai\n    base_url: http://x/v1\nmodels:\n  - name: a\n    backend: nope\n",
        name="pool.yaml",
    )
    proc = run_cli("--pool", str(pool), cache_dir=tmp_path / "c")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "pool.yaml:7" in err and "nope" in err


def test_a_ray_address_nobody_answers_at_fails_at_once_and_a_malformed_one_is_bad_input(tmp_path):
    """``ray.init`` retries an unreachable cluster for minutes (a cron job would hang): the run says so
    and exits 1 before starting Ray; an address that is not HOST:PORT is bad input (exit 2)."""
    import socket

    with socket.socket() as sock:  # a port nobody listens on, on loopback
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    pool = write_pool(tmp_path / "pool.yaml", "http://127.0.0.1:9/v1")
    args = ("--pool", str(pool), "--limit", "2", "--no-cache", "--executor", "ray")
    proc = run_cli(
        *args, "--ray-address", f"127.0.0.1:{port}", "--out", str(tmp_path / "run"), cache_dir=tmp_path / "c"
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert f"127.0.0.1:{port}: no Ray cluster answers there" in err and "ray start --head" in err
    assert "gcs" not in err.lower()  # Ray was never asked to connect

    proc = run_cli(
        *args, "--ray-address", "head-without-port", "--out", str(tmp_path / "run2"), cache_dir=tmp_path / "c"
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert "'head-without-port': expected HOST:PORT" in err
    assert not (tmp_path / "run2").exists()


def test_a_run_folder_that_cannot_be_made_is_bad_input_named_not_a_traceback(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    pool = write_pool(tmp_path / "pool.yaml", "http://127.0.0.1:9/v1")
    proc = run_cli(
        "--pool", str(pool), "--limit", "2", "--no-cache", "--out", str(blocker / "run"), cache_dir=tmp_path / "c"
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert f"{blocker / 'run'}: cannot create or write the run folder" in err and "Traceback" not in err

    from pool import RunInputError, RunSpec, run_pool

    inline = {
        "backends": {"fake": {"type": "openai", "base_url": "http://127.0.0.1:9/v1"}},
        "models": [{"name": "alpha", "backend": "fake"}],
    }
    with pytest.raises(RunInputError, match="cannot create or write the run folder"):
        run_pool(RunSpec(pool=inline, out=blocker / "api-run", limit=2, no_cache=True))
