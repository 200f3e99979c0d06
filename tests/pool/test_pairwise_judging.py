"""``python -m pool.pairwise``: judged battles between models whose absolute scores tie, with FAKE judges.

Four FAKE candidates answer twelve reference questions; each answer carries its model's hidden
quality (m1 worst … m4 best). The rubric verdicts of both judges are the same for every answer, so
the night's scores tie exactly and no bucket is decided. Side by side the judges differ:

- ``oracle`` names the answer of higher quality, whatever the order;
- ``biased`` answers "A" (the first position) for half the requests, chosen by a hash of the
  request, and names the better answer otherwise.

Expected: the oracle is consistent on every pair; the biased judge on about half (ties, never a
win for the worse model); judged Bradley–Terry puts the four models in their true order; the judged
decision decides the bucket the scores left tied; a repeated command asks nothing again.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.fake_pool import REPO, pool_run_cli
from tests.fakes.pairwise_judges import behave, tied_night_files


@pytest.fixture(scope="module")
def night(tmp_path_factory):
    """A judged run of the four models (absolute scores tied), and its pool file."""
    from tests.fakes import ThreadedFakes
    from tests.fakes.openai_fake import FakeOpenAIServer

    tmp = tmp_path_factory.mktemp("pairwise")
    fakes = ThreadedFakes()
    url = fakes.start(FakeOpenAIServer(behave=behave)).base_url
    pool, data = tied_night_files(tmp, url)
    run_dir = tmp / "run"
    out = pool_run_cli("--pool", str(pool), "--data", str(data), "--out", str(run_dir), cache=tmp / "cache")
    assert out.returncode == 0, out.stderr
    yield run_dir, tmp
    fakes.stop_all()


def pairwise(run_dir: Path, cache: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pool.pairwise", str(run_dir), "--cache-dir", str(cache), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_scores_tie_and_the_dry_run_counts_the_battles_within_the_budget(night):
    run_dir, tmp = night
    manifest = (run_dir / "routing_manifest.yaml").read_text(encoding="utf-8")
    assert "decisive: false" in manifest and "decisive: true" not in manifest
    out = pairwise(run_dir, tmp / "cache", "--dry-run")
    assert out.returncode == 0, out.stderr
    planned = json.loads(out.stdout)
    # 4 tied models: 6 pairs × 12 items = 72 battles, each 2 orders × 2 judges = 4 calls
    assert planned["tied_pairs"] == 6 and planned["battles_without_budget"] == 72
    assert planned["battles"] == 72 and planned["judge_calls"] == 288
    capped = json.loads(pairwise(run_dir, tmp / "cache", "--dry-run", "--budget", "40").stdout)
    assert capped["battles"] == 10 and capped["judge_calls"] == 40  # round-robin: every pair gets a battle
    pool = tmp / "pool.yaml"
    budgeted = tmp / "budgeted.yaml"
    budgeted.write_text(pool.read_text(encoding="utf-8") + "pairwise: {budget: 24, enabled: false}\n", encoding="utf-8")
    from_pool = json.loads(pairwise(run_dir, tmp / "cache", "--dry-run", "--pool", str(budgeted)).stdout)
    assert from_pool["budget"] == 24 and from_pool["battles"] == 6  # the pool file's budget when --budget is not given
    assert not (run_dir / "battles.jsonl").exists()


def test_judged_battles_recover_the_true_order_and_report_position_consistency(night):
    run_dir, tmp = night
    out = pairwise(run_dir, tmp / "cache")
    assert out.returncode == 0, out.stderr
    report = json.loads((run_dir / "pairwise_judged.json").read_text(encoding="utf-8"))
    assert report["battles"] == "judged"
    oracle, biased = report["judges"]["oracle"], report["judges"]["biased"]
    assert oracle["pairs"] == 72 and oracle["consistent"] == 1.0 and oracle["first_position"] == 0.5
    # the biased judge agrees with itself only when its coin spared the order that shows the worse model first
    assert 0.35 <= biased["consistent"] <= 0.65 and biased["first_position"] > 0.65
    rows = [json.loads(line) for line in (run_dir / "battles.jsonl").read_text(encoding="utf-8").splitlines()]
    by_judge = {j: [r for r in rows if r["judge"] == j] for j in ("oracle", "biased")}
    assert all(r["outcome"] != "tie" for r in by_judge["oracle"])
    ties = [r for r in by_judge["biased"] if r["outcome"] == "tie"]
    assert ties and len(ties) == round((1 - biased["consistent"]) * 72)
    assert all(
        r["outcome"] == "tie" or (r["a"] if r["outcome"] == "a" else r["b"]) == max(r["a"], r["b"]) for r in rows
    ), "a position-biased judge must never hand a win to the worse answer"
    (bucket,) = [b for b in report["buckets"].values() if b["judged_decision"]["n_battles"]]
    ratings = [m["model"] for m in bucket["ratings"]["models"]]
    assert ratings == ["m4", "m3", "m2", "m1"] and bucket["ratings"]["battles"] == "judged"
    assert bucket["score_decision"]["decisive"] is False
    decided = bucket["judged_decision"]
    assert decided["leader"] == "m4" and decided["decisive"] is True and decided["tied_top"] == ["m4"]
    totals = report["totals"]
    assert totals["decisive_with_scores"] == 0 and totals["decisive_with_judged_battles"] == 1
    assert totals["calls_made"] == 288


def test_a_repeated_command_asks_nothing_again(night):
    run_dir, tmp = night
    first = pairwise(run_dir, tmp / "cache")
    assert first.returncode == 0, first.stderr
    again = pairwise(run_dir, tmp / "cache", "--no-cache")  # no cache: only the stored verdicts can answer
    assert again.returncode == 0, again.stderr
    report = json.loads((run_dir / "pairwise_judged.json").read_text(encoding="utf-8"))
    assert report["totals"]["calls_made"] == 0 and report["totals"]["judged_battles"] == 144


def test_routing_build_shows_the_judged_decisions_beside_the_scores_and_reports_a_low_consistency_judge(night):
    run_dir, tmp = night
    assert pairwise(run_dir, tmp / "cache").returncode == 0
    out = subprocess.run(
        [sys.executable, "-m", "routing.build", "--run", str(run_dir), "--cv-folds", "0"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "1 of the decisive buckets decided by judged battles" in out.stdout
    assert "judge biased: position consistency" in out.stdout
    leaderboard = json.loads((run_dir / "leaderboard.json").read_text(encoding="utf-8"))
    block = leaderboard["judged_battles"]
    assert block["battles"] == "judged" and block["judges"]["oracle"]["consistent"] == 1.0
    assert [w.split(":")[0] for w in block["warnings"]] == ["judge biased"]  # below 0.6; the oracle is not reported
    (entry,) = block["buckets"].values()
    assert [m["model"] for m in entry["ratings"]["models"]] == ["m4", "m3", "m2", "m1"]
    manifest = yaml.safe_load((run_dir / "routing_manifest.yaml").read_text(encoding="utf-8"))
    (route,) = [r for r in manifest["buckets"].values() if r.get("judged")]
    assert route["model"] == "m4" and route["decisive"] is True and route["score_decisive"] is False
    assert route["chosen_by"] == "judged_battles" and route["decided_by"] == "judged battles"
    assert {j["judge"]: j["consistent"] for j in route["judged"]["judges"]}["oracle"] == 1.0
    assert len(route["tied_top"]) == 4  # the score decision's fields stay as the scores decided them
    report = (run_dir / "report.html").read_text(encoding="utf-8")
    assert 'id="judged-battles"' in report and "low position consistency" in report
    assert "decided by judged battles" in (run_dir / "leaderboard.md").read_text(encoding="utf-8")


def test_a_damaged_battles_file_stops_the_build_naming_its_line(night, tmp_path):
    run_dir, _ = night
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    lines = (
        (copy / "battles.jsonl").read_text(encoding="utf-8").splitlines() if (copy / "battles.jsonl").exists() else []
    )
    lines[1:1] = ['{"judge": "oracle", "item_id": "q", "a": "m1", "b": "m2", "ab": "left", "ba": "A"}']
    (copy / "battles.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "routing.build", "--run", str(copy), "--cv-folds", "0"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 2 and f"{copy / 'battles.jsonl'}:2: ab:" in out.stderr, out.stderr
