"""The router on a pool of FAKE specialists, end to end with the real CLIs: ``pool.run`` builds a manifest,
``python -m routing.serve`` serves it, and a second ``pool.run`` on held-out questions runs the router as
one more pool member — it must route the questions to the right specialist, answer them well, and
become the default model of that run's manifest."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from bench.harness.router import first_run, running_router
from bench.harness.specialists import write_specialist_pool, write_suite
from tests.fake_pool import pool_run_cli, score_rows
from tests.fakes import ThreadedFakes
from tests.fakes.openai_fake import FakeOpenAIServer
from tests.fakes.specialists import question_of, specialist_behaviour

RIGHT = {"T1": "card", "T2": "endo"}


@pytest.fixture
def specialists(fakes: ThreadedFakes) -> tuple[FakeOpenAIServer, dict]:
    key: dict = {}
    fake = fakes.start(FakeOpenAIServer(behave=specialist_behaviour(key)))
    return fake, key


def test_the_router_routes_held_out_questions_right_and_leads_the_next_run(tmp_path: Path, specialists) -> None:
    fake, key = specialists
    key.update(write_suite(tmp_path / "train.jsonl", 60, "train"))
    run_1, _ = first_run(tmp_path, fake.base_url)
    manifest = yaml.safe_load((run_1 / "routing_manifest.yaml").read_text(encoding="utf-8"))
    assert {b: e["model"] for b, e in manifest["buckets"].items()} == {"exam/task/T1": "card", "exam/task/T2": "endo"}
    assert manifest["default"]["model"] == "gen"  # the best single model: what the router must beat

    held_out = write_suite(tmp_path / "held-out.jsonl", 30, "held-out")  # questions the router never saw
    key.update(held_out)
    with running_router(run_1, tmp_path) as router_url:
        pool_2 = write_specialist_pool(tmp_path / "pool-2.yaml", fake.base_url, router_url=router_url)
        run_2 = tmp_path / "run-2"
        proc = pool_run_cli(
            "--pool",
            str(pool_2),
            "--data",
            str(tmp_path / "held-out.jsonl"),
            "--out",
            str(run_2),
            cache=tmp_path / "cache",
        )
        assert proc.returncode == 0, proc.stderr[-3000:]

    # every held-out question reached the fake once per specialist, plus once through the router
    asked = Counter(
        (question_of(r.payload), r.payload["model"]) for r in fake.requests if question_of(r.payload) in held_out
    )
    routed_to = {q: m for (q, m), n in asked.items() if n == 2}
    assert len(routed_to) == len(held_out)
    right = sum(routed_to[q] == RIGHT[item["task"]] for q, item in held_out.items())
    assert right / len(held_out) >= 0.93

    rows = [r for r in score_rows(run_2) if r["model"] == "router"]
    assert len(rows) == len(held_out) and all(r["status"] == "scored" for r in rows)
    assert sum(r["value"] for r in rows) / len(rows) >= 0.85

    manifest_2 = yaml.safe_load((run_2 / "routing_manifest.yaml").read_text(encoding="utf-8"))
    assert manifest_2["default"]["model"] == "router"
    summary = json.loads((run_2 / "summary.json").read_text(encoding="utf-8"))
    assert summary["models"]["router"]["status"]["ok"] == len(held_out)


def test_the_end_to_end_row_of_the_first_run_matches_the_known_bucket_row(tmp_path: Path, specialists) -> None:
    """On questions whose task is plain from their words, inferring the bucket costs nothing."""
    from routing.build import BuildOptions
    from routing.load.runs import load_runs
    from routing.serve.validation import end_to_end_row

    fake, key = specialists
    key.update(write_suite(tmp_path / "train.jsonl", 60, "train"))
    run_1, _ = first_run(tmp_path, fake.base_url)
    row = end_to_end_row(load_runs([run_1]), None, BuildOptions().parameters(), k=5, seed=0, rounds=200)
    exam = row["families"]["exam"]
    assert exam["evaluated"] == 120 and exam["classifier_accuracy"]["bucket"] >= 0.93
    assert exam["same_model_as_known"] >= 0.93
    assert exam["end_to_end"]["value"] >= exam["best_single"]["value"] and exam["lift"]["ci"][0] > 0
    assert abs(exam["lift_vs_known"]["value"]) <= 0.02
