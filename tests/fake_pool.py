"""A pool of FAKE models on one OpenAI-compatible fake server, a JSONL suite, and ``pool.run`` over them.

The scoring, judging and nightly tests all need the same few files: a suite of items, a pool whose
candidates and (disabled) judges all point at one fake server (the judging block given or the default
one), a ``pool.run`` in a subprocess with its own response cache, and the resulting scores by item.
One builder keeps those setups alike. The types of the ``write_pool`` and ``fake_openai`` fixtures
(tests/conftest.py) live here too, so a test can annotate them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

REPO = Path(__file__).resolve().parents[1]
JUDGE = "judgey"
# Neutral text a fake candidate adds to a free-text answer so that it passes the guard before the
# judge (eval.scorers.judged: 200 characters for reference and criteria answers); it names no topic,
# warning or forbidden phrase of any test gold.
PADDING = "以上内容为一般性健康科普说明，个体情况差异较大，具体方案请以医生面诊评估结果为准。" * 6


class PoolWriter(Protocol):
    """The ``write_pool`` fixture (tests/conftest.py): the dedented YAML text as a pool file in the test's tmp_path."""

    def __call__(self, text: str, name: str = "model_pool.yaml") -> Path: ...


class FakeOpenAIStarter(Protocol):
    """The ``fake_openai`` fixture (tests/conftest.py): start a FAKE OpenAI-compatible server, get its base URL."""

    def __call__(self, behave: Callable[[int, dict[str, Any]], Any] | None = None, **fields: Any) -> str: ...


def two_option_items(count: int, *, prefix: str = "q", width: int = 0) -> list[dict[str, Any]]:
    """``count`` single-choice exam items whose gold is A: answering "A" scores 1, anything else 0."""
    return [
        {
            "id": f"{prefix}{i:0{width}d}",
            "task": "mcq",
            "track": "exam",
            "gold_type": "single_choice",
            "question": f"第{i}题？",
            "options": {"A": "甲", "B": "乙"},
            "gold": "A",
        }
        for i in range(count)
    ]


def reference_items(count: int) -> list[dict[str, Any]]:
    """``count`` free-text capability items ``q1`` … ``qN``, each with a reference answer a judge grades against."""
    return [
        {
            "id": f"q{i}",
            "task": "qa",
            "track": "capability",
            "gold_type": "reference",
            "question": f"问题{i}？",
            "gold": f"参考答案{i}。",
        }
        for i in range(1, count + 1)
    ]


def write_jsonl(path: Path, records: Iterable[Mapping[str, Any]]) -> Path:
    """``records`` as a UTF-8 JSONL file (parent folders created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def write_fake_pool(
    path: Path,
    base_url: str,
    candidates: Sequence[tuple[str, int | None]] = (("cand", 16),),
    *,
    max_retries: int | None = None,
    judge: str | None = JUDGE,
) -> Path:
    """A pool file: backend ``fake`` at ``base_url`` (concurrency 2), the ``(name, max_tokens)`` candidates
    and, unless ``judge`` is None, a disabled pool model of that name serving as the judge."""
    lines = ["backends:", "  fake:", "    type: openai", f"    base_url: {base_url}", "    max_concurrency: 2"]
    if max_retries is not None:
        lines.append(f"    max_retries: {max_retries}")
    lines.append("models:")
    for name, max_tokens in candidates:
        lines += [f"  - name: {name}", "    backend: fake"] + ([f"    max_tokens: {max_tokens}"] if max_tokens else [])
    if judge is not None:
        lines += [f"  - name: {judge}", "    backend: fake", "    enabled: false", "judge:", f"  model: {judge}"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def judged_pool_lines(
    base_url: str, candidates: Sequence[str], judges: Sequence[str], *, backend: Sequence[str] = ()
) -> list[str]:
    """The head of a pool file whose judges are models of their own: backend ``fake`` at ``base_url`` with
    no retries (``backend``: more of its fields, as ``key: value``), the candidates, and each judge as a
    disabled pool model. The caller adds the judging block (``judge:`` or ``judges:``) and the rest."""
    return [
        "backends:",
        "  fake:",
        "    type: openai",
        f"    base_url: {base_url}",
        "    max_retries: 0",
        *(f"    {field}" for field in backend),
        "models:",
        *(f"  - {{name: {name}, backend: fake}}" for name in candidates),
        *(f"  - {{name: {name}, backend: fake, enabled: false}}" for name in judges),
    ]


def run_judged_pool(
    tmp_path: Path,
    pool_lines: Sequence[str],
    suite: Iterable[Mapping[str, Any]],
    *args: str,
    out: str = "run",
    returncodes: Sequence[int] = (0,),
    timeout: float = 180,
) -> Path:
    """``pool_lines`` as ``tmp_path/pool.yaml`` and ``suite`` as ``tmp_path/suite/items.jsonl``, then
    ``pool.run --pool … --data … --out tmp_path/OUT ARGS`` with the response cache ``tmp_path/cache``
    (a second run in the same ``tmp_path`` reads the first one's answers); the run folder. A return code
    outside ``returncodes`` fails the test with the run's stderr."""
    pool = tmp_path / "pool.yaml"
    pool.write_text("\n".join(pool_lines) + "\n", encoding="utf-8")
    data = write_jsonl(tmp_path / "suite" / "items.jsonl", suite)
    run_dir = tmp_path / out
    args = ("--pool", str(pool), "--data", str(data), "--out", str(run_dir), *args)
    result = pool_run_cli(*args, cache=tmp_path / "cache", timeout=timeout)
    assert result.returncode in returncodes, result.stderr
    return run_dir


def pool_run_cli(
    *args: str, cache: Path, env: Mapping[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess:
    """``python -m pool.run ARGS`` from the repository with its own response cache; output captured."""
    environment = {**os.environ, "MEDPOOL_CACHE_DIR": str(cache), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "pool.run", *args],
        check=False,
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def score_rows(run_dir: Path) -> list[dict[str, Any]]:
    """The rows of ``RUN_DIR/scores.jsonl``."""
    return [json.loads(line) for line in (run_dir / "scores.jsonl").read_text(encoding="utf-8").splitlines()]


def scores_by_item(run_dir: Path) -> dict[str, dict[str, Any]]:
    """``RUN_DIR/scores.jsonl`` keyed by the item id's last path segment."""
    return {row["item_id"].split("/")[-1]: row for row in score_rows(run_dir)}
