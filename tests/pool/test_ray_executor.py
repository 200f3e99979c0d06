"""The Ray executor on a loopback Ray cluster against the fault-injecting FAKE pool.

One plan, three ways — the CLI with the local executor, the CLI with ``--executor ray``, and the
Python API — must give the same results.jsonl and scores.jsonl; a Ray run whose lane actor is
SIGKILLed mid-run must too (the actor restarts, its unfinished calls are re-sent, nothing is lost
or recorded twice); and no Ray process may hold a connection to any address outside 127.0.0.0/8.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.harness import chaos
from bench.harness.ray_cluster import loopback_cluster, non_loopback_connections
from pool import RunSpec, run_pool

if importlib.util.find_spec("ray") is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("CI=true but Ray is not installed: .ci/run installs the [ray] extra")
    pytest.skip("Ray is not installed (scripts/install.sh local,dev,ray)", allow_module_level=True)

N_ITEMS = 9


@pytest.fixture(scope="module")
def cluster():
    with loopback_cluster(num_cpus=2) as running:
        yield running


def _fake_pool(workdir: Path) -> tuple[subprocess.Popen, Path]:
    """One chaos fake and pool file for every run compared (the endpoint is part of each result).
    Its faults hit a request's first attempt, so the run that goes first meets them: the Ray run."""
    proc, base_url = chaos.start_fake(workdir, fault_rate=0.2)
    return proc, chaos.write_pool(workdir / "pool.yaml", base_url, chaos.free_port())


def _cli_run(
    args: list[str], env: dict[str, str], cache_dir: Path, timeout: float = 600
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pool.run", *args],
        cwd=chaos.REPO,
        capture_output=True,
        text=True,
        env={**os.environ, **env, "MEDPOOL_CACHE_DIR": str(cache_dir)},
        timeout=timeout,
    )


def _lane_actor_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"ray::LaneActor" in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def _same(a: Path, b: Path) -> None:
    assert chaos.normalised_results(a) == chaos.normalised_results(b)
    assert chaos.normalised_scores(a) == chaos.normalised_scores(b)


def test_local_ray_and_api_runs_give_the_same_results(tmp_path, cluster):
    suite = chaos.write_suite(tmp_path / "suite.jsonl", N_ITEMS)
    fake, pool = _fake_pool(tmp_path)
    runs = {name: tmp_path / name / "run" for name in ("ray", "local", "api")}  # run id = folder name
    try:
        for name, out in runs.items():
            common = ["--pool", str(pool), "--data", str(suite), "--out", str(out), "--no-routing"]
            cache = tmp_path / f"cache-{name}"
            if name == "ray":
                done = _cli_run([*common, "--executor", "ray", "--ray-address", cluster.address], cluster.env, cache)
                assert done.returncode in (0, 1), done.stderr[-2000:]
                assert not non_loopback_connections()
            elif name == "local":
                done = _cli_run(common, {}, cache)
                assert done.returncode in (0, 1), done.stderr[-2000:]
            else:
                result = run_pool(RunSpec(pool=pool, data=[suite], out=out, no_routing=True, cache_dir=cache))
                assert result.exit_code in (0, 1)
                assert result.paths["results.jsonl"] == out / "results.jsonl"
                assert set(result.counts) == {"good", "weak", "hostile", "gone", "judge"}
    finally:
        fake.terminate()
        fake.wait(timeout=30)
    _same(runs["local"], runs["ray"])
    _same(runs["local"], runs["api"])
    report = chaos.compare(runs["local"], runs["ray"], with_manifest=False)
    assert report["units_lost"] == 0 and report["units_duplicated"] == 0 and report["judge_rows_by_non_judge"] == 0


def test_a_sigkilled_lane_actor_is_restarted_and_nothing_is_lost(tmp_path, cluster):
    suite = chaos.write_suite(tmp_path / "suite.jsonl", 18)
    fake, pool = _fake_pool(tmp_path)
    killed, clean = tmp_path / "killed" / "run", tmp_path / "clean" / "run"
    try:
        args = [
            "--pool",
            str(pool),
            "--data",
            str(suite),
            "--out",
            str(killed),
            "--no-routing",
            "--executor",
            "ray",
            "--ray-address",
            cluster.address,
        ]
        driver = subprocess.Popen(
            [sys.executable, "-m", "pool.run", *args],
            cwd=chaos.REPO,
            text=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, **cluster.env, "MEDPOOL_CACHE_DIR": str(tmp_path / "cache-killed")},
        )
        victims: list[int] = []
        deadline = time.monotonic() + 300
        while not victims and driver.poll() is None and time.monotonic() < deadline:
            pids = _lane_actor_pids()
            if pids and (killed / "run.sqlite").exists() and chaos.phase_of(killed, 0.0) is not None:
                victims = pids
                for pid in pids:
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
        _, err = driver.communicate(timeout=600)
        assert victims, "the run finished before a lane actor could be killed"
        assert driver.returncode in (0, 1), err[-2000:]
        done = _cli_run(
            ["--pool", str(pool), "--data", str(suite), "--out", str(clean), "--no-routing"],
            {},
            tmp_path / "cache-clean",
        )
        assert done.returncode in (0, 1), done.stderr[-2000:]
    finally:
        fake.terminate()
        fake.wait(timeout=30)
    report = chaos.compare(clean, killed, with_manifest=False)
    assert report["units_lost"] == 0 and report["units_duplicated"] == 0
    assert report["results_identical"] and report["scores_identical"]
