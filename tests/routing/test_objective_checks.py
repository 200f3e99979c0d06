"""Objective checks as scores, the judge kept beside: SQL-answer and API-call items (hand-written,
MedDBOps- and MedCallAPI-like) through loaders, scorers, the scoring stage with a FAKE judge,
--no-judge, the leaderboard, the orchestrator composite, and decision recognition beside DTR-F1."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from eval.items import Item, ItemError, Source
from eval.items.scores import JudgeIdentity, Score
from eval.loaders import ItemFormatError, load_items
from eval.scorers import NeedsJudge, score_answer
from eval.scorers.checked import beside_judge, judge_fallback, without_judge
from routing.boards.leaderboard import build_buckets
from routing.build import BuildOptions, build
from routing.decide.manifest import orchestrator
from routing.load.runs import load_runs
from tests.fake_pool import pool_run_cli, scores_by_item, write_fake_pool
from tests.fakes import ok
from tests.fakes.mode_judge import GOOD
from tests.routing.run_fixtures import JUDGE, row, synthetic_rows, write_run

REPO = Path(__file__).resolve().parents[2]
FAST = BuildOptions(bootstrap=200, bt_rounds=20, elo_rounds=10, cv_folds=0)

SCHEMA = (
    "\n数据结构说明\n1. 患者表 (PATIENT)\n字段名：patient_id (数据类型：VARCHAR2(20))：患者唯一标识 (主键)\n"
    "字段名：name (数据类型：VARCHAR2(50))：患者姓名\n字段名：age (数据类型：NUMBER(3))：年龄"
)
OLDER = "```sql\nSELECT name FROM PATIENT WHERE age > 60;\n```"
PLSQL = "```sql\nCREATE OR REPLACE PROCEDURE bump IS\nBEGIN\n  UPDATE PATIENT SET age = age + 1;\nEND;\n```"
API = (
    "API 描述：RegisterPatient（患者登记）描述：登记新患者。输入参数：name (string，必填)：患者姓名。"
    'age (integer，必填)：年龄。department (string，可选)：科室，默认为 "内科"。'
    "用户问题：帮我登记患者王芳，52岁，心内科。"
)
API_REFERENCE = 'RegisterPatient(name="王芳", age=52, department="心内科")'
# The candidate's answer per question marker: right SQL, wrong SQL, anything (the reference does not run), right call.
ANSWERS = {
    "[d1]": "```sql\nSELECT p.name FROM PATIENT p WHERE p.age > 60\n```",
    "[d2]": "```sql\nSELECT name FROM PATIENT WHERE age >= 18\n```",
    "[d3]": "```sql\nSELECT name FROM PATIENT\n```",
    "[a1]": '调用：RegisterPatient(name="王芳", age="52", department="心内科")',
}


def sql_item(marker: str, reference: str = OLDER, **kw: Any) -> Item:
    return Item(
        id=f"s/MedDBOps/{marker}",
        suite="s",
        track="capability",
        task="MedDBOps",
        gold_type="reference",
        gold=reference,
        question=f"{marker} 查询年龄大于60岁的患者姓名。{SCHEMA}",
        source=Source("x.jsonl", 1),
        check="sql",
        **kw,
    )


# --- declaring a check ----------------------------------------------------------------------------


def test_a_check_is_declared_by_reference_items_only_and_named_in_errors() -> None:
    assert sql_item("[d1]").to_record()["check"] == "sql"
    with pytest.raises(ItemError, match="check: must be one of"):
        replace(sql_item("[d1]"), check="regex")
    with pytest.raises(ItemError, match="check: only reference items"):
        replace(sql_item("[d1]"), gold_type="single_choice", gold="A", options=(("A", "x"), ("B", "y")))


def test_loaders_set_the_check_medbench_by_task_medpool_jsonl_by_key(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    record = {
        "question": f"[d1] 查询年龄大于60岁的患者姓名。{SCHEMA}",
        "answer": OLDER,
        "other": {"id": 1, "source": "hand"},
    }
    (suite / "MedDBOps.jsonl").write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    (suite / "MedCOT.jsonl").write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    api = {
        "id": "a1",
        "task": "MedCallAPI",
        "track": "capability",
        "gold_type": "reference",
        "question": API,
        "gold": API_REFERENCE,
        "check": "api_call",
    }
    (suite / "own.jsonl").write_text(json.dumps(api, ensure_ascii=False) + "\n", encoding="utf-8")
    checks = {item.task: item.check for item in load_items([suite]).items}
    assert checks == {"MedDBOps": "sql", "MedCOT": None, "MedCallAPI": "api_call"}
    (suite / "own.jsonl").write_text(json.dumps({**api, "check": "sq1"}, ensure_ascii=False) + "\n", encoding="utf-8")
    with pytest.raises(ItemFormatError, match=r"own\.jsonl:1: field 'check': must be one of"):
        load_items([suite])


# --- scorers: pure --------------------------------------------------------------------------------


def test_checked_items_ask_for_the_judge_with_the_objective_score() -> None:
    right = score_answer(sql_item("[d1]"), ANSWERS["[d1]"], "ok")
    assert isinstance(right, NeedsJudge) and right.contract == "reference"
    assert right.objective is not None and right.objective.value == 1.0 and right.objective.passed is True
    assert right.objective.metrics == {"execution_match": 1.0}
    assert right.objective.details["check"]["outcome"] == "match"
    wrong = score_answer(sql_item("[d2]"), ANSWERS["[d2]"], "ok")
    assert wrong.objective.value == 0.0 and wrong.objective.details["check"]["outcome"] == "mismatch"  # type: ignore[union-attr]
    empty = score_answer(sql_item("[d2]"), "", "error")
    assert empty.objective.details["check"]["outcome"] == "no_sql_found"  # type: ignore[union-attr]
    assert "empty or truncated" in empty.objective.details["notes"][0]  # type: ignore[union-attr]
    unrunnable = score_answer(sql_item("[d3]", PLSQL), ANSWERS["[d3]"], "ok")
    assert unrunnable.objective is None and unrunnable.check_failed["outcome"] == "reference_not_executable"  # type: ignore[union-attr,index]


def test_beside_judge_fallback_and_no_judge() -> None:
    judge = JudgeIdentity("judgey", "fake", "abc")
    verdict = Score(
        "scored", 35 / 40, True, {"coverage": 9.0, "total": 35.0}, judge, {"parse_stage": "strict", "rationale": "好"}
    )
    objective = score_answer(sql_item("[d2]"), ANSWERS["[d2]"], "ok").objective  # type: ignore[union-attr]
    both = beside_judge(objective, verdict)
    assert (both.value, both.passed, both.judge) == (0.0, False, judge)
    assert both.metrics == {
        "coverage": 9.0,
        "total": 35.0,
        "execution_match": 0.0,
        "judge_value": 35 / 40,
        "judge_passed": 1.0,
    }
    assert both.details["primary"] == "check" and both.details["parse_stage"] == "strict"
    failed = beside_judge(
        objective, Score("infra_error", judge=judge, details={"error": "judge_no_verdict", "reason": "x"})
    )
    assert (
        failed.status == "scored"
        and failed.value == 0.0
        and failed.details["judge_error"]["error"] == "judge_no_verdict"
    )
    needs = score_answer(sql_item("[d3]", PLSQL), "", "ok")
    fallback = judge_fallback(verdict, needs.check_failed)  # type: ignore[union-attr,arg-type]
    assert fallback.value == 35 / 40 and fallback.details["primary"] == "judge"
    assert (
        "reference_not_executable" in fallback.details["notes"][-1]
        and "scored by the judge" in fallback.details["notes"][-1]
    )
    assert without_judge(score_answer(sql_item("[d1]"), ANSWERS["[d1]"], "ok"), "no judge").value == 1.0  # type: ignore[arg-type]
    alone = without_judge(needs, "no judge is configured")  # type: ignore[arg-type]
    assert alone.status == "unscorable" and "reference_not_executable" in alone.details["reason"]


# --- the scoring stage with a FAKE judge ----------------------------------------------------------


def behaviour(judge_mode: str):
    """Candidate calls get the answer for their question's marker; judge calls GOOD (35/40, pass) or garbage."""

    def behave(index: int, payload: dict[str, Any]):
        text = json.dumps(payload.get("messages") or [], ensure_ascii=False)
        if payload.get("model") == "judgey":
            return ok(GOOD if judge_mode == "good" else "无法评分")
        return ok(next((answer for marker, answer in ANSWERS.items() if marker in text), "不知道"))

    return behave


@pytest.fixture
def fake(fake_openai):
    """``mode -> base URL`` of a fake whose candidates answer by marker and whose judge follows ``mode``."""
    return lambda mode: fake_openai(behaviour(mode))


def write_suite(tmp_path: Path, base_url: str) -> tuple[Path, Path]:
    suite = tmp_path / "suite"
    suite.mkdir()
    records = [
        {
            "question": f"{m} 查询年龄大于60岁的患者姓名。{SCHEMA}",
            "answer": ref,
            "other": {"id": m.strip("[]"), "source": "hand"},
        }
        for m, ref in (("[d1]", OLDER), ("[d2]", OLDER), ("[d3]", PLSQL))
    ]
    (suite / "MedDBOps.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    api = {
        "id": "a1",
        "task": "MedCallAPI",
        "track": "capability",
        "gold_type": "reference",
        "question": f"[a1] {API}",
        "gold": API_REFERENCE,
        "check": "api_call",
    }
    (suite / "calls.jsonl").write_text(json.dumps(api, ensure_ascii=False) + "\n", encoding="utf-8")
    return write_fake_pool(tmp_path / "pool.yaml", base_url, (("alpha", 256),), max_retries=0), suite


def pool_run(*args: str, cache: Path) -> subprocess.CompletedProcess:
    return pool_run_cli(*args, "--no-routing", cache=cache)


scores_of = scores_by_item


def test_judged_run_keeps_both_views_and_no_judge_keeps_the_check(tmp_path: Path, fake) -> None:
    pool, suite = write_suite(tmp_path, fake("good"))
    plan = pool_run("--pool", str(pool), "--data", str(suite), "--dry-run", cache=tmp_path / "c")
    assert json.loads(plan.stdout)["judge"]["verdicts"] == 4  # checked items still go to the judge
    run_dir = tmp_path / "run"
    out = pool_run("--pool", str(pool), "--data", str(suite), "--out", str(run_dir), cache=tmp_path / "c")
    assert out.returncode == 0, out.stderr
    got = scores_of(run_dir)
    d1, d2, d3, a1 = got["d1"], got["d2"], got["d3"], got["a1"]
    assert (d1["status"], d1["value"], d1["passed"]) == ("scored", 1.0, True)
    assert d1["metrics"]["execution_match"] == 1.0 and d1["metrics"]["judge_value"] == pytest.approx(35 / 40)
    assert d1["metrics"]["judge_passed"] == 1.0 and d1["metrics"]["total"] == 35
    assert d1["judge"]["model"] == "judgey" and d1["details"]["check"]["outcome"] == "match"
    assert d1["details"]["primary"] == "check" and d1["details"]["parse_stage"] == "strict"
    assert (d2["value"], d2["passed"], d2["metrics"]["judge_passed"]) == (0.0, False, 1.0)  # the judge passed wrong SQL
    assert d2["details"]["check"]["outcome"] == "mismatch"
    assert d3["value"] == pytest.approx(35 / 40) and d3["details"]["primary"] == "judge"
    assert d3["details"]["check"]["outcome"] == "reference_not_executable" and "execution_match" not in d3["metrics"]
    assert any("scored by the judge" in note for note in d3["details"]["notes"])
    assert (a1["value"], a1["metrics"]["call_match"], a1["metrics"]["param_score"]) == (1.0, 1.0, 1.0)

    judged_scores = (run_dir / "scores.jsonl").read_text(encoding="utf-8")
    again = pool_run("--rescore", str(run_dir), "--pool", str(pool), cache=tmp_path / "c")
    assert again.returncode == 0, again.stderr
    assert (run_dir / "scores.jsonl").read_text(encoding="utf-8") == judged_scores  # rescoring changes nothing

    board = tmp_path / "board"
    build([run_dir], board, FAST)
    leaderboard = json.loads((board / "leaderboard.json").read_text(encoding="utf-8"))
    bucket = next(b for b in leaderboard["families"]["capability"] if b["name"] == "MedDBOps")
    assert bucket["check"] == {"kind": "sql", "metric": "execution_match", "judge_fallback_items": 1}
    cell = bucket["cells"][0]
    assert cell["metrics"]["execution_match"]["value"] == 0.5 and cell["metrics"]["judge_pass_rate"]["value"] == 1.0
    assert cell["primary"]["value"] == pytest.approx((1 + 0 + 35 / 40) / 3)  # the judge scores only d3
    entry = next(c for c in leaderboard["checks"] if c["bucket"] == "capability/task/MedDBOps")
    assert entry["models"][0]["n_both"] == 2 and entry["models"][0]["agreement"] == 0.5
    markdown = (board / "leaderboard.md").read_text(encoding="utf-8")
    assert (
        "SQL execution match" in markdown
        and "judge_pass_rate" in markdown
        and "Objective checks vs the judge" in markdown
    )
    assert "Objective checks and decision recognition" in (board / "report.html").read_text(encoding="utf-8")

    nojudge = pool_run("--rescore", str(run_dir), "--pool", str(pool), "--no-judge", cache=tmp_path / "c")
    assert nojudge.returncode == 0, nojudge.stderr
    got = scores_of(run_dir)
    assert (got["d1"]["status"], got["d1"]["value"], got["d1"]["judge"]) == ("scored", 1.0, None)
    assert "judge_value" not in got["d1"]["metrics"] and got["d2"]["value"] == 0.0 and got["a1"]["value"] == 1.0
    assert got["d3"]["status"] == "unscorable" and "reference_not_executable" in got["d3"]["details"]["reason"]


def test_a_judge_without_verdicts_leaves_the_check_standing(tmp_path: Path, fake) -> None:
    pool, suite = write_suite(tmp_path, fake("never"))
    run_dir = tmp_path / "run"
    out = pool_run("--pool", str(pool), "--data", str(suite), "--out", str(run_dir), cache=tmp_path / "c")
    assert out.returncode == 0, out.stderr
    got = scores_of(run_dir)
    assert (got["d1"]["status"], got["d1"]["value"]) == ("scored", 1.0)
    assert (
        got["d1"]["details"]["judge_error"]["error"] == "judge_no_verdict" and got["d1"]["judge"]["model"] == "judgey"
    )
    assert got["d3"]["status"] == "infra_error"  # no check and no verdict: nothing to score with
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["extra"]["scoring"]["judge_infra_errors"] == 4


# --- routing: composite and DR beside DTR-F1 ------------------------------------------------------


def checked_rows(
    model: str, task: str, check: str, objective: list[float], judged: list[float]
) -> list[dict[str, Any]]:
    """Rows as the scoring stage writes them for checked answers: the check's value, the judge's beside."""
    metric = {"sql": "execution_match", "api_call": "call_match"}[check]
    return [
        row(
            model,
            f"{task}_{i}",
            task,
            "reference",
            o,
            passed=o == 1.0,
            judge=JUDGE,
            metrics={metric: o, "total": 40 * j, "judge_value": j, "judge_passed": float(j >= 0.85)},
            details={"primary": "check", "check": {"kind": check, "outcome": "match" if o else "mismatch"}},
        )
        for i, (o, j) in enumerate(zip(objective, judged, strict=True))
    ]


def test_orchestrator_composite_and_leaderboard_read_the_objective_value(tmp_path: Path) -> None:
    strengths = {"alpha": 0.9, "beta": 0.85}
    rows = [r for r in synthetic_rows(strengths, n_items=10, infra_rate=0.0) if r["task"] != "MedCallAPI"]
    objective = {
        "alpha": [1.0] * 8 + [0.0] * 2,
        "beta": [0.0] * 8 + [1.0] * 2,
    }  # the judge rates them the other way round
    for model in strengths:
        rows += checked_rows(model, "MedDBOps", "sql", objective[model], [1 - o for o in objective[model]])
    run_dir = write_run(tmp_path / "run", rows)
    table = load_runs([run_dir]).table
    buckets = build_buckets(table, rounds=200)
    bucket = next(b for b in buckets if b.id == "capability/task/MedDBOps")
    assert bucket.check == {"kind": "sql", "metric": "execution_match", "judge_fallback_items": 0}
    alpha = next(c for c in bucket.cells if c.entrant.model_label == "alpha")
    assert alpha.stats["score"].value == 0.8 and alpha.stats["judge_pass_rate"].value == 0.2
    assert bucket.cells[0].entrant.model_label == "alpha"  # ranked by the check, not by the judge
    composite = orchestrator(buckets, 5, ("MedDBOps",), component_floor=0.0)
    assert composite["capability_tasks"] == ["MedDBOps"]
    parts = {c["model"]: c["components"]["capability"] for c in composite["candidates"] + composite["not_nominated"]}
    assert parts == {"alpha": 0.8, "beta": 0.2}


def test_dr_accuracy_is_shown_beside_the_source_dtr_f1(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = []
    for model, dtr, dr in (
        ("alpha", [0.5, 1.0, 0.0, 0.5], [1.0, 1.0, 0.0, 1.0]),
        ("beta", [0.0, 0.5, 0.0, 0.0], [0.0, 1.0, 1.0, 0.0]),
    ):
        for i, (f1, pick) in enumerate(zip(dtr, dr, strict=True)):
            rows.append(row(model, f"x{i}", "TCM-SD", "open_label", f1, passed=f1 >= 0.5, metrics={"f1": f1}))
            rows.append(
                {
                    **row(model, f"x{i}", "TCM-SD-DR", "single_choice", pick, passed=pick == 1.0),
                    "source_item_id": f"synthetic/TCM-SD/x{i}",
                }
            )
    rows.append(row("alpha", "lonely", "TCM-SD-DR", "single_choice", 1.0, passed=True))  # no source row: not paired
    run_dir = write_run(tmp_path / "run", rows)
    build([run_dir], tmp_path / "board", FAST)
    leaderboard = json.loads((tmp_path / "board" / "leaderboard.json").read_text(encoding="utf-8"))
    (entry,) = leaderboard["decision_recognition"]
    assert (entry["task"], entry["source_task"], entry["source_statistic"]) == ("TCM-SD-DR", "TCM-SD", "dtr_f1")
    assert (entry["bucket"], entry["source_bucket"]) == ("exam/task/TCM-SD-DR", "tcm/task/TCM-SD")
    alpha = next(m for m in entry["models"] if m["model"] == "alpha")
    assert alpha["n"] == 4 and alpha["dr_accuracy"]["value"] == 0.75 and alpha["source_score"]["value"] == 0.5
    assert alpha["dr_accuracy"]["ci_method"] == "wilson"
    assert "Decision recognition beside the open answer" in (tmp_path / "board" / "leaderboard.md").read_text(
        encoding="utf-8"
    )
