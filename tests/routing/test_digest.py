"""The end-of-run digest (routing.report.digest): pass rate, mean C/A/S/G and omitted must_warn per model,
per task (reference) and per domain (criteria), cut short on a big run, written to digest.md, and
printed by ``pool.run`` at the end of a run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from pool.api import RunResult
from pool.run import _print_summary
from routing.report.digest import digest_lines, digest_run

REPO = Path(__file__).resolve().parents[2]


def row(
    model: str,
    gold_type: str,
    group: str,
    dims: tuple[int, int, int, int] | None,
    *,
    passed: bool | None = None,
    missing: tuple[str, ...] = (),
    status: str = "scored",
    n: int = 0,
) -> dict[str, Any]:
    """A scores.jsonl row as the scoring stage writes it (only the fields the digest reads vary)."""
    metrics = dict(zip(("coverage", "accuracy", "safety", "grounding"), dims or (), strict=False))
    total = sum(dims) if dims else None
    if dims:
        metrics["total"] = total
    family = {"reference": "capability", "criteria": "specialty"}.get(gold_type, "exam")
    return {
        "model": model,
        "item_id": f"s/{group}/{n}",
        "suite": "s",
        "track": "x",
        "gold_type": gold_type,
        "task": group if gold_type != "criteria" else "internists",
        "domain": group if gold_type == "criteria" else None,
        "family": family,
        "status": status,
        "value": None if status != "scored" else (total / 40 if total is not None else 1.0),
        "passed": (passed if passed is not None else bool(total and total >= 34 and dims[2] >= 8))
        if status == "scored"
        else None,
        "metrics": metrics,
        "judge": None,
        "details": {"missing_warnings": list(missing)} if gold_type == "criteria" else {},
    }


def write_scores(run_dir: Path, rows: list[dict[str, Any]]) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "scores.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    return run_dir


def verifier_like_rows() -> list[dict[str, Any]]:
    return [
        row("qwen3", "reference", "MedCallAPI", (10, 10, 10, 10), n=1),
        row("qwen3", "reference", "MedDBOps", (8, 8, 10, 9), n=2),
        row("qwen3", "reference", "MedShield", (10, 10, 10, 10), n=3),
        row("qwen3", "reference", "MedShield", None, status="infra_error", n=4),  # no verdict: counted, not averaged
        row("qwen3", "criteria", "cardiology:hypertension", (9, 10, 6, 0), missing=("不可自行停药",), n=5),
        row("qwen3", "criteria", "psychiatry:depressive", (10, 10, 10, 3), n=6),
        row("qwen3", "single_choice", "exam", None, passed=True, n=7),  # another family: not in the digest
        row("small", "criteria", "cardiology:hypertension", (5, 5, 4, 0), missing=("不可自行停药", "及时就医"), n=5),
    ]


def test_the_digest_counts_what_the_judge_said(tmp_path):
    models = digest_run(write_scores(tmp_path / "run", verifier_like_rows()))
    assert models is not None
    qwen, small = models
    assert (qwen.overall.n, qwen.overall.passed, qwen.overall.no_verdict) == (5, 3, 1)
    assert qwen.headline() == (
        "qwen3: 通过 3/5 通过率 60.0% C:9.4 A:9.6 S:9.2 G:6.4 → 综合 34.6/40 无评分 1；遗漏 must_warn 1 条（1/2 题）"
    )
    lines = digest_lines(models)
    assert "    task MedShield n=1 通过率 100.0% C:10.0 A:10.0 S:10.0 G:10.0 → 综合 40.0/40 无评分 1" in lines
    assert "    domain cardiology:hypertension n=1 通过率 0.0% C:9.0 A:10.0 S:6.0 G:0.0 → 综合 25.0/40" in lines
    assert "    ⚠ 遗漏 must_warn: 不可自行停药 ×1" in lines
    assert small.headline().endswith("遗漏 must_warn 2 条（1/1 题）")
    assert not any("exam" in line for line in lines)


def test_a_big_run_prints_the_first_lines_and_digest_md_holds_everything(tmp_path):
    rows = [row("m", "criteria", f"system{i:02d}:topic", (9, 9, 9, 9), n=i) for i in range(20)]
    rows += [row("m", "criteria", "system00:topic", (9, 9, 9, 9), missing=(f"警示{i}",), n=100 + i) for i in range(5)]
    run_dir = write_scores(tmp_path / "run", rows)
    lines = digest_lines(digest_run(run_dir) or [])
    domain_lines = [line for line in lines if line.startswith("    domain ")]
    assert len(domain_lines) == 6 and domain_lines[0].startswith("    domain system00:topic n=6")
    assert "    … 14 more domains" in lines
    assert (
        lines[-1].startswith("  (the first lines only") and "digest.md" in lines[-1] and "leaderboard.md" in lines[-1]
    )
    assert any(line.startswith("    ⚠ 遗漏 must_warn:") and line.endswith("… 2 more") for line in lines)

    done = subprocess.run(
        [sys.executable, "-m", "routing.digest", str(run_dir)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    markdown = (run_dir / "digest.md").read_text(encoding="utf-8")
    assert all(f"| system{i:02d}:topic |" in markdown for i in range(20))
    assert all(f"- 警示{i} ×1" in markdown for i in range(5))
    missing = subprocess.run(
        [sys.executable, "-m", "routing.digest", str(tmp_path / "nowhere")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert missing.returncode == 2 and "scores.jsonl" in missing.stderr


def test_pool_run_prints_the_digest_at_the_end_and_writes_digest_md(tmp_path, capsys):
    run_dir = write_scores(tmp_path / "run", verifier_like_rows())
    summary = {"models": {"qwen3": {"status": {"ok": 7}}, "small": {"status": {"ok": 1}}}}
    _print_summary(RunResult(run_dir, "run", 0, summary=summary))
    out = capsys.readouterr().out
    assert "judged answers (通过率" in out and "qwen3: 通过 3/5" in out and "⚠ 遗漏 must_warn: 不可自行停药" in out
    assert "## qwen3" in (run_dir / "digest.md").read_text(encoding="utf-8")
    empty = write_scores(tmp_path / "exam-only", [row("m", "single_choice", "exam", None, passed=True)])
    _print_summary(RunResult(empty, "exam-only", 0, summary={"models": {"m": {"status": {"ok": 1}}}}))
    assert "judged answers: none in this run" in capsys.readouterr().out
    unscored = tmp_path / "unscored"
    unscored.mkdir()
    _print_summary(RunResult(unscored, "unscored", 130, summary={"models": {}}))
    assert "judged answers" not in capsys.readouterr().out and not (unscored / "digest.md").exists()
