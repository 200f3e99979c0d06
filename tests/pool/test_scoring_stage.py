"""The scoring stage end to end with a FAKE OpenAI server playing both candidate and judge:
the parse ladder's re-ask, unparseable verdicts as infra errors, --rescore, scores.jsonl."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.fake_pool import pool_run_cli, scores_by_item, write_fake_pool, write_jsonl
from tests.fakes.mode_judge import judge_behaviour

REPO = Path(__file__).resolve().parents[2]
SUITE = [
    {
        "id": "r1",
        "task": "qa",
        "track": "capability",
        "gold_type": "reference",
        "question": "高血压的诊断标准？",
        "gold": "诊室血压≥140/90 mmHg。",
    },
    {
        "id": "r2",
        "task": "qa",
        "track": "capability",
        "gold_type": "reference",
        "question": "糖尿病的诊断标准？",
        "gold": "空腹血糖≥7.0 mmol/L。",
    },
    {
        "id": "c1",
        "task": "mcq",
        "track": "exam",
        "gold_type": "single_choice",
        "question": "选哪个？",
        "options": {"A": "甲", "B": "乙"},
        "gold": "B",
    },
]


def write_files(tmp_path: Path, base_url: str) -> tuple[Path, Path]:
    data = write_jsonl(tmp_path / "suite" / "items.jsonl", SUITE)
    return write_fake_pool(tmp_path / "pool.yaml", base_url, (("alpha", 32),), max_retries=0), data


def run(*args: str, cache: Path) -> subprocess.CompletedProcess:
    return pool_run_cli(*args, "--no-routing", cache=cache, timeout=120)


scores = scores_by_item


@pytest.fixture
def fake_in_thread(fake_openai):
    """``mode -> base URL`` of a fake whose judge replies follow ``mode`` (see :func:`judge_behaviour`)."""
    return lambda mode: fake_openai(judge_behaviour(mode))


def test_good_verdicts_are_scored_with_the_judge_identity(tmp_path, fake_in_thread):
    pool, data = write_files(tmp_path, fake_in_thread("good"))
    out = run("--pool", str(pool), "--data", str(data), "--out", str(tmp_path / "run"), cache=tmp_path / "c")
    assert out.returncode == 0, out.stderr
    got = scores(tmp_path / "run")
    assert got["r1"]["status"] == "scored" and got["r1"]["value"] == pytest.approx(35 / 40)
    assert got["r1"]["passed"] is True and got["r1"]["metrics"]["total"] == 35
    assert got["r1"]["judge"]["model"] == "judgey" and len(got["r1"]["judge"]["prompt_version"]) == 12
    assert got["c1"]["status"] == "scored" and got["c1"]["value"] == 1.0 and got["c1"]["judge"] is None
    url = pool.read_text().split("base_url: ")[1].split("\n")[0].rstrip("/")
    judge = got["r1"]["judge"]
    assert judge["key"].startswith("judgey@fake#") and judge["identity"]["endpoint"] == url
    assert {
        k: judge["identity"][k] for k in ("backend_type", "model", "temperature", "seed", "top_p", "prompt_version")
    } == {
        "backend_type": "openai",
        "model": "judgey",
        "temperature": 0.0,
        "seed": None,
        "top_p": None,
        "prompt_version": judge["prompt_version"],
    }
    ident = got["r1"]["model_identity"]
    assert (ident["endpoint"], ident["max_tokens"], ident["stop"], ident["gguf"]) == (url, 32, [], None)
    assert got["r1"]["answer_status"] == "ok"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["extra"]["scoring"]["judge_infra_errors"] == 0


def test_unparseable_verdict_gets_one_reask(tmp_path, fake_in_thread):
    pool, data = write_files(tmp_path, fake_in_thread("reask"))
    out = run("--pool", str(pool), "--data", str(data), "--out", str(tmp_path / "run"), cache=tmp_path / "c")
    assert out.returncode == 0, out.stderr
    got = scores(tmp_path / "run")
    assert got["r1"]["status"] == "scored" and got["r2"]["status"] == "scored"
    stages = [json.loads(line)["stage"] for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sum(s.endswith(":reask") for s in stages) == 2


def test_still_unparseable_is_an_infra_error_not_a_zero(tmp_path, fake_in_thread):
    pool, data = write_files(tmp_path, fake_in_thread("never"))
    out = run("--pool", str(pool), "--data", str(data), "--out", str(tmp_path / "run"), cache=tmp_path / "c")
    assert out.returncode == 0, out.stderr
    got = scores(tmp_path / "run")
    assert got["r1"]["status"] == "infra_error" and got["r1"]["value"] is None
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["extra"]["scoring"]["judge_infra_errors"] == 2

    # --rescore with a judge that now answers: new judge calls, no new candidate calls
    pool.write_text(pool.read_text().replace("max_retries: 0", "max_retries: 0\n    timeout_s: 30"), encoding="utf-8")
    good_url = fake_in_thread("good")
    pool.write_text(
        pool.read_text().replace(pool.read_text().split("base_url: ")[1].split("\n")[0], good_url), encoding="utf-8"
    )
    again = run("--rescore", str(tmp_path / "run"), "--pool", str(pool), cache=tmp_path / "c2")
    assert again.returncode == 0, again.stderr
    got = scores(tmp_path / "run")
    assert got["r1"]["status"] == "scored"
    # the answers came from the first server, the new verdicts from the second: each identity says so
    assert got["r1"]["judge"]["identity"]["endpoint"] == good_url.rstrip("/")
    assert got["r1"]["model_identity"]["endpoint"] != good_url.rstrip("/")
    answers = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sum(r["stage"] == "answer" for r in answers) == 3


def test_hallucination_check_adds_claim_metrics(tmp_path, fake_in_thread):
    pool, data = write_files(tmp_path, fake_in_thread("good"))
    out = run("--pool", str(pool), "--data", str(data), "--out", str(tmp_path / "run"), "--hallu", cache=tmp_path / "c")
    assert out.returncode == 0, out.stderr
    metrics = scores(tmp_path / "run")["r1"]["metrics"]
    assert metrics["n_claims"] == 4 and metrics["unsupported"] == 1
    assert metrics["unsupported_rate"] == pytest.approx(0.25)
    assert metrics["factual_precision"] == pytest.approx(2 / 3)
    assert "n_claims" not in scores(tmp_path / "run")["c1"]["metrics"]


def test_a_huge_answer_is_cut_for_the_judge_and_the_score_says_so(tmp_path, fake_in_thread):
    pool, data = write_files(tmp_path, fake_in_thread("huge"))
    out = run("--pool", str(pool), "--data", str(data), "--out", str(tmp_path / "run"), cache=tmp_path / "c")
    assert out.returncode == 0, out.stderr
    got = scores(tmp_path / "run")
    assert got["r1"]["status"] == "scored"
    assert got["r1"]["details"]["answer_truncated_for_judge"] == {"chars": 30_000, "sent": 24_000}
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert {r["answered_by"] for r in rows if r["stage"].startswith("judge:")} == {"judgey"}
    assert {r["answered_by"] for r in rows if r["stage"] == "answer"} == {"alpha"}
