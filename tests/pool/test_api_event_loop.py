"""The Python API beside an event loop: ``run_pool`` called inside a running loop (a Jupyter cell), the
async twins (``arun_pool``, ``aresume``, ``arescore``) awaited while the loop goes on, and an
interruption from the caller's side — a cancelled task, a Ctrl-C while a sync call waits — ending the
run as an interrupted run ends (exit 130, what finished kept) so that ``resume`` finishes it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from pathlib import Path

import pytest

import pool
from pool import RunSpec, arescore, aresume, arun_pool, resume, run_pool
from pool.api import EXIT_INTERRUPTED, EXIT_OK
from pool.store.run_store import RunStore
from tests.fake_pool import FakeOpenAIStarter, two_option_items
from tests.fakes import ok, stall

ITEMS = two_option_items(6)
SLOW_S = 0.4  # per answer of the slow fake: six answers one at a time take 2.4 s


@pytest.fixture
def fake_url(fake_openai: FakeOpenAIStarter) -> str:
    return fake_openai(default=ok("A"))


@pytest.fixture
def slow_url(fake_openai: FakeOpenAIStarter) -> str:
    return fake_openai(default=stall(SLOW_S))


def _spec(tmp_path: Path, url: str, **extra: object) -> RunSpec:
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in ITEMS), encoding="utf-8")
    pool_file = tmp_path / "pool.yaml"
    pool_file.write_text(
        f"""backends:
  fake: {{type: openai, base_url: "{url}", max_concurrency: 1, max_retries: 0}}
models:
  - {{name: alpha, backend: fake, max_tokens: 8}}
""",
        encoding="utf-8",
    )
    return RunSpec(pool=pool_file, data=[data], out=tmp_path / "run", no_cache=True, no_routing=True, **extra)


def _answered(run_dir: Path) -> int:
    return sum(1 for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines() if line.strip())


def _status(run_dir: Path) -> str:
    with RunStore(run_dir, create=False) as store:
        return store.runs()[0].status


def test_run_pool_works_inside_a_running_event_loop(tmp_path: Path, fake_url: str) -> None:
    spec = _spec(tmp_path, fake_url)

    async def cell() -> pool.RunResult:  # what a Jupyter cell is: code inside the kernel's running loop
        asyncio.get_running_loop()
        return run_pool(spec)

    result = asyncio.run(cell())
    assert result.exit_code == EXIT_OK, result.summary
    assert _answered(result.run_dir) == len(ITEMS) and (result.run_dir / "scores.jsonl").is_file()
    assert _status(result.run_dir) == "finished"


def test_the_async_twins_leave_the_loop_free_and_give_the_sync_results(tmp_path: Path, fake_url: str) -> None:
    spec = _spec(tmp_path, fake_url)

    async def night() -> tuple[pool.RunResult, pool.RunResult, pool.RunResult, int]:
        ticks = 0
        running = asyncio.create_task(arun_pool(spec))
        while not running.done():  # the loop keeps turning while the run answers and scores
            ticks += 1
            await asyncio.sleep(0.005)
        first = await running
        return first, await aresume(first.run_dir), await arescore(first.run_dir, RunSpec(no_routing=True)), ticks

    first, resumed, rescored, ticks = asyncio.run(night())
    assert ticks > 1
    assert (first.exit_code, resumed.exit_code, rescored.exit_code) == (EXIT_OK, EXIT_OK, EXIT_OK)
    assert _answered(first.run_dir) == len(ITEMS) and rescored.scoring is not None
    assert rescored.scoring["by_family"] == first.scoring["by_family"]


def test_cancelling_the_awaiting_task_interrupts_the_run_and_resume_finishes_it(tmp_path: Path, slow_url: str) -> None:
    spec = _spec(tmp_path, slow_url)

    async def cancelled_night() -> None:
        running = asyncio.create_task(arun_pool(spec))
        await asyncio.sleep(2 * SLOW_S)  # mid-run: some answers in, most not
        running.cancel()
        await running

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(cancelled_night())
    run_dir = tmp_path / "run"
    assert _status(run_dir) == "interrupted"  # raised only once the run had stopped and closed its store
    finished = resume(run_dir)
    assert finished.exit_code == EXIT_OK and _answered(run_dir) == len(ITEMS)


def test_ctrl_c_while_a_sync_call_waits_in_a_loop_returns_the_interrupted_run(tmp_path: Path, slow_url: str) -> None:
    spec = _spec(tmp_path, slow_url)

    async def cell() -> pool.RunResult:
        return run_pool(spec)

    # A loop of its own, without asyncio.run's SIGINT handler: Ctrl-C raises KeyboardInterrupt in the
    # waiting (main) thread, as in a Jupyter kernel.
    loop = asyncio.new_event_loop()
    timer = threading.Timer(2 * SLOW_S, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        result = loop.run_until_complete(cell())
    finally:
        timer.cancel()
        loop.close()
    assert result.exit_code == EXIT_INTERRUPTED and _status(result.run_dir) == "interrupted"
    assert resume(result.run_dir).exit_code == EXIT_OK and _answered(result.run_dir) == len(ITEMS)


def test_the_package_names_every_api_function_for_type_checkers() -> None:
    assert set(pool.__all__) == set(pool._API)
    for name in pool.__all__:
        assert getattr(pool, name) is not None
    assert asyncio.iscoroutinefunction(pool.arun_pool) and not asyncio.iscoroutinefunction(pool.run_pool)
