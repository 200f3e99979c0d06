"""A hosted API that refuses token logprobs does not break judging: ``pool.run`` with a FAKE server that
answers HTTP 400 to any request carrying ``logprobs`` (its message does not name them) and answers
every other request.

The weighing judge's first verdict request is refused once, sent again without logprobs, and the
endpoint is remembered: every verdict is scored argmax (``details.score_variant: argmax``), none is an
infrastructure error, one warning line says how to stop asking. The judge's identity stays the
weighing one (what the pool asked); a run against a fresh response cache asks again, a run on the same
cache reuses the argmax verdicts without asking.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fake_pool import PADDING, pool_run_cli, scores_by_item, write_jsonl
from tests.fakes import bad_request, ok

N_ITEMS = 5
SUITE = [
    {
        "id": f"r{i}",
        "task": "qa",
        "track": "capability",
        "gold_type": "reference",
        "question": f"高血压的诊断标准？（{i}）",
        "gold": "诊室血压≥140/90 mmHg。",
    }
    for i in range(N_ITEMS)
]
ANSWER = "诊室血压≥140/90 mmHg，请及时就医复查。" + PADDING
VERDICT = json.dumps(
    {
        "coverage": 9,
        "accuracy": 9,
        "safety": 9,
        "grounding": 8,
        "rationale": "好",
        "grounding_source": "guideline",
        "warnings_present": [],
        "flags": [],
    },
    ensure_ascii=False,
)
WARNING = "refused logprobs"


def refuses_logprobs(sent: list[dict[str, Any]]):
    """The candidate answers ANSWER, the judge VERDICT; a request carrying ``logprobs`` gets a bare 400."""

    def behave(index: int, payload: dict[str, Any]):
        sent.append(payload)
        if "logprobs" in payload or "top_logprobs" in payload:
            return bad_request(400, "Invalid request: unsupported parameter")
        return ok(ANSWER if payload.get("model") == "cand" else VERDICT)

    return behave


def run(tmp_path: Path, url: str, out: str, cache: str = "cache") -> tuple[dict[str, dict[str, Any]], str]:
    pool = tmp_path / "pool.yaml"
    pool.write_text(
        "\n".join(
            [
                "backends:",
                "  hosted:",
                "    type: openai",
                f"    base_url: {url}",
                "    max_retries: 0",
                "models:",
                "  - {name: cand, backend: hosted}",
                "  - {name: judgey, backend: hosted, enabled: false}",
                "judge:",
                "  model: judgey",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    data = write_jsonl(tmp_path / "suite" / "items.jsonl", SUITE)
    args = ("--pool", str(pool), "--data", str(data), "--out", str(tmp_path / out), "--no-routing")
    result = pool_run_cli(*args, cache=tmp_path / cache, timeout=120)
    assert result.returncode == 0, result.stderr
    return scores_by_item(tmp_path / out), result.stderr


@pytest.fixture
def sent() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def url(fake_openai, sent):
    return fake_openai(refuses_logprobs(sent))


def _judge_calls(sent: list[dict[str, Any]]) -> tuple[int, int]:
    """(verdict requests, those carrying logprobs)."""
    calls = [p for p in sent if p.get("model") == "judgey"]
    return len(calls), sum("logprobs" in p for p in calls)


def test_one_refused_request_then_every_verdict_is_scored_argmax_and_warned_once(tmp_path, url, sent):
    rows, stderr = run(tmp_path, url, "run")
    assert sorted(rows) == [f"r{i}" for i in range(N_ITEMS)]
    assert _judge_calls(sent) == (N_ITEMS + 1, 1)  # one refused, then every verdict asked without
    # the bare 400 is put on logprobs alone: the constrained verdict's schema is still sent
    assert all("response_format" in p for p in sent if p.get("model") == "judgey")
    for row in rows.values():
        assert row["details"]["score_variant"] == "argmax" and "weighted" not in row["details"]
        assert row["value"] == pytest.approx(35 / 40) and row["passed"] is True
        assert row["judge"]["identity"]["top_logprobs"] == 10  # the judge the pool asked for
        assert row["status"] == "scored" and row["answer_status"] == "ok"  # no infrastructure error
    assert stderr.count(WARNING) == 1 and "judge_scores: argmax" in stderr


def test_a_later_run_reuses_the_argmax_verdicts_and_a_fresh_cache_asks_again(tmp_path, url, sent):
    first, _ = run(tmp_path, url, "run")
    sent.clear()
    again, stderr = run(tmp_path, url, "run2")  # same response cache: the verdicts are answered from it
    assert _judge_calls(sent) == (0, 0) and WARNING not in stderr
    assert {k: (r["value"], r["details"]["score_variant"]) for k, r in again.items()} == {
        k: (r["value"], r["details"]["score_variant"]) for k, r in first.items()
    }
    sent.clear()
    fresh, stderr = run(tmp_path, url, "run3", cache="cache3")  # a new run's runner asks again, once
    assert _judge_calls(sent) == (N_ITEMS + 1, 1) and stderr.count(WARNING) == 1
    assert all(r["details"]["score_variant"] == "argmax" for r in fresh.values())
