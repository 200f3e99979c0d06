"""The pairwise stage inside ``python -m pool.run`` (``--pairwise``, the pool file's ``pairwise:`` block), and
Ctrl-C / SIGKILL during pairwise judging, with FAKE candidates whose absolute scores tie and a FAKE
``oracle`` judge that names the better answer side by side (``tests.fakes.pairwise_judges``).

A held judge (:class:`HeldPairwise`) answers the first side-by-side requests and holds the rest open,
so a signal always finds the stage waiting on the judge with a known number of verdicts recorded —
no sleeping, on any machine. A resume must then ask only what has no verdict and end where an
uninterrupted run ends.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.fake_pool import pool_run_cli
from tests.fakes import ThreadedFakes
from tests.fakes.openai_fake import FakeOpenAIServer
from tests.fakes.pairwise_judges import HeldPairwise, tied_night_files
from tests.pool.cli_fixtures import start_cli
from tests.processes import count_results

ITEMS = 6  # 4 tied models: 6 pairs × 6 items = 36 battles = 72 calls of the one judge
CALLS = 72
ANSWERED_BEFORE_THE_SIGNAL = 10


@pytest.fixture
def judge():
    """A FAKE server for candidates and judge whose side-by-side answers can be held; its base URL and holder."""
    fakes = ThreadedFakes()
    held = HeldPairwise(answer_first=ANSWERED_BEFORE_THE_SIGNAL)
    url = fakes.start(FakeOpenAIServer(behave=held)).base_url
    yield url, held
    fakes.stop_all()


def wait_until_held(proc: subprocess.Popen, held: HeldPairwise, store: Path) -> None:
    """Until the judge holds a request and the verdicts it gave are recorded (known state, not a sleep)."""
    deadline = time.monotonic() + 120
    while not (held.held and count_results(store) >= ANSWERED_BEFORE_THE_SIGNAL):
        assert proc.poll() is None, f"ended before the judge held a request: {proc.communicate()}"
        assert time.monotonic() < deadline, "the stage never reached the held judge"
        time.sleep(0.05)


def battles(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "battles.jsonl").read_text(encoding="utf-8").splitlines()]


def outcomes(run_dir: Path) -> set[tuple]:
    """Each battle as (judge, item, the two models, the winner or tie): which model a run's score decision ranked
    first (``a``) may differ between two runs whose scores tie exactly (the tie rule's latency step)."""
    return {
        (r["judge"], r["item_id"], frozenset((r["a"], r["b"])), r[r["outcome"]] if r["outcome"] != "tie" else "tie")
        for r in battles(run_dir)
    }


def decisions(run_dir: Path) -> dict:
    return {
        bucket: (d["judged_decision"]["leader"], d["judged_decision"]["decisive"], d["judged_decision"]["n_battles"])
        for bucket, d in judged(run_dir)["buckets"].items()
    }


def judged(run_dir: Path) -> dict:
    return json.loads((run_dir / "pairwise_judged.json").read_text(encoding="utf-8"))


def test_pool_run_pairwise_judges_the_ties_after_scoring_in_the_same_run_folder(tmp_path, judge):
    url, held = judge
    held.holding = False
    pool, data = tied_night_files(tmp_path, url, judges=("oracle",), items=ITEMS)
    run_dir = tmp_path / "run"
    out = pool_run_cli(
        "--pool", str(pool), "--data", str(data), "--pairwise", "--out", str(run_dir), cache=tmp_path / "c"
    )
    assert out.returncode == 0, out.stderr
    assert "pairwise: 6 tied pairs" in out.stderr and "0 of 1 routable with scores, 1 with judged battles" in out.stderr
    report = judged(run_dir)
    assert report["totals"]["calls_made"] == CALLS and report["judges"]["oracle"]["consistent"] == 1.0
    assert all(r["outcome"] != "tie" for r in battles(run_dir))
    manifest = (run_dir / "routing_manifest.yaml").read_text(encoding="utf-8")
    assert "decided_by: judged battles" in manifest  # routing.build ran after the stage and read its battles


def test_the_pool_files_pairwise_block_turns_the_stage_on_and_the_dry_run_counts_its_calls(tmp_path):
    pool, data = tied_night_files(tmp_path, "http://127.0.0.1:9/v1", judges=("oracle",), items=ITEMS)
    text = pool.read_text(encoding="utf-8")
    pool.write_text(text + "pairwise: {budget: 40}\n", encoding="utf-8")
    out = pool_run_cli("--pool", str(pool), "--data", str(data), "--dry-run", cache=tmp_path / "c")
    assert out.returncode == 0, out.stderr
    planned = json.loads(out.stdout)["pairwise"]
    assert planned["budget"] == 40 and planned["battles_at_most"] == 36 and planned["judge_calls_at_most"] == 40
    flagged = pool_run_cli(
        "--pool", str(pool), "--data", str(data), "--dry-run", "--pairwise-budget", "0", cache=tmp_path / "c"
    )
    assert json.loads(flagged.stdout)["pairwise"]["judge_calls_at_most"] == CALLS  # 0: no limit
    pool.write_text(text + "pairwise_budget: 40\n", encoding="utf-8")
    old = pool_run_cli("--pool", str(pool), "--data", str(data), "--dry-run", cache=tmp_path / "c")
    assert old.returncode == 2 and "pairwise: {budget: N}" in old.stderr, old.stderr
    assert len(old.stderr.strip().splitlines()) == 1


def test_sigkill_during_the_pairwise_stage_then_resume_asks_nothing_twice_and_ends_as_an_uninterrupted_run(
    tmp_path, judge
):
    url, held = judge
    pool, data = tied_night_files(tmp_path, url, judges=("oracle",), items=ITEMS)
    args = ("--pool", str(pool), "--data", str(data), "--pairwise", "--no-cache")
    killed = start_cli("pool.run", *args, "--out", str(tmp_path / "killed"), cache_dir=tmp_path / "c")
    wait_until_held(killed, held, tmp_path / "killed" / "pairwise" / "run.sqlite")
    killed.kill()
    killed.communicate(timeout=30)
    assert count_results(tmp_path / "killed" / "pairwise" / "run.sqlite") == ANSWERED_BEFORE_THE_SIGNAL
    held.holding = False
    resumed = pool_run_cli("--resume", str(tmp_path / "killed"), cache=tmp_path / "c")
    assert resumed.returncode == 0, resumed.stderr
    assert held.answered == CALLS  # the 10 recorded verdicts were not asked again
    reference = pool_run_cli(*args, "--out", str(tmp_path / "reference"), cache=tmp_path / "c")
    assert reference.returncode == 0, reference.stderr
    assert len(battles(tmp_path / "killed")) == CALLS // 2
    assert outcomes(tmp_path / "killed") == outcomes(tmp_path / "reference")
    assert decisions(tmp_path / "killed") == decisions(tmp_path / "reference")


@pytest.mark.parametrize("module", ["pool.pairwise", "pool.run"])
def test_ctrl_c_while_the_judge_holds_a_request_exits_130_and_a_repeat_completes(tmp_path, judge, module):
    url, held = judge
    pool, data = tied_night_files(tmp_path, url, judges=("oracle",), items=ITEMS)
    run_dir = tmp_path / "run"
    if module == "pool.pairwise":
        night = pool_run_cli("--pool", str(pool), "--data", str(data), "--out", str(run_dir), cache=tmp_path / "c")
        assert night.returncode == 0, night.stderr
        again = (str(run_dir), "--cache-dir", str(tmp_path / "c"))
        proc = start_cli(module, *again, cache_dir=tmp_path / "c")
    else:
        again = ("--resume", str(run_dir))
        args = ("--pool", str(pool), "--data", str(data), "--pairwise", "--out", str(run_dir))
        proc = start_cli(module, *args, cache_dir=tmp_path / "c")
    wait_until_held(proc, held, run_dir / "pairwise" / "run.sqlite")
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)  # a bound for a hang, not a speed requirement
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        pytest.fail(f"{module} still running 60 s after Ctrl-C: {proc.communicate()[1][-4000:]}")
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert not (run_dir / "pairwise_judged.json").exists()
    held.holding = False
    repeat = start_cli(module, *again, cache_dir=tmp_path / "c")
    _, err = repeat.communicate(timeout=180)
    assert repeat.returncode == 0, err
    report = judged(run_dir)
    assert report["totals"]["judged_battles"] == CALLS // 2 and held.answered == CALLS
