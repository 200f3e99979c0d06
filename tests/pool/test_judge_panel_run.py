"""A judge panel in a run, end to end against a FAKE OpenAI server: every member's verdict is kept,
a dead member is said and the rest decide, agreement lands in the build, and family conflicts are
named per member."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fake_pool import PADDING, judged_pool_lines, run_judged_pool, score_rows
from tests.fakes import ok

SUITE = [
    {
        "id": f"r{i}",
        "task": "qa",
        "track": "capability",
        "gold_type": "reference",
        "question": f"问题 {i}？",
        "gold": "参考答案。",
    }
    for i in range(6)
]


def verdict(total_shift: int) -> str:
    return json.dumps(
        {
            "coverage": 9 + total_shift,
            "accuracy": 9 + total_shift,
            "safety": 9,
            "grounding": 8,
            "rationale": "好",
            "grounding_source": "guideline",
            "warnings_present": [],
        }
    )


def behave(index, payload):
    """``qwen-a`` answers; ``qwen-judge`` passes everything (35/40), ``llama-judge`` fails everything
    (29/40), ``glm-judge`` passes, ``dead-judge`` never gives a verdict."""
    model = payload.get("model")
    if model == "qwen-a":
        return ok("答案。" + PADDING)
    return ok({"qwen-judge": verdict(0), "llama-judge": verdict(-3), "glm-judge": verdict(1)}.get(model, "无法评分"))


@pytest.fixture
def fake_url(fake_openai):
    return fake_openai(behave)


def run(tmp_path: Path, url: str, members: tuple[str, ...], *extra: str) -> Path:
    lines = [*judged_pool_lines(url, ["qwen-a"], members), "judges:", *[f"  - model: {m}" for m in members]]
    return run_judged_pool(tmp_path, lines, SUITE, *extra)


def test_majority_of_the_members_decides_and_every_member_is_kept(tmp_path, fake_url):
    run_dir = run(tmp_path, fake_url, ("qwen-judge", "llama-judge", "glm-judge"), "--no-routing")
    rows = score_rows(run_dir)
    assert len(rows) == 6 and all(r["passed"] is True for r in rows)  # 2 of 3 pass
    panel = rows[0]["details"]["panel"]
    assert [(m["name"], m["passed"], m["total"]) for m in panel["members"]] == [
        ("qwen-judge", True, 35),
        ("llama-judge", False, 29),
        ("glm-judge", True, 37),
    ]
    assert rows[0]["metrics"]["total"] == 35 and rows[0]["value"] == pytest.approx(35 / 40)  # median per dimension
    identity = rows[0]["judge"]["identity"]
    assert identity["rule"] == "majority" and len(identity["members"]) == 3


def test_a_dead_member_is_said_and_the_rest_decide(tmp_path, fake_url):
    rows = score_rows(run(tmp_path, fake_url, ("qwen-judge", "dead-judge", "llama-judge"), "--no-routing"))
    panel = rows[0]["details"]["panel"]
    assert panel["votes"] == 2 and panel["missing"] == 1 and panel["tie"] is True
    assert "error" in panel["members"][1] and all(r["passed"] is False for r in rows)  # a tie fails


def test_the_build_reports_agreement_and_names_family_conflicts_per_member(tmp_path, fake_url):
    run_dir = run(tmp_path, fake_url, ("qwen-judge", "llama-judge", "glm-judge"))
    board = json.loads((run_dir / "leaderboard.json").read_text(encoding="utf-8"))
    ((label, block),) = board["judge_panel"]["panels"].items()
    assert label == "panel:qwen-judge,llama-judge,glm-judge" and block["rule"] == "majority"
    assert set(block["overall"]) >= {"krippendorff_alpha_total", "fleiss_kappa_pass"}
    assert block["members"]["llama-judge"]["agreement_with_panel"] == 0.0
    assert block["members"]["qwen-judge"]["agreement_with_panel"] == 1.0
    assert block["overall"]["fleiss_kappa_pass"] is not None and block["overall"]["fleiss_kappa_pass"] < 0
    conflicts = board["judge_reliability"]["models"]["qwen-a"]["family_conflict"]["judges"]
    assert [name.rsplit("/", 1)[1] for name in conflicts] == ["qwen-judge"]
    manifest = (run_dir / "routing_manifest.yaml").read_text(encoding="utf-8")
    assert "krippendorff_alpha_total" in manifest
    assert "Judge panel" in (run_dir / "report.html").read_text(encoding="utf-8")
