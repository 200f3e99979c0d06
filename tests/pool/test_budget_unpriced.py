"""``--max-cost`` over a partly priced pool: the run says once, at its start, which models it cannot count.

A model without a ``price:`` has an unknown cost, so its calls never move the cost cap; a silent cap
would be overrun by exactly those models. FAKE models: ``alpha`` is priced, ``beta`` is not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pool import RunSpec, run_pool
from pool.api import EXIT_OK
from pool.config.schema import Price
from pool.execute.budget import Budget
from tests.fake_pool import FakeOpenAIStarter, PoolWriter, two_option_items
from tests.fakes import ok

ITEMS = two_option_items(4)


@pytest.fixture
def fake_url(fake_openai: FakeOpenAIStarter) -> str:
    return fake_openai(lambda index, payload: ok("A"))


def test_the_warning_names_the_unpriced_models_only_with_a_cost_cap() -> None:
    priced = Price(input_per_million=1.0, output_per_million=2.0)
    budget = Budget({"alpha": priced, "judge": None, "beta": None}, max_cost=1.0)
    assert budget.unpriced() == ["beta", "judge"]
    warning = budget.unpriced_warning()
    assert warning is not None and "beta, judge" in warning and "--max-tokens-total" in warning
    assert Budget({"alpha": priced, "beta": None}, max_tokens_total=100).unpriced_warning() is None
    assert Budget({"alpha": priced}, max_cost=1.0).unpriced_warning() is None


def test_a_run_with_max_cost_warns_once_at_start_and_records_the_unpriced(
    tmp_path: Path, fake_url: str, write_pool: PoolWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in ITEMS), encoding="utf-8")
    pool = write_pool(
        f"""backends:
  fake: {{type: openai, base_url: "{fake_url}", max_concurrency: 1}}
models:
  - {{name: alpha, backend: fake, max_tokens: 8, price: {{input_per_million: 1, output_per_million: 2}}}}
  - {{name: beta, backend: fake, max_tokens: 8}}
""",
        name="pool.yaml",
    )
    result = run_pool(
        RunSpec(pool=pool, data=[data], out=tmp_path / "run", no_cache=True, no_routing=True, max_cost=100.0)
    )
    assert result.exit_code == EXIT_OK
    warnings = [line for line in capsys.readouterr().err.splitlines() if "counts only priced models" in line]
    assert len(warnings) == 1 and "beta" in warnings[0] and "alpha" not in warnings[0]
    assert result.summary["extra"]["budget"]["unpriced"] == ["beta"]
