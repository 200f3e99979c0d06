"""A full disk in the middle of a run (FAKE models): the run ends with exit 1 and a message that names
the error itself — not the task group that carried it out of the lanes — the run store's path and
the resume command. When the store fails, the rows recorded before it are kept and the resume
finishes the plan without asking them again; when writing results.jsonl fails, the resume writes it.
"""

from __future__ import annotations

import errno
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import pool.api as pool_api
from pool import RunSpec, resume, run_pool
from pool.api import EXIT_INFRA, EXIT_OK
from pool.store.run_store import RunStore
from tests.fake_pool import PoolWriter, two_option_items
from tests.fakes import ThreadedFakes, ok
from tests.fakes.openai_fake import FakeOpenAIServer

ITEMS = two_option_items(12, width=2)
RECORDED_BEFORE_THE_DISK_FILLS = 4


@pytest.fixture
def fake(fakes: ThreadedFakes) -> FakeOpenAIServer:
    return fakes.start(FakeOpenAIServer(behave=lambda index, payload: ok("A")))


def _rows(run_dir: Path) -> dict[str, tuple[Any, ...]]:
    with sqlite3.connect(run_dir / "run.sqlite") as conn:
        return {row[0]: row for row in conn.execute("SELECT item_id, status, text, finished_at FROM results")}


@pytest.fixture
def setup(tmp_path: Path, fake: FakeOpenAIServer, write_pool: PoolWriter) -> tuple[Path, Path]:
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in ITEMS), encoding="utf-8")
    pool = write_pool(
        f'backends:\n  fake: {{type: openai, base_url: "{fake.base_url}", max_concurrency: 2}}\n'
        "models:\n  - {name: alpha, backend: fake, max_tokens: 8}\n",
        name="pool.yaml",
    )
    return data, pool


def test_a_full_disk_mid_run_is_named_and_the_resume_keeps_what_was_recorded(
    tmp_path: Path,
    fake: FakeOpenAIServer,
    setup: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data, pool = setup
    run_dir = tmp_path / "run"

    real_record_many = RunStore.record_many  # RunStore.record writes through it too
    recorded: list[str] = []

    def record_many(self: RunStore, results: Any, **kwargs: Any) -> int:
        results = list(results)
        if len(recorded) + len(results) > RECORDED_BEFORE_THE_DISK_FILLS:
            raise sqlite3.OperationalError("database or disk is full")
        written = real_record_many(self, results, **kwargs)
        recorded.extend(result.item_id for result in results)
        return written

    monkeypatch.setattr(RunStore, "record_many", record_many)
    failed = run_pool(RunSpec(pool=pool, data=[data], out=run_dir, no_cache=True, no_routing=True))
    err = capsys.readouterr().err
    assert failed.exit_code == EXIT_INFRA
    assert "error: OperationalError: database or disk is full" in err
    assert "TaskGroup" not in err and "ExceptionGroup" not in err
    assert str(run_dir / "run.sqlite") in err and f"python -m pool.run --resume {run_dir}" in err
    kept = _rows(run_dir)
    assert sorted(kept) == sorted(recorded) and len(kept) == RECORDED_BEFORE_THE_DISK_FILLS

    monkeypatch.undo()  # the disk has room again
    asked_before = fake.request_count
    finished = resume(run_dir)
    assert finished.exit_code == EXIT_OK
    rows = _rows(run_dir)
    assert sorted(key.rsplit("/", 1)[-1] for key in rows) == [item["id"] for item in ITEMS]  # ids are suite-qualified
    assert {row[1] for row in rows.values()} == {"ok"}
    assert {item_id: rows[item_id] for item_id in kept} == kept  # not asked again, not rewritten
    assert fake.request_count - asked_before == len(ITEMS) - len(kept)


def test_errors_nested_in_task_groups_are_listed_one_by_one() -> None:
    from pool.execute.executor import leaf_errors

    inner = ExceptionGroup("lane b", [KeyError("y")])
    leaves = leaf_errors(ExceptionGroup("lanes", [ValueError("x"), inner]))
    assert [type(e) for e in leaves] == [ValueError, KeyError]
    plain = RuntimeError("alone")
    assert leaf_errors(plain) == [plain]


def test_a_full_disk_while_writing_results_jsonl_is_named_and_the_resume_writes_it(
    tmp_path: Path, setup: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data, pool = setup
    run_dir = tmp_path / "run"

    def full_disk(run_dir: Path, *args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(run_dir / "results.jsonl"))

    monkeypatch.setattr(pool_api, "export_results_with_costs", full_disk)
    failed = run_pool(RunSpec(pool=pool, data=[data], out=run_dir, no_cache=True, no_routing=True))
    err = capsys.readouterr().err
    assert failed.exit_code == EXIT_INFRA
    assert "error: OSError: [Errno 28] No space left on device" in err and "results.jsonl" in err
    assert f"python -m pool.run --resume {run_dir}" in err
    assert len(_rows(run_dir)) == len(ITEMS) and not (run_dir / "results.jsonl").exists()

    monkeypatch.undo()
    finished = resume(run_dir)
    assert finished.exit_code == EXIT_OK
    exported = (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert sum(1 for line in exported if '"stage": "answer"' in line) == len(ITEMS)
