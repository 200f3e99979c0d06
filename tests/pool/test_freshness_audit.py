"""``python -m pool.freshness`` against a FAKE judge that knows which gold points are drifted: the report lists
exactly those, the suite is byte-identical afterwards, ``--dry-run`` counts the calls, an unparseable reply is
re-asked once and then ``uncertain``, a panel combines by majority, and a killed audit resumes without asking a
judge again for a verdict it has."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pool.freshness.audit import EXIT_INFRA, EXIT_OK, plan_audit, run_audit
from pool.freshness.cli import main
from pool.freshness.judging import Opinion, combine
from pool.freshness.points import domain_groups, gold_points, normalised
from pool.freshness.spec import AuditInputError, FreshnessSpec
from tests.fakes.freshness_judge import FreshnessJudge, HeldFreshnessServer
from tests.fakes.openai_fake import FakeOpenAIServer
from tests.processes import count_results, eventually

REPO = Path(__file__).resolve().parents[2]
SUITE = """\
questions:
- id: HTN_01
  question: 家里老人血压偏高，日常吃饭该注意什么？
  expected_domain: [cardiology:hypertension]
  expected_topics: [每日盐量（克数）, 限酒, 减重]
  must_warn: [勿擅自停药]
  source_refs: [内科学教材]
  must_not: []
- id: HTN_02
  question: 高血压病人的血压降到多少算合适？
  expected_domain: [cardiology:hypertension]
  expected_topics: [血压目标<140/90, 限酒。]
  must_warn: [勿擅自停药]
  source_refs: [高血压指南2024]
  must_not: []
- id: DM_01
  question: 糖尿病人的糖化血红蛋白该控制在多少？
  expected_domain: [endocrine:diabetes_t2]
  expected_topics: [血糖目标<7%]
  must_warn: []
  source_refs: [内科学教材]
  must_not: []
"""
DRIFTED = {"血压目标<140/90", "减重"}
HTN_POINTS = ["每日盐量（克数）", "限酒", "减重", "勿擅自停药", "血压目标<140/90"]


def write_suite(tmp_path: Path) -> Path:
    path = tmp_path / "book-gold" / "internists.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SUITE, encoding="utf-8")
    return path


def pool_text(base_url: str, judges: tuple[str, ...] = ("judgey",), max_concurrency: int = 4) -> str:
    if len(judges) == 1:
        judge = f"judge:\n  backend: fake\n  model: {judges[0]}\n  name: {judges[0]}\n"
    else:
        judge = "judges:\n" + "".join(f"  - backend: fake\n    model: {j}\n    name: {j}\n" for j in judges)
    return (
        textwrap.dedent(
            f"""\
        backends:
          fake:
            type: openai
            base_url: {base_url}
            max_concurrency: {max_concurrency}
            max_retries: 0
            timeout_s: 30
        models:
          - name: candidate
            backend: fake
        """
        )
        + judge
    )


def spec(suite: Path, pool: Path, out: Path, **kw: object) -> FreshnessSpec:
    return FreshnessSpec(data=(str(suite),), pool=str(pool), out=str(out), no_cache=True, **kw)  # type: ignore[arg-type]


# --- gold points ----------------------------------------------------------------------------------


def test_gold_points_are_the_union_of_topics_and_warnings_deduplicated_per_domain(tmp_path: Path) -> None:
    from pool.items_source import load_run_items

    items = load_run_items([str(write_suite(tmp_path))]).scorable_items
    groups = domain_groups(items, ["cardiology"])  # a system takes every cardiology:* item
    points = gold_points("cardiology", groups["cardiology"])
    assert [p.text for p in points] == HTN_POINTS  # "限酒。" is "限酒"; 勿擅自停药 once
    by_text = {p.text: p for p in points}
    assert by_text["勿擅自停药"].kinds == ("must_warn",)
    assert by_text["勿擅自停药"].item_ids == ("book-gold/internists/HTN_01", "book-gold/internists/HTN_02")
    assert by_text["限酒"].source_refs == ("内科学教材", "高血压指南2024")
    assert by_text["限酒"].carrier.gold["source_refs"] == ("内科学教材", "高血压指南2024")
    assert normalised(" 限酒 。") == normalised("限酒") and points[0].id.startswith("cardiology/")
    assert set(domain_groups(items, [])) == {"cardiology", "endocrine"}  # every system on its own
    assert gold_points("cardiology", groups["cardiology"], max_points=2) == points[:2]
    with pytest.raises(ValueError, match=r"--domain cardiolgy:.*did you mean 'cardiology'"):
        domain_groups(items, ["cardiolgy"])


def test_a_panel_combines_three_way_labels_by_majority() -> None:
    point = object()  # combine only carries the point along

    def said(*labels: str | None) -> list[Opinion]:
        return [
            Opinion(
                f"j{i}",
                label,
                "指南 2024" if label == "drifted" else "unknown",
                f"n{i}",
                "judged" if label else "failed",
            )
            for i, label in enumerate(labels)
        ]

    verdict = combine(point, said("current", "drifted", "drifted"))  # type: ignore[arg-type]
    assert (verdict.verdict, verdict.current_guideline, verdict.note) == ("drifted", "指南 2024", "n1")
    split = combine(point, said("current", "drifted"))  # type: ignore[arg-type]
    assert split.verdict == "uncertain" and split.split and not split.failed
    none = combine(point, said(None, None))  # type: ignore[arg-type]
    assert none.verdict == "uncertain" and none.failed
    assert combine(point, said("current", None)).verdict == "current"  # type: ignore[arg-type]  # a dead member has no vote


# --- the audit against a fake judge ---------------------------------------------------------------


def test_the_report_lists_exactly_the_drifted_points_and_the_suite_is_untouched(
    tmp_path: Path, fake_openai, write_pool
) -> None:
    suite = write_suite(tmp_path)
    before = suite.read_bytes()
    judge = FreshnessJudge(DRIFTED)
    pool = write_pool(pool_text(fake_openai(judge)))
    result = run_audit(spec(suite, pool, tmp_path / "audit"))
    assert result.exit_code == EXIT_OK
    assert suite.read_bytes() == before  # the gold is never written
    assert {v.point.text for v in result.drifted} == DRIFTED
    document = json.loads((tmp_path / "audit" / "freshness.json").read_text(encoding="utf-8"))
    drifted = [p["text"] for d in document["domains"].values() for p in d["points"] if p["verdict"] == "drifted"]
    assert set(drifted) == DRIFTED and document["counts"] == {"current": 4, "drifted": 2, "uncertain": 0, "points": 6}
    report = (tmp_path / "audit" / "freshness" / "cardiology.md").read_text(encoding="utf-8")
    rows = [line for line in report.splitlines() if line.startswith("| ") and "book-gold/" in line]
    assert [r.split(" | ")[1] for r in rows if " | drifted | " in r] == ["drifted", "drifted"]
    assert {r.split(" | ")[0][2:] for r in rows if " | drifted | " in r} == {"血压目标&lt;140/90", "减重"}
    assert "| 3 | 2 | 0 | 5 |" in report  # counts first: current, drifted, uncertain, points
    assert "高血压指南 2024" in report and "cutoff" in report
    assert (tmp_path / "audit" / "freshness" / "endocrine.md").is_file()
    assert sum(judge.asked.values()) == 6 and set(judge.asked.values()) == {1}


def test_dry_run_counts_the_calls_of_a_panel_and_sends_nothing(tmp_path: Path, fake_openai, write_pool) -> None:
    suite = write_suite(tmp_path)
    judge = FreshnessJudge(DRIFTED)
    pool = write_pool(pool_text(fake_openai(judge), judges=("j1", "j2")))
    described = plan_audit(spec(suite, pool, tmp_path / "audit", domains=("cardiology:hypertension",)))
    assert described["points"] == 5 and described["domains"] == {"cardiology:hypertension": 5}
    assert described["calls"] == 10 and described["requests_at_most"] == 20  # 5 points × 2 judges, one re-ask each
    assert [j["calls"] for j in described["judges"]] == [5, 5] and described["cost_at_most"] is None
    assert not (tmp_path / "audit").exists()
    exit_code = main(["--data", str(suite), "--pool", str(pool), "--max", "2", "--dry-run"])
    assert exit_code == 0 and not judge.asked


def test_a_panel_of_three_decides_by_majority(tmp_path: Path, fakes, write_pool) -> None:
    suite = write_suite(tmp_path)
    honest, contrarian = FreshnessJudge(DRIFTED), FreshnessJudge(set(HTN_POINTS) - DRIFTED)

    def behave(index: int, payload: dict) -> object:
        return (contrarian if payload.get("model") == "j3" else honest)(index, payload)

    url = fakes.start(FakeOpenAIServer(behave=behave)).base_url  # type: ignore[arg-type]
    pool = write_pool(pool_text(url, judges=("j1", "j2", "j3")))
    result = run_audit(spec(suite, pool, tmp_path / "audit", domains=("cardiology:hypertension",)))
    assert result.exit_code == EXIT_OK and {v.point.text for v in result.drifted} == DRIFTED
    assert all(len(v.opinions) == 3 for v in result.verdicts)


def test_an_unparseable_reply_is_reasked_once_then_uncertain(tmp_path: Path, fake_openai, write_pool) -> None:
    suite = write_suite(tmp_path)
    judge = FreshnessJudge(DRIFTED, unparseable={"限酒"})
    pool = write_pool(pool_text(fake_openai(judge)))
    result = run_audit(spec(suite, pool, tmp_path / "audit", domains=("cardiology:hypertension",)))
    assert result.exit_code == EXIT_OK  # the judge answered: an unreadable verdict is uncertain, not a failure
    verdict = next(v for v in result.verdicts if v.point.text == "限酒")
    assert verdict.verdict == "uncertain" and verdict.opinions[0].status == "unparseable"
    assert judge.asked["限酒"] == 2 and judge.asked["减重"] == 1


def test_a_failed_judge_exits_1_and_an_existing_folder_is_refused(tmp_path: Path, fake_openai, write_pool) -> None:
    from tests.fakes import server_error

    suite = write_suite(tmp_path)
    pool = write_pool(pool_text(fake_openai(default=server_error())))
    result = run_audit(spec(suite, pool, tmp_path / "audit", domains=("endocrine",)))
    assert result.exit_code == EXIT_INFRA and result.counts["uncertain"] == 1
    assert "no verdict" in (tmp_path / "audit" / "freshness" / "endocrine.md").read_text(encoding="utf-8")
    with pytest.raises(AuditInputError, match="--resume"):
        run_audit(spec(suite, pool, tmp_path / "audit"))


def test_a_killed_audit_resumes_without_asking_again(tmp_path: Path, fakes, write_pool) -> None:
    suite = write_suite(tmp_path)
    judge = FreshnessJudge(DRIFTED)
    fake = fakes.start(HeldFreshnessServer(3, behave=judge))
    pool = write_pool(pool_text(fake.base_url, max_concurrency=1))  # type: ignore[attr-defined]
    out = tmp_path / "audit"
    env = {**os.environ, "MEDPOOL_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "pool.freshness", "--data", str(suite), "--pool", str(pool), "--no-cache"]
    killed = subprocess.Popen([*command, "--out", str(out)], cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
    assert eventually(lambda: count_results(out / "run.sqlite") >= 3 and fake.held == 1, 60)  # type: ignore[attr-defined]
    killed.send_signal(signal.SIGKILL)
    killed.wait(10)
    assert eventually(lambda: fake.held == 0, 10)  # type: ignore[attr-defined]  # its held request was dropped
    assert sum(judge.asked.values()) == 3 and count_results(out / "run.sqlite") == 3
    fake.release()  # type: ignore[attr-defined]
    resumed = subprocess.run(
        [sys.executable, "-m", "pool.freshness", "--resume", str(out), "--no-cache"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert sum(judge.asked.values()) == 6 and set(judge.asked.values()) == {1}  # no point asked twice
    assert "2 drifted" in resumed.stdout
    refused = subprocess.run(
        [*command, "--resume", str(out), "--max", "1"], cwd=REPO, env=env, capture_output=True, text=True, check=False
    )
    assert refused.returncode == 2 and "--max 1" in refused.stderr and "keeps its options" in refused.stderr


# --- how a later run finds the audit ---------------------------------------------------------------


def test_a_run_whose_pool_names_the_audit_flags_the_items_carrying_a_drifted_point(
    tmp_path: Path, fake_openai, write_pool
) -> None:
    from pool import RunInputError, RunSpec, run_pool
    from tests.fakes.counting_judge import CountingJudge

    suite = write_suite(tmp_path)
    audit_pool = write_pool(pool_text(fake_openai(FreshnessJudge({"血压目标<140/90"}))), name="audit_pool.yaml")
    assert run_audit(spec(suite, audit_pool, tmp_path / "audit")).exit_code == EXIT_OK
    run_url = fake_openai(CountingJudge({}, judge="judgey"))
    pool = write_pool(pool_text(run_url) + "freshness: audit/freshness.json\n")  # read from the pool file's folder
    result = run_pool(RunSpec(pool=str(pool), data=[str(suite)], out=str(tmp_path / "run"), no_cache=True))
    assert result.exit_code == EXIT_OK, result
    assert (tmp_path / "run" / "freshness.json").read_bytes() == (tmp_path / "audit" / "freshness.json").read_bytes()
    leaderboard = json.loads((tmp_path / "run" / "leaderboard.json").read_text(encoding="utf-8"))
    assert leaderboard["gold_freshness"]["drifted_points"][0]["items_in_build"] == ["book-gold/internists/HTN_02"]
    assert "⚠ gold may be stale: 1 of its items" in (tmp_path / "run" / "leaderboard.md").read_text(encoding="utf-8")
    missing = write_pool(pool_text(run_url) + "freshness: nowhere/freshness.json\n", name="missing.yaml")
    with pytest.raises(RunInputError, match=r"missing\.yaml:\d+: freshness: .*nowhere/freshness\.json: cannot be read"):
        run_pool(RunSpec(pool=str(missing), data=[str(suite)], out=str(tmp_path / "run2"), no_cache=True))
    assert not (tmp_path / "run2").exists()
