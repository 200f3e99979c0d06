"""pool.run's nights: every run is indexed, compared with the last comparable night, and a
significant regression becomes exit code 3 with ``--fail-on-regression`` (FAKE models).

Night 1: alpha and beta both answer every single-choice item right. Night 2: alpha's server
turns wrong (same identity) → a significant regression naming alpha; exit 3 only when asked.
Night 3: beta is run at another temperature → compare names beta as a changed identity.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pool import RunSpec, run_pool
from pool.api import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REGRESSION
from pool.items_source import DataError
from tests.fake_pool import FakeOpenAIStarter, PoolWriter, two_option_items
from tests.fakes import ok

N_ITEMS = 30
ITEMS = two_option_items(N_ITEMS, width=2)


class Night:
    alpha_wrong = False


def behave(index: int, payload: dict[str, Any]) -> Any:
    return ok("B" if payload.get("model") == "alpha" and Night.alpha_wrong else "A")


@pytest.fixture
def fake_url(fake_openai: FakeOpenAIStarter) -> str:
    Night.alpha_wrong = False
    return fake_openai(behave)


def pool_text(url: str, beta_temperature: float = 0.0) -> str:
    return f"""backends:
  fake: {{type: openai, base_url: "{url}", max_concurrency: 4}}
models:
  - {{name: alpha, backend: fake, max_tokens: 8}}
  - {{name: beta, backend: fake, max_tokens: 8, temperature: {beta_temperature}}}
"""


def test_nights_are_indexed_compared_and_a_regression_exits_3(
    tmp_path: Path, fake_url: str, write_pool: PoolWriter
) -> None:
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in ITEMS), encoding="utf-8")
    root = tmp_path / "runs"
    pool = write_pool(pool_text(fake_url), name="pool.yaml")

    def night(name: str, pool_file: Path, **options: Any) -> Any:
        return run_pool(RunSpec(pool=pool_file, data=[data], out=root / name, no_cache=True, **options))

    first = night("n1", pool)
    assert first.exit_code == EXIT_OK and first.compared_with is None
    assert not (root / "n1" / "compare.md").exists()  # nothing earlier to compare with

    Night.alpha_wrong = True
    second = night("n2", pool, fail_on_regression=0.1)
    assert second.exit_code == EXIT_REGRESSION
    assert second.compared_with is not None and second.compared_with.resolve() == (root / "n1").resolve()
    text = (root / "n2" / "compare.md").read_text(encoding="utf-8")
    assert "REGRESSION" in text and "alpha" in text
    compare = json.loads((root / "n2" / "compare.json").read_text(encoding="utf-8"))
    regressed = {d["model"] for d in compare["deltas"] if d["significant"] and d["direction"] == "regression"}
    assert regressed == {"alpha"} and compare["regressions"] == 1
    assert "since-last-night" in (root / "n2" / "report.html").read_text(encoding="utf-8")

    Night.alpha_wrong = False
    third = night("n3", write_pool(pool_text(fake_url, beta_temperature=0.7), name="pool3.yaml"))
    assert third.exit_code == EXIT_OK  # no --fail-on-regression: a regression is reported, not an exit code
    compare = json.loads((root / "n3" / "compare.json").read_text(encoding="utf-8"))
    assert [(m["name"], m["fields"]) for m in compare["models"]["changed"]] == [("beta", ["temperature"])]
    assert compare["models"]["added"] == [] and compare["models"]["removed"] == []

    index = [json.loads(line) for line in (root / "index.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [e["run_id"] for e in index] == ["n1", "n2", "n3"]


def test_a_night_too_small_to_see_the_drop_exits_5_only_when_asked(
    tmp_path: Path, fake_url: str, write_pool: PoolWriter
) -> None:
    """Night 2 repeats night 1 over 30 items: nothing regressed, but 30 items cannot show a 5-point drop."""
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in ITEMS), encoding="utf-8")
    root = tmp_path / "runs"
    pool = write_pool(pool_text(fake_url), name="pool.yaml")

    def night(name: str, **options: Any) -> Any:
        return run_pool(RunSpec(pool=pool, data=[data], out=root / name, no_cache=True, **options))

    assert night("n1").exit_code == EXIT_OK
    quiet = night("n2")
    assert quiet.exit_code == EXIT_OK  # inconclusive is reported, not an exit code, unless asked
    gate = json.loads((root / "n2" / "compare.json").read_text(encoding="utf-8"))["gate"]
    assert gate and {g["status"] for g in gate} == {"inconclusive"}, gate
    asked = night("n3", fail_on_inconclusive=True)
    assert asked.exit_code == EXIT_INCONCLUSIVE
    assert night("n4", fail_on_inconclusive=True, fail_on_regression=0.0).exit_code == EXIT_INCONCLUSIVE
    assert night("n5", sequential=True).exit_code == EXIT_OK
    assert (root / "gate_sequential.json").is_file()  # the sequential gate's evidence, kept for the next night
    with pytest.raises(DataError, match="min_drop"):
        RunSpec(pool=pool, data=[data], min_drop=0)
