"""routing.nights.flips: answers that changed between two nights on unchanged questions (FAKE models).

Night 1: alpha and beta answer every item "A". Night 2, same items: alpha's server answers five
items "A。" (the same score: noise in the text, as batching makes it); pool.run compares it with
night 1 by itself. Night 3: one item's question is reworded and the rest come from night 2's
response cache. Flips count fresh answers to the same request of the same model only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pool import RunSpec, run_pool
from routing.nights.compare import compare_runs
from routing.nights.flips import answer_flips, flips_html
from tests.fake_pool import FakeOpenAIStarter, PoolWriter, two_option_items, write_jsonl
from tests.fakes import ok

N_ITEMS = 20
NOISY = range(5)  # alpha's items whose text changes on nights 2 and 3
REWORDED = N_ITEMS - 1


class Night:
    noisy = False


def behave(index: int, payload: dict[str, Any]) -> Any:
    text = json.dumps(payload.get("messages"), ensure_ascii=False)
    item = int(re.search(r"第(\d+)题", text).group(1))  # type: ignore[union-attr]
    return ok("A。" if Night.noisy and payload.get("model") == "alpha" and item in NOISY else "A")


def _counts(flips: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    return {m["model"]: (m["unchanged"], m["flipped"], m["flip_rate"], m["cached"]) for m in flips["models"]}


def test_flip_rate_counts_fresh_answers_to_unchanged_requests(
    tmp_path: Path, fake_openai: FakeOpenAIStarter, write_pool: PoolWriter
) -> None:
    Night.noisy = False
    url = fake_openai(behave)
    pool = write_pool(
        f"""
        backends:
          fake: {{type: openai, base_url: "{url}", max_concurrency: 4}}
        models:
          - {{name: alpha, backend: fake, max_tokens: 8}}
          - {{name: beta, backend: fake, max_tokens: 8}}
        """,
        name="pool.yaml",
    )
    items = two_option_items(N_ITEMS, width=2)
    same = write_jsonl(tmp_path / "items.jsonl", items)
    items[REWORDED]["question"] += "（改）"
    reworded = write_jsonl(tmp_path / "reworded.jsonl", items)
    root = tmp_path / "runs"

    def night(name: str, data: Path, cache: str) -> Path:
        assert (
            run_pool(RunSpec(pool=pool, data=[data], out=root / name, cache_dir=str(tmp_path / cache))).exit_code == 0
        )
        return root / name

    n1 = night("n1", same, "cache1")
    Night.noisy = True
    n2 = night("n2", same, "cache2")
    n3 = night("n3", reworded, "cache2")  # all but the reworded item from night 2's cache

    flips = json.loads((n2 / "compare.json").read_text(encoding="utf-8"))["flips"]  # written by the night itself
    assert flips["compared"] and flips["reason"] is None
    assert _counts(flips) == {"alpha": (N_ITEMS, len(NOISY), len(NOISY) / N_ITEMS, 0), "beta": (N_ITEMS, 0, 0, 0)}
    alpha = next(m for m in flips["models"] if m["model"] == "alpha")
    assert alpha["greedy"] and [e.rsplit("/", 1)[-1] for e in alpha["examples"]] == ["q00", "q01", "q02"]
    md = (n2 / "compare.md").read_text(encoding="utf-8")
    assert f"- alpha: {len(NOISY) / N_ITEMS:.1%} ({len(NOISY)}/{N_ITEMS})" in md and f"- beta: 0.0% (0/{N_ITEMS})" in md
    report = (n2 / "report.html").read_text(encoding="utf-8")
    assert "Answer flips on unchanged items" in report and 'class="compare-flips"' in report

    # the reworded item is another request; cached answers repeat a text by construction
    unchanged_fresh = compare_runs(n1, n3).to_json()["flips"]
    assert _counts(unchanged_fresh) == {"alpha": (0, 0, None, N_ITEMS - 1), "beta": (0, 0, None, N_ITEMS - 1)}
    assert _counts(answer_flips(n2, n3)) == {"alpha": (0, 0, None, N_ITEMS - 1), "beta": (0, 0, None, N_ITEMS - 1)}


def test_without_a_run_store_flips_are_not_measured_and_say_why(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    flips = answer_flips(tmp_path / "a", tmp_path / "a")
    assert not flips["compared"] and "run.sqlite" in flips["reason"] and flips["models"] == []
    assert "not measured" in flips_html({"flips": flips})


def test_model_names_are_escaped_in_the_report() -> None:
    entry = {"model": "<script>x</script>", "unchanged": 2, "flipped": 1, "flip_rate": 0.5, "cached": 0}
    html = flips_html({"flips": {"compared": True, "models": [{**entry, "greedy": False, "examples": ["<b>"]}]}})
    assert "<script>" not in html and "<b>" not in html and "&lt;script&gt;" in html and "sampled" in html
