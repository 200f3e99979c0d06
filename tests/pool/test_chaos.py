"""Resume equals an uninterrupted run, whatever phase the process dies in (short chaos run).

SIGKILLs while answering, re-asking short answers, judging, checking claims (--hallu), judging the ties side
by side (--pairwise) and building the routing artefacts, plus a SIGTERM, against the FAKE chaos pool (20%
injected faults, a hostile model, a dead endpoint); the long version is ``python -m bench.chaos``.
"""

from __future__ import annotations

import pytest

from bench.harness import chaos

PAIRWISE = ("--pairwise", "--pairwise-budget", "48")  # the ties judged side by side, a few dozen calls


@pytest.fixture
def chaos_pool(tmp_path):
    proc, base_url = chaos.start_fake(tmp_path, fault_rate=0.2)
    pool = chaos.write_pool(tmp_path / "pool.yaml", base_url, chaos.free_port())
    data = chaos.write_suite(tmp_path / "suite" / "items.jsonl", 15)  # 5 per task: buckets large enough to tie
    yield pool, data
    proc.terminate()
    proc.wait(10)


def test_kills_in_every_phase_then_resume_equals_a_clean_run(tmp_path, chaos_pool):
    pool, data = chaos_pool
    args = [*("--pool", str(pool), "--data", str(data), "--hallu", "--max-consecutive-failures", "3"), *PAIRWISE]
    clean, killed = tmp_path / "clean" / "run", tmp_path / "killed" / "run"  # same run id: "run"
    chaos.run_clean([*args, "--out", str(clean)], tmp_path / "cache-clean")
    report = chaos.run_with_kills(
        [*args, "--out", str(killed)], killed, tmp_path / "cache-killed", kills_per_phase=3, seed=8, sigterms=1
    )
    assert sum(report.kills.values()) >= 10, report
    assert all(report.kills[phase] >= 1 for phase in chaos.PHASES), report
    outcome = chaos.compare(clean, killed)
    assert outcome["units_lost"] == 0 and outcome["units_duplicated"] == 0, outcome
    assert outcome["judge_rows_by_non_judge"] == 0, outcome
    assert outcome["results_identical"] and outcome["scores_identical"] and outcome["manifest_identical"], outcome
    assert outcome["pairwise_identical"], outcome["pairwise_differences"]
    assert outcome["units_recorded"] == outcome["units_planned"]


def test_a_panel_killed_while_judging_resumes_to_the_same_panel_verdicts(tmp_path):
    proc, base_url = chaos.start_fake(tmp_path, fault_rate=0.2)
    try:
        pool = chaos.write_pool(tmp_path / "pool.yaml", base_url, chaos.free_port(), panel=True)
        data = chaos.write_suite(tmp_path / "suite" / "items.jsonl", 9)
        args = ["--pool", str(pool), "--data", str(data), "--max-consecutive-failures", "3"]
        clean, killed = tmp_path / "clean" / "run", tmp_path / "killed" / "run"
        chaos.run_clean([*args, "--out", str(clean)], tmp_path / "cache-clean")
        report = chaos.run_with_kills(
            [*args, "--out", str(killed)],
            killed,
            tmp_path / "cache-killed",
            kills_per_phase=2,
            seed=3,
            sigterms=0,
            phases=("judging",),
        )
    finally:
        proc.terminate()
        proc.wait(10)
    assert report.kills["judging"] >= 1, report
    outcome = chaos.compare(clean, killed)
    assert outcome["units_lost"] == 0 and outcome["units_duplicated"] == 0, outcome
    assert outcome["judge_rows_by_non_judge"] == 0, outcome
    assert outcome["results_identical"] and outcome["scores_identical"] and outcome["manifest_identical"], outcome
    panel_rows = [r for r in chaos._jsonl(killed / "scores.jsonl") if (r.get("details") or {}).get("panel")]
    assert panel_rows and {m["name"] for m in panel_rows[0]["details"]["panel"]["members"]} == set(chaos.PANEL)
