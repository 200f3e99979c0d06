"""Who may answer a unit, what a resume may change, and what a run may touch (issue: integrity)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from pool.execute.dispatch import Dispatcher, answerer_of
from pool.execute.endpoints import BackendEndpoint
from pool.execute.executor import Lane
from pool.run import main
from pool.store.export import summarize
from pool.store.outcome import Unit, classify, result_from_response
from pool.store.run_lock import RunLock
from pool.store.run_store import RunStore, StoreFormatError, WrongAnswererError
from runners.base import GenerationResponse

JUDGE_STAGE = "judge:0123456789"


def response(text: str = "答案", error_class: str | None = None) -> GenerationResponse:
    return GenerationResponse(
        text=text,
        finish_reason="stop",
        prompt_tokens=1,
        completion_tokens=1,
        latency_s=0.1,
        error_class=error_class,
        error_detail="boom" if error_class else "",
    )


def row(unit: Unit, answered_by: str, text: str = "答案", error_class: str | None = None):
    return result_from_response(
        "r",
        unit,
        response(text, error_class),
        request_json="{}",
        cache_key=None,
        started_at="t",
        finished_at="t",
        answered_by=answered_by,
        endpoint="http://127.0.0.1:1/v1",
    )


def test_the_store_refuses_a_verdict_written_by_the_candidate(tmp_path):
    verdict = Unit("cand", "i1", JUDGE_STAGE)
    with RunStore(tmp_path) as store:
        store.save_plan("r", [Unit("cand", "i1")])
        store.save_plan("r", [verdict], answerer="judge")
        with pytest.raises(WrongAnswererError, match="planned to be answered by 'judge'"):
            store.record(row(verdict, "cand", '{"coverage": 10}'))
        assert store.get_result("r", verdict) is None
        assert store.record(row(verdict, "judge"))
        with pytest.raises(WrongAnswererError):
            store.record(row(Unit("cand", "i1"), "judge"))
        assert store.record(row(Unit("cand", "i1"), "cand"))
        assert {r.answered_by for r in store.results("r")} == {"cand", "judge"}


def test_every_stage_has_exactly_one_answerer():
    assert answerer_of(Unit("cand", "i"), "judge") == "cand"
    for stage in (JUDGE_STAGE, JUDGE_STAGE + ":reask", JUDGE_STAGE + ":hallu", JUDGE_STAGE + ":hallu:reask"):
        assert answerer_of(Unit("cand", "i", stage), "judge") == "judge"
    with pytest.raises(ValueError, match="no judge"):
        answerer_of(Unit("cand", "i", JUDGE_STAGE), None)
    with pytest.raises(ValueError, match="unknown stage"):
        answerer_of(Unit("cand", "i", "verdict"), "judge")


def test_dispatcher_sends_judge_stages_to_the_judge_only():
    from pool.config.resolved import PoolConfig

    config = PoolConfig.model_validate(
        {
            "backends": {
                "a": {"type": "openai", "base_url": "http://127.0.0.1:9/v1"},
                "b": {"type": "openai", "base_url": "http://127.0.0.1:8/v1"},
            },
            "models": [
                {"name": "cand", "backend": "a", "model": "cand-id"},
                {"name": "judge", "backend": "b", "model": "judge-id", "enabled": False},
            ],
            "judge": {"model": "judge"},
        }
    )
    judge = config.judge_model()
    endpoints = {
        name: BackendEndpoint(
            name,
            "openai",
            Lane(name, runner=None, max_concurrency=1),  # type: ignore[arg-type]
            {m.name: f"id-{name}" for m in config.models},
        )
        for name in ("a", "b")
    }

    class Item:
        id = "i1"

        def chat_messages(self):
            return ({"role": "user", "content": "问？"},)

        def completion_prompt(self):
            return "问？"

    dispatcher = Dispatcher({m.name: m for m in config.models}, {"i1": Item()}, endpoints, judge)
    answer = dispatcher.job(Unit("cand", "i1"))
    assert answer.request.model == "cand-id" and answer.caller == "cand" and answer.endpoint_identity == "id-a"
    verdict = dispatcher.job(Unit("cand", "i1", JUDGE_STAGE), ({"role": "user", "content": "评分"},))
    assert verdict.request.model == "judge-id" and verdict.caller == "judge" and verdict.endpoint_identity == "id-b"
    with pytest.raises(ValueError, match="needs its prompt"):
        dispatcher.job(Unit("cand", "i1", JUDGE_STAGE))
    assert set(
        dispatcher.lanes(
            [Unit("cand", "i1"), Unit("cand", "i1", JUDGE_STAGE)],
            {Unit("cand", "i1", JUDGE_STAGE): ({"role": "user", "content": "x"},)},
        )
    ) == {"a", "b"}


def test_a_dead_judge_is_charged_to_the_judge_not_the_candidates():
    rows = [row(Unit("cand", "i1"), "cand"), row(Unit("cand", "i1", JUDGE_STAGE), "judge", "", "connection")]
    summary = summarize(rows, [], {}, 1.0)
    assert summary["models"]["cand"]["status"]["infra_error"] == 0
    assert summary["models"]["judge"]["status"]["infra_error"] == 1


def test_an_oversize_answer_is_a_recorded_error_not_an_infra_error():
    assert classify(response("", "oversize")) == ("error", "oversize")
    assert row(Unit("m", "i"), "m", "", "oversize").error_detail == "boom"


def test_a_garbage_run_store_is_a_clear_error(tmp_path):
    (tmp_path / "run.sqlite").write_bytes(b"\x00garbage" * 100)
    with pytest.raises(StoreFormatError, match="not a run store"):
        RunStore(tmp_path)


@pytest.fixture
def dead_pool(write_pool) -> Path:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return write_pool(
        f"""backends:
  dead:
    type: openai
    base_url: http://127.0.0.1:{port}/v1
    max_retries: 0
    timeout_s: 2
models:
  - name: alpha
    backend: dead
""",
        name="pool.yaml",
    )


def test_resume_keeps_the_runs_options_and_refuses_conflicting_flags(tmp_path, dead_pool, monkeypatch, capsys):
    monkeypatch.setenv("MEDPOOL_CACHE_DIR", str(tmp_path / "cache"))
    run_dir = tmp_path / "run"
    assert (
        main(
            [
                "--pool",
                str(dead_pool),
                "--limit",
                "2",
                "--no-routing",
                "--max-consecutive-failures",
                "7",
                "--out",
                str(run_dir),
            ]
        )
        == 1
    )
    with RunStore(run_dir) as store:
        options = store.runs()[0].options
    assert options["max_consecutive_failures"] == 7 and options["no_routing"] is True and options["hallu"] is False
    capsys.readouterr()
    assert main(["--resume", str(run_dir), "--hallu"]) == 2
    assert "--hallu" in capsys.readouterr().err
    assert main(["--resume", str(run_dir), "--max-consecutive-failures", "2"]) == 2
    assert main(["--resume", str(run_dir), "--rescore", str(run_dir)]) == 2
    assert main(["--pool", str(dead_pool), "--limit", "2", "--out", str(run_dir)]) == 2  # a run's folder
    assert "--resume" in capsys.readouterr().err
    with RunLock(run_dir):
        assert main(["--resume", str(run_dir)]) == 2
        assert "in use by pid" in capsys.readouterr().err
    assert main(["--resume", str(run_dir)]) == 1  # still unreachable, but allowed and resumed


def test_out_never_overwrites_a_users_files(tmp_path, dead_pool, capsys):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "report.html").write_text("my report", encoding="utf-8")
    assert main(["--pool", str(dead_pool), "--limit", "1", "--out", str(folder)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert (folder / "report.html").read_text(encoding="utf-8") == "my report"
    assert sorted(p.name for p in folder.iterdir()) == ["report.html"]


def test_dry_run_counts_judge_and_hallu_requests(tmp_path, write_pool, capsys):
    pool = write_pool(
        """backends:
  api:
    type: openai
    base_url: http://127.0.0.1:9/v1
models:
  - name: a
    backend: api
  - name: b
    backend: api
  - name: judge
    backend: api
    enabled: false
judge:
  model: judge
""",
        name="pool.yaml",
    )
    data = tmp_path / "items.jsonl"
    data.write_text(
        "\n".join(
            json.dumps(r, ensure_ascii=False)
            for r in [
                {
                    "id": "r1",
                    "task": "qa",
                    "track": "capability",
                    "gold_type": "reference",
                    "question": "问？",
                    "gold": "答。",
                },
                {
                    "id": "c1",
                    "task": "mcq",
                    "track": "exam",
                    "gold_type": "single_choice",
                    "question": "选？",
                    "options": {"A": "甲", "B": "乙"},
                    "gold": "A",
                },
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    assert main(["--pool", str(pool), "--data", str(data), "--hallu", "--dry-run"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["units"] == 4
    assert plan["judge"] == {
        "model": "judge",
        "backend": "api",
        "verdicts": 2,
        "reasks_at_most": 2,
        "hallu_checks": 2,
        "requests_at_most": 8,
    }
    assert plan["requests_at_most"] == 12
