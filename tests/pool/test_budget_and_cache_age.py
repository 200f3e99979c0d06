"""A night's spend and freshness (FAKE models): ``--max-cost`` / ``--max-tokens-total`` stop issuing
requests at the cap (exit 4), the resume completes the plan to the same results as an uncapped
run; cached answers older than ``--cache-max-age`` are asked again while judge-free resume and
cache reuse within the age still work; summary.json carries tokens, cost and latency per model.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bench.harness import chaos
from pool import RunSpec, resume, run_pool
from pool.api import EXIT_BUDGET, EXIT_OK
from pool.config.schema import Price
from pool.execute.budget import Budget, call_cost
from runners.base import GenerationResponse
from tests.fake_pool import FakeOpenAIStarter, PoolWriter, two_option_items
from tests.fakes import ok

ITEMS = two_option_items(20, width=2)
PRICE = "{input_per_million: 1000, output_per_million: 2000}"  # a call costs about 0.01: easy arithmetic


def behave(index: int, payload: dict[str, Any]) -> Any:
    return ok("A because 甲" if payload.get("model") == "alpha" else "B")


@pytest.fixture
def setup(tmp_path: Path, fake_openai: FakeOpenAIStarter, write_pool: PoolWriter) -> tuple[Path, Path]:
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in ITEMS), encoding="utf-8")
    url = fake_openai(behave)
    pool = write_pool(
        f"""backends:
  fake: {{type: openai, base_url: "{url}", max_concurrency: 1, price: {PRICE}}}
models:
  - {{name: alpha, backend: fake, max_tokens: 8}}
  - {{name: beta, backend: fake, max_tokens: 8, price: {{input_per_million: 0, output_per_million: 0}}}}
""",
        name="pool.yaml",
    )
    return data, pool


def _recorded(run_dir: Path) -> int:
    with sqlite3.connect(run_dir / "run.sqlite") as conn:
        return conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]


def test_call_cost_and_budget_arithmetic() -> None:
    price = Price(input_per_million=2.0, output_per_million=6.0)
    assert call_cost(price, 1_000_000, 500_000) == pytest.approx(5.0)
    assert call_cost(None, 10, 10) is None  # unpriced: unknown, not free
    budget = Budget({"m": price}, max_cost=5.0)
    budget.charge("m", GenerationResponse("x", "stop", 1_000_000, 0, 0.1))
    assert not budget.exhausted
    budget.charge("m", GenerationResponse("x", "stop", None, None, 0.1))
    assert budget.calls_without_usage == 1 and not budget.exhausted
    budget.charge("m", GenerationResponse("x", "stop", 0, 500_000, 0.1))
    assert budget.exhausted and "cost cap reached" in budget.reason()


def test_max_cost_stops_at_the_budget_and_the_resume_completes_the_plan(
    tmp_path: Path, setup: tuple[Path, Path]
) -> None:
    data, pool = setup
    clean = run_pool(RunSpec(pool=pool, data=[data], out=tmp_path / "clean" / "run", no_cache=True, no_routing=True))
    assert clean.exit_code == EXIT_OK
    per_call = clean.summary["extra"]["costs"]["models"]["alpha"]["cost"] / 20
    assert per_call > 0 and clean.summary["extra"]["costs"]["models"]["beta"]["cost"] == 0.0

    capped_dir = tmp_path / "capped" / "run"
    capped = run_pool(
        RunSpec(pool=pool, data=[data], out=capped_dir, no_cache=True, no_routing=True, max_cost=per_call * 5.5)
    )
    assert capped.exit_code == EXIT_BUDGET
    budget = capped.summary["extra"]["budget"]
    assert budget["stopped"] and budget["not_run"] > 0
    assert (
        budget["spent_cost"] >= per_call * 5.5 and budget["spent_cost"] <= per_call * 7.01
    )  # in flight: at most one more
    assert _recorded(capped_dir) == 40 - budget["not_run"]  # the rest stays pending, never recorded as a failure
    assert not (capped_dir / "scores.jsonl").exists()  # not scored half-way: the resume scores everything

    finished = resume(capped_dir)
    assert finished.exit_code == EXIT_OK and _recorded(capped_dir) == 40
    assert chaos.normalised_results(capped_dir) == chaos.normalised_results(clean.run_dir)
    assert chaos.normalised_scores(capped_dir) == chaos.normalised_scores(clean.run_dir)


def test_max_tokens_total_caps_the_same_way(tmp_path: Path, setup: tuple[Path, Path]) -> None:
    data, pool = setup
    capped = run_pool(
        RunSpec(pool=pool, data=[data], out=tmp_path / "run", no_cache=True, no_routing=True, max_tokens_total=30)
    )
    assert capped.exit_code == EXIT_BUDGET and capped.summary["extra"]["budget"]["spent_tokens"] >= 30


def test_stale_cached_answers_are_asked_again_fresh_ones_are_reused(tmp_path: Path, setup: tuple[Path, Path]) -> None:
    data, pool = setup
    cache = tmp_path / "cache"

    def night(name: str, **options: Any) -> Any:
        return run_pool(
            RunSpec(pool=pool, data=[data], out=tmp_path / name / "run", cache_dir=cache, no_routing=True, **options)
        )

    first = night("first")
    assert first.summary["models"]["alpha"]["cache_hits"] == 0
    second = night("second")  # within the default 12 h: every answer from the cache
    assert second.summary["models"]["alpha"]["cache_hits"] == 20
    assert second.summary["extra"]["costs"]["models"]["alpha"]["cost"] == 0.0  # cache hits cost nothing tonight
    assert second.summary["extra"]["costs"]["models"]["alpha"]["cost_if_uncached"] > 0
    third = night("third", cache_max_age=0.0)  # everything is stale: asked again, and the fresh answer replaces it
    assert third.summary["models"]["alpha"]["cache_hits"] == 0
    rows = [json.loads(line) for line in (third.run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert not any(r["cached"] for r in rows)
    fourth = night("fourth")
    assert fourth.summary["models"]["alpha"]["cache_hits"] == 20
    with sqlite3.connect(third.run_dir / "run.sqlite") as conn:
        options = json.loads(conn.execute("SELECT options_json FROM runs").fetchone()[0])
    assert options["cache_max_age"] == 0.0  # stored: a resume of this run keeps asking afresh


def test_costs_reach_scores_leaderboard_manifest_and_report(tmp_path: Path, setup: tuple[Path, Path]) -> None:
    import yaml

    data, pool = setup
    run = run_pool(RunSpec(pool=pool, data=[data], out=tmp_path / "run", no_cache=True))
    assert run.exit_code == EXIT_OK
    results = [json.loads(line) for line in (run.run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    alpha = [r for r in results if r["model"] == "alpha"]
    expected = sum(r["prompt_tokens"] * 1000 + r["completion_tokens"] * 2000 for r in alpha) / 1e6 / len(alpha)
    scores = [json.loads(line) for line in (run.run_dir / "scores.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sum(s["cost"] for s in scores if s["model"] == "alpha") / 20 == pytest.approx(expected)
    frontier = json.loads((run.run_dir / "leaderboard.json").read_text(encoding="utf-8"))["cost_frontier"]["exam"]
    by_model = {p["model"]: p for p in frontier}
    assert by_model["alpha"]["score"] == 1.0 and by_model["alpha"]["mean_cost"] == pytest.approx(expected, rel=1e-4)
    assert by_model["beta"]["score"] == 0.0 and by_model["beta"]["mean_cost"] == 0.0
    assert by_model["alpha"]["on_frontier"] and by_model["beta"]["on_frontier"]  # better-but-dearer and free-but-worse
    manifest = yaml.safe_load((run.run_dir / "routing_manifest.yaml").read_text(encoding="utf-8"))
    assert manifest["models"]["alpha"]["mean_cost_per_item"] == pytest.approx(expected, rel=1e-4)
    candidate = manifest["buckets"]["exam/task/mcq"]["candidates"][0]
    assert candidate["model"] == "alpha" and candidate["mean_cost"] == pytest.approx(expected, rel=1e-4)
    assert 'id="cost"' in (run.run_dir / "report.html").read_text(encoding="utf-8")
