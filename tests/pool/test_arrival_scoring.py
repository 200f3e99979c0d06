"""The arrival-scoring worker (FAKE models) only moves work off the driver: a run whose judge-free
answers were scored by the worker while it answered writes the scores.jsonl bytes that scoring its
finished store writes; a worker that fails leaves the stage to score everything itself; a worker
whose driver is gone (SIGKILLed mid-run) exits, and the resume completes the run to those bytes."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

import pool.api as api_module
from pool import RunSpec, rescore, resume, run_pool
from pool.api import EXIT_OK
from pool.config import load_pool
from pool.score.arrival import EXPORT, FINISH, MIN_ANSWERS, ArrivalRows, ArrivalWorker
from pool.store.costs import CostTally
from pool.store.export import export_results_jsonl, summarize_store
from pool.store.run_store import RunStore
from routing.nights.history import read_index, snapshot
from tests.fake_pool import FakeOpenAIStarter, PoolWriter, two_option_items
from tests.fakes import ok
from tests.processes import count_results, eventually, pids_with

ITEMS = [
    *two_option_items(12, prefix="mcq", width=2),
    *(
        {
            "id": f"qa{i:02d}",
            "task": "qa",
            "track": "capability",
            "gold_type": "reference",
            "question": f"问题{i}",
            "gold": "参考答案",
        }
        for i in range(3)
    ),  # judged items: never scored by the worker
]
ANSWERS = {"alpha": "答案：A", "beta": "B because 乙", "gamma": ""}  # gamma's empty answers are status "error"


def behave(index: int, payload: dict[str, Any]) -> Any:
    return ok(ANSWERS[payload["model"]])


@pytest.fixture
def setup(tmp_path: Path, fake_openai: FakeOpenAIStarter, write_pool: PoolWriter) -> tuple[Path, Path]:
    url = fake_openai(behave)
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in ITEMS), encoding="utf-8")
    pool = write_pool(
        f"""backends:
  fake: {{type: openai, base_url: "{url}", max_concurrency: 4}}
models:
"""
        + "".join(f"  - {{name: {m}, backend: fake, model: {m}, max_tokens: 8}}\n" for m in ANSWERS),
        name="pool.yaml",
    )
    return data, pool


def _watch_finish(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """How many rows each worker handed over (None: it failed)."""
    handed: list[int | None] = []
    finish = ArrivalWorker.finish

    async def watched(self: ArrivalWorker, export: bool = False) -> Any:
        spool = await finish(self, export=export)
        handed.append(None if spool is None else len(spool))
        return spool

    monkeypatch.setattr(ArrivalWorker, "finish", watched)
    return handed


def _watch_exports(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each worker told to export wrote results.jsonl (False: the run wrote it)."""
    seen: list[bool] = []
    exported = ArrivalWorker.exported

    async def watched(self: ArrivalWorker) -> Any:
        costs = await exported(self)
        seen.append(costs is not None)
        return costs

    monkeypatch.setattr(ArrivalWorker, "exported", watched)
    return seen


def _results_as_exported_again(run_dir: Path, pool: Path) -> tuple[bytes, bytes, dict[str, Any], dict[str, Any]]:
    """results.jsonl and summary.json (its counts and costs) as the run wrote them, and as the run's own
    export and count of its finished store make them."""
    written = (run_dir / "results.jsonl").read_bytes()
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    tally = CostTally(load_pool(pool))
    export_results_jsonl(run_dir, observe=tally.add)
    with RunStore(run_dir) as store:
        counted = summarize_store(store, summary["run_id"], summary["wall_time_s"], summary["extra"])
    again = {**summary, **counted}
    again["extra"] = {**summary["extra"], "costs": tally.summary()}
    return written, (run_dir / "results.jsonl").read_bytes(), summary, again


def _scores_then_rescored(run_dir: Path) -> tuple[bytes, bytes]:
    """scores.jsonl as the run wrote it, and as scoring its finished store writes it."""
    written = (run_dir / "scores.jsonl").read_bytes()
    assert rescore(run_dir, RunSpec(no_routing=True)).exit_code == EXIT_OK
    return written, (run_dir / "scores.jsonl").read_bytes()


def test_worker_rows_are_the_rows_scoring_after_writes(
    tmp_path: Path, setup: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    data, pool = setup
    monkeypatch.setattr(api_module, "MIN_ANSWERS", 1)
    handed, exported = _watch_finish(monkeypatch), _watch_exports(monkeypatch)
    run_dir = tmp_path / "run"
    result = run_pool(RunSpec(pool=pool, data=[data], out=run_dir, no_cache=True, no_routing=True))
    assert result.exit_code == EXIT_OK
    assert handed == [12 * 3]  # every judge-free answer (gamma's empty ones too), no judged one
    # No judge: the worker also wrote results.jsonl, the bytes and costs the run's own export makes.
    assert exported == [True]
    results, exported_again, summary, counted_again = _results_as_exported_again(run_dir, pool)
    assert results == exported_again and results.count(b"\n") == len(ITEMS) * 3
    assert summary == counted_again and set(summary["extra"]["costs"]["models"]) == set(ANSWERS)
    assert summary["totals"]["results"] == len(ITEMS) * 3
    # The nightly index took scores.jsonl as read while the worker counted: the entry a fresh read makes.
    indexed, fresh = read_index(tmp_path)[-1].to_json(), json.loads(json.dumps(snapshot(tmp_path, run_dir).to_json()))
    assert {**indexed, "appended_at": None} == {**fresh, "appended_at": None} and indexed["scores"]
    written, rescored = _scores_then_rescored(run_dir)
    assert written == rescored
    assert written.count(b"\n") == len(ITEMS) * 3


def test_a_failed_worker_leaves_the_scoring_to_the_stage(
    tmp_path: Path, setup: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker pointed at a run its store does not hold says so and exits 2: the run warns, scores
    every answer after the last one, and writes the same rows."""
    data, pool = setup
    monkeypatch.setattr(api_module, "MIN_ANSWERS", 1)
    start = ArrivalWorker.start
    monkeypatch.setattr(ArrivalWorker, "start", classmethod(lambda cls, run_dir, run_id: start(run_dir, "no-such-run")))
    handed = _watch_finish(monkeypatch)
    run_dir = tmp_path / "run"
    with caplog.at_level(logging.WARNING, logger="pool.score.arrival"):
        result = run_pool(RunSpec(pool=pool, data=[data], out=run_dir, no_cache=True, no_routing=True))
    assert result.exit_code == EXIT_OK
    assert handed == [None]
    assert "the scoring worker ended with 2; the scoring stage scores every answer itself" in caplog.text
    results, exported_again, summary, counted_again = _results_as_exported_again(run_dir, pool)
    assert results == exported_again and summary == counted_again
    written, rescored = _scores_then_rescored(run_dir)
    assert written == rescored and written.count(b"\n") == len(ITEMS) * 3


# A stand-in for the worker that reports the end of scoring (no rows) and exits 3 instead of exporting.
NO_EXPORT = "import sys; sys.stdin.buffer.readline(); print('{\"scored\": true}', flush=True); sys.exit(3)"


def test_a_worker_that_does_not_export_leaves_the_export_to_the_run(
    tmp_path: Path, setup: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    data, pool = setup
    monkeypatch.setattr(api_module, "MIN_ANSWERS", 1)

    async def start(cls: type[ArrivalWorker], run_dir: Path, run_id: str) -> ArrivalWorker:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", NO_EXPORT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        return cls(proc, tempfile.TemporaryFile("w+b", dir=run_dir), tempfile.TemporaryFile("w+b", dir=run_dir))

    monkeypatch.setattr(ArrivalWorker, "start", classmethod(start))
    handed, exported = _watch_finish(monkeypatch), _watch_exports(monkeypatch)
    run_dir = tmp_path / "run"
    with caplog.at_level(logging.WARNING, logger="pool.score.arrival"):
        result = run_pool(RunSpec(pool=pool, data=[data], out=run_dir, no_cache=True, no_routing=True))
    assert result.exit_code == EXIT_OK
    assert handed == [0] and exported == [False]  # scoring "finished" with no rows; no export
    assert "the scoring worker ended with 3 before its export; the run writes results.jsonl itself" in caplog.text
    results, exported_again, summary, counted_again = _results_as_exported_again(run_dir, pool)
    assert results == exported_again and summary == counted_again and results.count(b"\n") == len(ITEMS) * 3
    written, rescored = _scores_then_rescored(run_dir)
    assert written == rescored


def test_a_worker_stopped_during_its_export_leaves_no_partial_file(tmp_path: Path, setup: tuple[Path, Path]) -> None:
    """An interrupted run stops a worker that may be exporting: SIGTERM, and its temporary file goes."""
    data, pool = setup
    run_dir = tmp_path / "run"
    result = run_pool(RunSpec(pool=pool, data=[data], out=run_dir, no_cache=True, no_routing=True))
    (run_dir / "results.jsonl").unlink()

    async def interrupted() -> int | None:
        worker = await ArrivalWorker.start(run_dir, result.run_id)
        assert worker is not None
        assert await worker.finish(export=True) is not None
        await worker.close()
        return worker.proc.returncode

    code = asyncio.run(interrupted())
    assert code in (0, -signal.SIGTERM, 128 + signal.SIGTERM)  # done first, or stopped
    assert not [p.name for p in run_dir.iterdir() if p.name.endswith(".tmp")]


def test_small_runs_start_no_worker(tmp_path: Path, setup: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    data, pool = setup
    handed = _watch_finish(monkeypatch)  # 36 judge-free answers: far below MIN_ANSWERS
    assert (
        run_pool(RunSpec(pool=pool, data=[data], out=tmp_path / "run", no_cache=True, no_routing=True)).exit_code
        == EXIT_OK
    )
    assert handed == []


def _worker(run_dir: Path, run_id: str, file: Any, index: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "pool.score.arrival", str(run_dir), run_id, str(file.fileno()), str(index.fileno())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        pass_fds=(file.fileno(), index.fileno()),
    )


def test_the_worker_exits_when_its_driver_is_gone_and_answers_finish(tmp_path: Path, setup: tuple[Path, Path]) -> None:
    """End of file on stdin without ``finish`` (the driver died): exit 1. With ``finish``: exit 0,
    having indexed the place of every judge-free answer's row, each the row it names, then reported
    the end of scoring and how many rows it indexed. With ``export``: results.jsonl too."""
    data, pool = setup
    run_dir = tmp_path / "run"
    result = run_pool(RunSpec(pool=pool, data=[data], out=run_dir, no_cache=True, no_routing=True))
    judge_free = [json.loads(line) for line in (run_dir / "scores.jsonl").read_text(encoding="utf-8").splitlines()]
    with tempfile.TemporaryFile("w+b", dir=tmp_path) as file, tempfile.TemporaryFile("w+b", dir=tmp_path) as index:
        orphan = _worker(run_dir, result.run_id, file, index)
        orphan.communicate(b"", timeout=120)
        assert orphan.returncode == 1
        file.truncate(0)
        file.seek(0)  # the worker writes through this very file description, at its offset
        told = _worker(run_dir, result.run_id, file, index)
        out, _ = told.communicate(FINISH, timeout=120)
        assert told.returncode == 0
        reports = [json.loads(line) for line in out.decode("utf-8").splitlines()]
        assert reports == [{"scored": True, "rows": 12 * 3}]
        rows = ArrivalRows(file, index, reports[-1]["rows"])
        for row in judge_free:
            entry = rows.take(row["model"], row["item_id"])
            if row["gold_type"] != "single_choice":  # judged: never scored by the worker
                assert entry is None
                continue
            assert entry is not None
            meta, _, line = entry.partition("\t")
            assert json.loads(meta)[:2] == [row["model"], row["item_id"]] and json.loads(line) == row
        assert rows.take("alpha", "no such item") is None
    # Told to export, it also writes results.jsonl (the run's own bytes) and reports that pass's costs.
    results = (run_dir / "results.jsonl").read_bytes()
    (run_dir / "results.jsonl").unlink()
    with tempfile.TemporaryFile("w+b", dir=tmp_path) as file, tempfile.TemporaryFile("w+b", dir=tmp_path) as index:
        out, _ = _worker(run_dir, result.run_id, file, index).communicate(EXPORT, timeout=120)
    reports = [json.loads(line) for line in out.decode("utf-8").splitlines()]
    assert reports[-2] == {"scored": True, "rows": 12 * 3} and set(reports[-1]) == {"costs", "summary"}
    assert (run_dir / "results.jsonl").read_bytes() == results


def _workers_of(run_dir: Path) -> list[int]:
    return pids_with(b"pool.score.arrival", str(run_dir).encode())


def test_a_sigkilled_driver_leaves_no_worker_and_the_resume_completes_the_scores(
    tmp_path: Path, fake_openai: FakeOpenAIStarter, write_pool: PoolWriter
) -> None:
    url = fake_openai(behave, latency_s=0.005)
    n_items = MIN_ANSWERS // len(ANSWERS) + 50  # just enough answers for a worker: it starts by itself
    data = tmp_path / "items.jsonl"
    data.write_text(
        "".join(json.dumps({**ITEMS[0], "id": f"mcq{i:04d}"}, ensure_ascii=False) + "\n" for i in range(n_items)),
        encoding="utf-8",
    )
    pool = write_pool(
        f"""backends:\n  fake: {{type: openai, base_url: "{url}", max_concurrency: 4}}\nmodels:\n"""
        + "".join(f"  - {{name: {m}, backend: fake, model: {m}, max_tokens: 8}}\n" for m in ANSWERS),
        name="pool.yaml",
    )
    run_dir = tmp_path / "run"
    driver = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pool.run",
            "--pool",
            str(pool),
            "--data",
            str(data),
            "--out",
            str(run_dir),
            "--no-cache",
            "--no-routing",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert eventually(lambda: bool(_workers_of(run_dir)) and count_results(run_dir / "run.sqlite") >= 300, 120), (
        "no worker, or not 300 answers"
    )
    assert driver.poll() is None, "the run ended before it could be killed: give it more items"
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait(60)
    assert count_results(run_dir / "run.sqlite") < n_items * len(ANSWERS)
    assert eventually(lambda: not _workers_of(run_dir), 120), "the orphaned worker did not exit"
    assert resume(run_dir, RunSpec(no_routing=True)).exit_code == EXIT_OK
    written, rescored = _scores_then_rescored(run_dir)
    assert written == rescored and written.count(b"\n") == n_items * len(ANSWERS)
